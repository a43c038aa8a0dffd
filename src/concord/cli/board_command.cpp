#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "concord/cli/signal_stop.h"
#include "concord/cli/view_commands.h"
#include "concord/view/board_server.h"
#include "concord/view/run_reader.h"

namespace concord::cli {

namespace {

struct BoardOptions {
  std::vector<std::string> roots{"runs"};
  std::string host = "127.0.0.1";
  int port = 6006;
};

void board(const BoardOptions& options) {
  std::vector<std::filesystem::path> roots;
  for (const std::string& root : options.roots) {
    std::error_code error;
    if (!std::filesystem::is_directory(root, error)) {
      throw std::runtime_error("no such run root '" + root + "' (a folder of runs, such as runs/; train one first)");
    }
    roots.emplace_back(root);
  }
  if (options.port < 0 || options.port > 65535) {
    throw std::runtime_error("--port " + std::to_string(options.port) + " is not a port (0 to 65535; 0 picks one)");
  }
  const std::size_t run_count = view::list_runs(roots).size();
  view::BoardServer server(roots, view::BoardAssets::find());
  SignalStop stop;
  const int port = server.bind(options.host, options.port);
  std::string shown_roots;
  for (const std::string& root : options.roots) shown_roots += (shown_roots.empty() ? "" : ", ") + root;
  std::printf("board: %zu %s under %s at http://%s:%d/ (Ctrl-C stops it)\n", run_count, run_count == 1 ? "run" : "runs",
              shown_roots.c_str(), options.host.c_str(), port);
  std::fflush(stdout);
  std::atomic<bool> served{false};
  std::thread serving([&] {
    server.serve();
    served = true;
  });
  while (!stop.requested() && !served) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server.stop();
  // A worker may sit in a keep-alive wait for up to a second; the board has nothing to save, so
  // it does not wait for one longer than that.
  for (int i = 0; i < 16 && !served; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::printf("board: stopped\n");
  std::fflush(stdout);
  if (!served) std::_Exit(0);
  serving.join();
}

}  // namespace

void add_board_command(CLI::App& app) {
  auto options = std::make_shared<BoardOptions>();
  CLI::App* command = app.add_subcommand(
      "board", "Serve a local web page of runs' learning curves, refreshed while they train (Ctrl-C stops it)");
  command->add_option("roots", options->roots, "Folders of runs, or run directories")->capture_default_str();
  command->add_option("--port", options->port, "Port to listen on (0: any free port)")->capture_default_str();
  command
      ->add_option("--host", options->host,
                   "Address to listen on; the default serves this machine only (0.0.0.0: every network)")
      ->capture_default_str();
  command->callback([options] { board(*options); });
}

}  // namespace concord::cli
