#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "concord/view/run_reader.h"

namespace httplib {
class Server;
}

namespace concord::view {

// Where the board's page (assets/board) and uPlot's files (npm, third_party/npm) are: beside the
// program's build folder, else in the source tree it was built from. Throws std::runtime_error
// saying what to run when either is missing.
struct BoardAssets {
  std::filesystem::path page;   // index.html, board.js, board.css
  std::filesystem::path uplot;  // uPlot.iife.min.js, uPlot.min.css
  static BoardAssets find();
};

// `concord board`'s HTTP server (cpp-httplib). It reads only what runs write (metrics.csv,
// config.toml) under the roots it was given, and serves:
//
//   GET /                       the page, its script and style; /uplot/...: uPlot's files
//   GET /api/runs               {"runs": [{id, name, root, group, columns, rows}], "groups": [...]}
//   GET /api/metrics?run=ID1&run=ID2...&from=N1,N2...&generation=G1,G2...
//                               {"runs": [{id, generation, from, columns, rows: [[step, wall, ...]]}]}:
//                               run i's rows from Ni on, or all of them when Gi is not the table's
//                               generation (the file was rewritten); empty cells are null. The
//                               numbers are lists, not repeated keys: cpp-httplib drops a repeated
//                               key=value pair, so two runs' equal "from=N" would become one.
//   GET /api/config?run=ID      the run's config.toml
//   GET /api/video?run=ID       {"file": "/files/ROOT/PATH"} of the run's newest video (*.mp4 or
//                               *.gif in the run directory or its videos/), or {"file": null}
//   GET /files/ROOT/PATH        a file under run root number ROOT (served_file.h's checks)
//
// A run is re-read only when its file grew (view::MetricsTable), so polling a live run is cheap.
class BoardServer {
 public:
  BoardServer(std::vector<std::filesystem::path> roots, BoardAssets assets);
  ~BoardServer();
  BoardServer(const BoardServer&) = delete;
  BoardServer& operator=(const BoardServer&) = delete;

  // Binds `host`:`port` (0: a free port) and returns the port. Throws std::runtime_error naming
  // the address when it cannot.
  int bind(const std::string& host, int port);
  // Serves until stop(); call after bind().
  void serve();
  // From any thread, before or during serve(): serve() returns (or does not start serving).
  void stop();

 private:
  struct Run {
    RunInfo info;
    std::unique_ptr<MetricsTable> table;
  };
  void register_routes();
  // Rescans the roots (new runs appear, removed ones go); under mutex_.
  void rescan_locked();
  Run* find_locked(const std::string& id);

  std::vector<std::filesystem::path> roots_;
  BoardAssets assets_;
  std::unique_ptr<httplib::Server> server_;
  std::atomic<bool> serving_{false}, stopping_{false}, returned_{false};
  std::mutex mutex_;
  std::map<std::string, Run> runs_;  // by id
  std::vector<RunGroup> groups_;
  std::vector<std::string> order_;  // ids in listing order (what groups_' members index)
};

}  // namespace concord::view
