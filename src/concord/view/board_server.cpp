#include "concord/view/board_server.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "concord/view/served_file.h"

namespace concord::view {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Debian's cpp-httplib compresses application/json (exactly that type) with Brotli at its
// slowest quality when the browser accepts it: 18 s for the 8 MB of 20 runs of 1M steps, against
// 0.13 s sent as is. On loopback nothing is gained by compressing, and the charset parameter
// keeps httplib from it.
constexpr const char* kJson = "application/json; charset=utf-8";

fs::path program_directory() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : exe.parent_path();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const char* content_type(const fs::path& path) {
  const std::string extension = path.extension().string();
  if (extension == ".html") return "text/html; charset=utf-8";
  if (extension == ".js" || extension == ".mjs") return "text/javascript; charset=utf-8";
  if (extension == ".css") return "text/css; charset=utf-8";
  if (extension == ".json") return kJson;
  if (extension == ".csv" || extension == ".txt" || extension == ".toml") return "text/plain; charset=utf-8";
  if (extension == ".png") return "image/png";
  if (extension == ".svg") return "image/svg+xml";
  if (extension == ".gif") return "image/gif";
  if (extension == ".mp4") return "video/mp4";
  return "application/octet-stream";
}

// The run's newest video (`concord eval RUN --video RUN/videos/NAME.mp4|gif`, or one in the run
// directory itself) as a '/'-separated path under its run root, or "" for none. Links are not
// followed, as list_runs does not follow them.
std::string latest_video(const RunInfo& run) {
  std::string newest;
  fs::file_time_type newest_time{};
  for (const std::string folder : {"", "videos"}) {
    std::error_code error;
    const fs::path directory = folder.empty() ? run.directory : run.directory / folder;
    if (!fs::is_directory(fs::symlink_status(directory, error))) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
      const std::string extension = entry.path().extension().string();
      if ((extension != ".mp4" && extension != ".gif") || !entry.is_regular_file(error) || entry.is_symlink(error)) {
        continue;
      }
      const fs::file_time_type time = entry.last_write_time(error);
      if (error || (!newest.empty() && time <= newest_time)) continue;
      newest_time = time;
      const fs::path inside = folder.empty() ? entry.path().filename() : fs::path(folder) / entry.path().filename();
      newest = (run.relative == "." ? inside : fs::path(run.relative) / inside).generic_string();
    }
  }
  return newest;
}

// "1,2,3" as {"1", "2", "3"}; "" as none.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (!text.empty() && start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

void send_file(httplib::Response& response, const fs::path& path) {
  response.set_content(read_text(path), content_type(path));
  response.set_header("Cache-Control", "no-cache");
}

void not_found(httplib::Response& response, const std::string& what) {
  response.status = 404;
  response.set_content(json{{"error", what}}.dump(), kJson);
}

}  // namespace

BoardAssets BoardAssets::find() {
  std::vector<fs::path> bases;
  const fs::path program = program_directory();
  if (!program.empty()) bases.push_back(program.parent_path());  // build/concord: the tree above build/
#ifdef CONCORD_VIEW_SOURCE_DIR
  bases.emplace_back(CONCORD_VIEW_SOURCE_DIR);
#endif
  BoardAssets assets;
  std::error_code error;
  for (const fs::path& base : bases) {
    if (assets.page.empty() && fs::is_regular_file(base / "assets/board/index.html", error)) {
      assets.page = base / "assets/board";
    }
    const fs::path uplot = base / "third_party/npm/node_modules/uplot/dist";
    if (assets.uplot.empty() && fs::is_regular_file(uplot / "uPlot.iife.min.js", error)) assets.uplot = uplot;
  }
  if (assets.page.empty()) {
    throw std::runtime_error(
        "the board's page (assets/board/index.html) is not beside this program nor in the "
        "source tree it was built from");
  }
  if (assets.uplot.empty()) {
    throw std::runtime_error(
        "uPlot, the board's chart library, is not installed: run scripts/setup.sh (it puts the "
        "npm package uplot into third_party/npm)");
  }
  return assets;
}

BoardServer::BoardServer(std::vector<fs::path> roots, BoardAssets assets)
    : roots_(std::move(roots)), assets_(std::move(assets)), server_(std::make_unique<httplib::Server>()) {
  // A poll every second keeps a connection busy; a short keep-alive lets stop() end workers soon.
  server_->set_keep_alive_timeout(1);
  server_->set_read_timeout(1);
  // A reply's header and body go out as separate writes: with Nagle's algorithm the body waited
  // for the delayed ACK of the header, 40 ms a request.
  server_->set_tcp_nodelay(true);
  register_routes();
}

BoardServer::~BoardServer() = default;

int BoardServer::bind(const std::string& host, int port) {
  const int bound = port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) +
                             " (in use, or not an address of this machine; --port 0 picks a free port)");
  }
  return bound;
}

void BoardServer::serve() {
  serving_ = true;
  if (!stopping_) server_->listen_after_bind();
  returned_ = true;
}

void BoardServer::stop() {
  // httplib's stop() does nothing before the listening loop has started, which would then run on:
  // a serve() that has begun is waited for until it listens (or returns), one yet to begin returns.
  stopping_ = true;
  while (serving_ && !returned_ && !server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->stop();
}

void BoardServer::rescan_locked() {
  const std::vector<RunInfo> listed = list_runs(roots_);
  std::vector<std::string> order;
  std::map<std::string, Run> runs;
  for (const RunInfo& info : listed) {
    const std::string id = info.id();
    order.push_back(id);
    auto old = runs_.find(id);
    if (old != runs_.end()) {
      runs.emplace(id, std::move(old->second));
    } else {
      runs.emplace(id, Run{info, std::make_unique<MetricsTable>(info.directory / "metrics.csv")});
    }
  }
  runs_ = std::move(runs);
  if (order != order_) groups_ = group_runs(listed);  // config.toml is read again only for a new set of runs
  order_ = std::move(order);
}

BoardServer::Run* BoardServer::find_locked(const std::string& id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) {
    rescan_locked();
    it = runs_.find(id);
  }
  return it == runs_.end() ? nullptr : &it->second;
}

void BoardServer::register_routes() {
  httplib::Server& server = *server_;
  const auto page = [this](const std::string& name) {
    return [this, name](const httplib::Request&, httplib::Response& response) {
      send_file(response, assets_.page / name);
    };
  };
  server.Get("/", page("index.html"));
  server.Get("/board.js", page("board.js"));
  server.Get("/board.css", page("board.css"));
  for (const std::string name : {"uPlot.iife.min.js", "uPlot.min.css"}) {
    server.Get("/uplot/" + name, [this, name](const httplib::Request&, httplib::Response& response) {
      send_file(response, assets_.uplot / name);
    });
  }

  server.Get("/api/runs", [this](const httplib::Request&, httplib::Response& response) {
    std::lock_guard<std::mutex> lock(mutex_);
    rescan_locked();
    json runs = json::array(), groups = json::array();
    std::vector<std::string> group_of(order_.size());
    for (const RunGroup& group : groups_) {
      json members = json::array();
      for (const std::size_t m : group.members) {
        members.push_back(order_[m]);
        group_of[m] = group.label;
      }
      groups.push_back({{"label", group.label}, {"members", members}, {"seeds", group.seeds}});
    }
    for (std::size_t i = 0; i < order_.size(); ++i) {
      Run& run = runs_.at(order_[i]);
      run.table->refresh();
      const fs::path name = run.info.relative == "." ? run.info.directory.filename() : fs::path(run.info.relative);
      runs.push_back({{"id", order_[i]},
                      {"name", name.generic_string()},
                      {"root", roots_[run.info.root].string()},
                      {"group", group_of[i]},
                      {"columns", run.table->columns()},
                      {"rows", run.table->rows()},
                      {"generation", run.table->generation()}});
    }
    response.set_content(json{{"runs", runs}, {"groups", groups}}.dump(), kJson);
  });

  server.Get("/api/metrics", [this](const httplib::Request& request, httplib::Response& response) {
    const std::size_t count = request.get_param_value_count("run");
    const std::vector<std::string> froms = split_list(request.get_param_value("from"));
    const std::vector<std::string> generations = split_list(request.get_param_value("generation"));
    json out = json::array();
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < count; ++i) {
      const std::string id = request.get_param_value("run", i);
      Run* run = find_locked(id);
      if (run == nullptr) {
        out.push_back({{"id", id}, {"error", "no such run"}});
        continue;
      }
      MetricsTable& table = *run->table;
      table.refresh();
      std::size_t from = 0;
      uint64_t generation = ~uint64_t{0};
      try {
        if (i < froms.size()) from = std::stoull(froms[i]);
        if (i < generations.size()) generation = std::stoull(generations[i]);
      } catch (const std::exception&) {
        from = 0;
      }
      if (generation != table.generation() || from > table.rows()) from = 0;
      json rows = json::array();
      for (std::size_t r = from; r < table.rows(); ++r) {
        json row = json::array();
        for (std::size_t c = 0; c < table.columns().size(); ++c) {
          const double v = table.column(c)[r];
          if (std::isfinite(v)) {
            row.push_back(v);
          } else {
            row.push_back(nullptr);
          }
        }
        rows.push_back(std::move(row));
      }
      out.push_back({{"id", id},
                     {"generation", table.generation()},
                     {"from", from},
                     {"columns", table.columns()},
                     {"rows", std::move(rows)}});
    }
    response.set_content(json{{"runs", out}}.dump(), kJson);
  });

  server.Get("/api/config", [this](const httplib::Request& request, httplib::Response& response) {
    std::lock_guard<std::mutex> lock(mutex_);
    Run* run = find_locked(request.get_param_value("run"));
    if (run == nullptr) return not_found(response, "no such run");
    send_file(response, run->info.directory / "config.toml");
  });

  server.Get("/api/video", [this](const httplib::Request& request, httplib::Response& response) {
    std::lock_guard<std::mutex> lock(mutex_);
    Run* run = find_locked(request.get_param_value("run"));
    if (run == nullptr) return not_found(response, "no such run");
    const std::string video = latest_video(run->info);
    response.set_content(
        json{{"file", video.empty() ? json(nullptr) : json("/files/" + std::to_string(run->info.root) + "/" + video)}}
            .dump(),
        kJson);
  });

  // /files/<root>/<path>: the path is checked by file_under_root, never joined unchecked.
  server.Get(R"(/files/(\d+)/(.*))", [this](const httplib::Request& request, httplib::Response& response) {
    std::size_t root = 0;
    try {
      root = std::stoul(request.matches[1].str());
    } catch (const std::exception&) {
      return not_found(response, "no such run root");
    }
    if (root >= roots_.size()) return not_found(response, "no such run root");
    const std::optional<fs::path> file = file_under_root(roots_[root], request.matches[2].str());
    if (!file) return not_found(response, "no such file under the run root");
    send_file(response, *file);
  });

  server.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
    std::string what = "internal error";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    response.status = 500;
    response.set_content(json{{"error", what}}.dump(), kJson);
  });
}

}  // namespace concord::view
