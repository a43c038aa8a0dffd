#include "concord/view/board_server.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "concord/view/served_file.h"
#include "core/temp_dir.h"

namespace concord::view {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class BoardServerTest : public test::TempDirTest {
 protected:
  BoardServerTest() : TempDirTest("concord_board_server_") {}

  void SetUp() override {
    TempDirTest::SetUp();
    run_ = dir_ / "runs" / "CartPole-v1__train__1__t";
    fs::create_directories(run_);
    write_bytes(run_ / "config.toml", "[run]\nseed = 1\n");
    write_bytes(run_ / "metrics.csv", "step,wall_time,charts/episodic_return\n100,10,\n200,11,20\n");
    write_bytes(dir_ / "secret.txt", "outside the root");
    fs::create_directories(dir_ / "page");
    write_bytes(dir_ / "page" / "index.html", "<html>board</html>");
    write_bytes(dir_ / "page" / "uPlot.iife.min.js", "var uPlot;");
    server_ =
        std::make_unique<BoardServer>(std::vector<fs::path>{dir_ / "runs"}, BoardAssets{dir_ / "page", dir_ / "page"});
    port_ = server_->bind("127.0.0.1", 0);
    thread_ = std::thread([this] { server_->serve(); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
    TempDirTest::TearDown();
  }
  httplib::Result get(const std::string& path) {
    httplib::Client client("127.0.0.1", port_);
    return client.Get(path.c_str());
  }

  fs::path run_;
  std::unique_ptr<BoardServer> server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(BoardServerTest, ListsRunsAndServesOnlyNewRows) {
  auto listing = get("/api/runs");
  ASSERT_TRUE(listing);
  ASSERT_EQ(listing->status, 200);
  const json runs = json::parse(listing->body)["runs"];
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["id"], "0/CartPole-v1__train__1__t");
  EXPECT_EQ(runs[0]["rows"], 2);
  EXPECT_EQ(runs[0]["columns"][2], "charts/episodic_return");

  const std::string id = "run=0%2FCartPole-v1__train__1__t";
  json reply = json::parse(get("/api/metrics?" + id + "&from=0&generation=0")->body)["runs"][0];
  EXPECT_EQ(reply["from"], 0);
  EXPECT_EQ(reply["rows"], json::parse("[[100, 10, null], [200, 11, 20]]"));

  {
    std::ofstream out(run_ / "metrics.csv", std::ios::app);
    out << "300,12,30\n";
  }
  reply = json::parse(get("/api/metrics?" + id + "&from=2&generation=0")->body)["runs"][0];
  EXPECT_EQ(reply["from"], 2);
  EXPECT_EQ(reply["rows"], json::parse("[[300, 12, 30]]"));
  // A stale generation (the page held rows of a file since rewritten) gets every row.
  reply = json::parse(get("/api/metrics?" + id + "&from=3&generation=7")->body)["runs"][0];
  EXPECT_EQ(reply["from"], 0);
  EXPECT_EQ(reply["rows"].size(), 3u);

  // Two runs with as many rows: each keeps its own "from" (cpp-httplib merges a repeated key=value).
  const fs::path twin = dir_ / "runs" / "CartPole-v1__train__2__t";
  fs::create_directories(twin);
  write_bytes(twin / "config.toml", "[run]\nseed = 2\n");
  write_bytes(twin / "metrics.csv", "step,wall_time,charts/episodic_return\n100,10,\n200,11,20\n300,12,30\n");
  const json both = json::parse(
      get("/api/metrics?" + id + "&run=0%2FCartPole-v1__train__2__t&from=3,3&generation=0,0")->body)["runs"];
  ASSERT_EQ(both.size(), 2u);
  for (const json& run : both) {
    EXPECT_EQ(run["from"], 3) << run["id"];
    EXPECT_EQ(run["rows"].size(), 0u) << run["id"];
  }

  // Sent as is to a browser that accepts compression (Brotli took 18 s for 8 MB of rows).
  httplib::Client client("127.0.0.1", port_);
  const auto compressible = client.Get(("/api/metrics?" + id).c_str(), {{"Accept-Encoding", "gzip, deflate, br"}});
  ASSERT_TRUE(compressible);
  EXPECT_EQ(compressible->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(json::parse(compressible->body)["runs"][0]["rows"].size(), 3u);

  EXPECT_EQ(get("/api/config?" + id)->body, "[run]\nseed = 1\n");
  EXPECT_EQ(get("/api/config?run=0/nope")->status, 404);
  EXPECT_EQ(get("/")->body, "<html>board</html>");
}

TEST_F(BoardServerTest, ServesFilesUnderTheRootOnly) {
  EXPECT_EQ(get("/files/0/CartPole-v1__train__1__t/config.toml")->status, 200);
  fs::create_symlink(dir_ / "secret.txt", run_ / "link.txt");
  for (const std::string path :
       {"/files/0/../secret.txt", "/files/0/CartPole-v1__train__1__t/../../secret.txt", "/files/0/%2e%2e/secret.txt",
        "/files/0//etc/passwd", "/files/0/%2Fetc%2Fpasswd", "/files/1/x", "/files/0/CartPole-v1__train__1__t/link.txt",
        "/files/0/CartPole-v1__train__1__t"}) {
    const auto result = get(path);
    ASSERT_TRUE(result) << path;
    EXPECT_EQ(result->status, 404) << path;
    EXPECT_EQ(result->body.find("outside the root"), std::string::npos) << path;
  }
}

TEST_F(BoardServerTest, NamesTheRunsNewestVideo) {
  const std::string id = "run=0%2FCartPole-v1__train__1__t";
  EXPECT_EQ(get("/api/video?" + id)->body, R"({"file":null})");
  EXPECT_EQ(get("/api/video?run=0/nope")->status, 404);
  fs::create_directories(run_ / "videos");
  write_bytes(run_ / "episode.gif", "GIF89a");
  write_bytes(run_ / "videos" / "later.mp4", "mp4");
  write_bytes(run_ / "videos" / "notes.txt", "not a video");
  fs::last_write_time(run_ / "episode.gif", fs::file_time_type::clock::now() - std::chrono::hours(1));
  const std::string file = json::parse(get("/api/video?" + id)->body)["file"];
  EXPECT_EQ(file, "/files/0/CartPole-v1__train__1__t/videos/later.mp4");
  const auto served = get(file);
  EXPECT_EQ(served->body, "mp4");
  EXPECT_EQ(served->get_header_value("Content-Type"), "video/mp4");
  // A link to a video outside the run is not offered.
  fs::remove(run_ / "videos" / "later.mp4");
  write_bytes(dir_ / "outside.mp4", "outside the root");
  fs::create_symlink(dir_ / "outside.mp4", run_ / "videos" / "linked.mp4");
  EXPECT_EQ(json::parse(get("/api/video?" + id)->body)["file"], "/files/0/CartPole-v1__train__1__t/episode.gif");
}

TEST_F(BoardServerTest, FileUnderRootRefusesEveryWayOut) {
  const fs::path root = dir_ / "runs";
  EXPECT_TRUE(file_under_root(root, "CartPole-v1__train__1__t/metrics.csv"));
  EXPECT_TRUE(file_under_root(root, "./CartPole-v1__train__1__t/metrics.csv"));
  EXPECT_FALSE(file_under_root(root, ""));
  EXPECT_FALSE(file_under_root(root, "../secret.txt"));
  EXPECT_FALSE(file_under_root(root, "CartPole-v1__train__1__t/.."));
  EXPECT_FALSE(file_under_root(root, (dir_ / "secret.txt").string()));
  EXPECT_FALSE(file_under_root(root, "CartPole-v1__train__1__t\\..\\..\\secret.txt"));
  EXPECT_FALSE(file_under_root(root, "missing.txt"));
  EXPECT_FALSE(file_under_root(root, "CartPole-v1__train__1__t"));  // a directory
  fs::create_directory_symlink(dir_, root / "up");
  EXPECT_FALSE(file_under_root(root, "up/secret.txt"));
  fs::create_symlink(root / "CartPole-v1__train__1__t" / "config.toml", root / "inside.toml");
  EXPECT_TRUE(file_under_root(root, "inside.toml"));  // a link that stays inside is fine
}

}  // namespace
}  // namespace concord::view
