#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "concord/cli/view_commands.h"
#include "concord/core/did_you_mean.h"
#include "concord/view/plot.h"
#include "concord/view/run_reader.h"

namespace concord::cli {

namespace {

struct PlotOptions {
  std::vector<std::string> runs;
  std::string output;
  std::vector<std::string> metrics{"charts/episodic_return"};
  std::string x = "steps";
  bool group = false;
  int width = 960;
  int height = 0;  // 0: 540 for one metric, 320 a metric for several
};

// What the legend calls a run: its directory's name.
std::string run_label(const view::RunInfo& run) {
  const std::filesystem::path name = run.directory.lexically_normal().filename();
  return name.empty() ? run.directory.lexically_normal().parent_path().filename().string() : name.string();
}

void plot(const PlotOptions& options) {
  const std::filesystem::path output(options.output);
  if (output.extension() != ".png" && output.extension() != ".svg") {
    throw std::runtime_error("cannot write '" + options.output + "': the picture's name must end in .png or .svg");
  }
  std::vector<std::filesystem::path> roots(options.runs.begin(), options.runs.end());
  const std::vector<view::RunInfo> runs = view::list_runs(roots);
  if (runs.empty()) {
    throw std::runtime_error("no run under " + options.runs.front() +
                             (options.runs.size() > 1 ? " and the others" : "") +
                             " (a run directory holds metrics.csv and config.toml)");
  }
  std::vector<view::MetricsTable> tables;
  std::set<std::string> known;
  for (const view::RunInfo& run : runs) {
    tables.emplace_back(run.directory / "metrics.csv");
    tables.back().refresh();
    for (std::size_t c = 2; c < tables.back().columns().size(); ++c) known.insert(tables.back().columns()[c]);
  }
  const view::XAxis x_axis = options.x == "time" ? view::XAxis::kWallTime : view::XAxis::kSteps;
  std::vector<view::PlotPanel> panels;
  for (const std::string& metric : options.metrics) {
    if (known.count(metric) == 0) {
      const std::vector<std::string> names(known.begin(), known.end());
      const std::string hint = core::did_you_mean(metric, names);
      throw std::runtime_error("no metric '" + metric + "' in " +
                               (runs.size() == 1 ? "run " + runs.front().directory.string() : "these runs") +
                               (hint.empty() ? " (see the header of metrics.csv)" : hint));
    }
    view::PlotPanel panel{metric, x_axis == view::XAxis::kSteps ? "env steps" : "wall time (s)", metric, {}};
    if (options.group) {
      for (const view::RunGroup& group : view::group_runs(runs)) {
        std::vector<view::Series> members;
        for (const std::size_t m : group.members) members.push_back(view::metric_series(tables[m], metric, x_axis));
        const view::Aggregate summary = view::aggregate(members);
        const std::string seeds = std::to_string(summary.series) + (summary.series == 1 ? " seed" : " seeds");
        panel.lines.push_back(
            {group.label + " (" + seeds + ": mean, min-max)", {summary.x, summary.mean}, summary.min, summary.max});
      }
    } else {
      for (std::size_t r = 0; r < runs.size(); ++r) {
        panel.lines.push_back({run_label(runs[r]), view::metric_series(tables[r], metric, x_axis), {}, {}});
      }
    }
    panels.push_back(std::move(panel));
  }
  const int count = static_cast<int>(panels.size());
  const int height = options.height > 0 ? options.height : (count == 1 ? 540 : 320 * count);
  view::write_plot(panels, output, options.width, height);
  std::printf("wrote %s (%d x %d; %zu %s, %d %s)\n", options.output.c_str(), options.width, height, runs.size(),
              runs.size() == 1 ? "run" : "runs", count, count == 1 ? "metric" : "metrics");
}

}  // namespace

void add_plot_command(CLI::App& app) {
  auto options = std::make_shared<PlotOptions>();
  CLI::App* command = app.add_subcommand(
      "plot", "Draw runs' learning curves into a PNG or SVG picture (episodic return against env steps by default)");
  command->add_option("runs", options->runs, "Run directories, or folders holding runs (runs/)")->required();
  command->add_option("-o,--output", options->output, "The picture: FILE.png or FILE.svg")->required();
  command->add_option("--metric", options->metrics, "A column of metrics.csv, one panel each (repeatable)")
      ->capture_default_str()
      ->allow_extra_args(false);  // one name per --metric: `--metric a RUN` leaves RUN a run
  command->add_option("--x", options->x, "The horizontal axis: steps (env steps) or time (wall seconds)")
      ->check(CLI::IsMember({"steps", "time"}))
      ->capture_default_str();
  command->add_flag(
      "--group", options->group,
      "One curve per config: the seeds' mean, their min and max as a band (runs that differ only by seed)");
  command->add_option("--width", options->width, "Picture width in pixels")->capture_default_str();
  command->add_option("--height", options->height, "Picture height (default: 540, or 320 a metric for several)");
  command->callback([options] { plot(*options); });
}

}  // namespace concord::cli
