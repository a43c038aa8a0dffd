#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "concord/view/run_reader.h"

namespace concord::view {

// `concord plot`'s picture, drawn with Cairo: one panel per metric, stacked, each with its curves
// (one per run, or a group's mean with its spread as a band), a legend, and axes with ticks.

struct PlotLine {
  std::string label;
  Series points;
  // A band around the line (a group's min and max), the length of points.x; empty for none.
  std::vector<double> band_low, band_high;
};

struct PlotPanel {
  std::string title;  // the metric
  std::string x_label, y_label;
  std::vector<PlotLine> lines;
};

// Writes the panels as a `width` x `height` picture, PNG or SVG by the file's extension (.png,
// .svg). Throws std::invalid_argument for another extension or a size below 200 x 150 a panel,
// std::runtime_error naming the file when it cannot be written.
void write_plot(const std::vector<PlotPanel>& panels, const std::filesystem::path& file, int width, int height);

// Round tick positions covering [low, high]: steps of 1, 2 or 5 times a power of ten, about
// `target` of them.
std::vector<double> axis_ticks(double low, double high, int target);

// A tick's text: "250k", "1.5M", "0.25", "-3".
std::string tick_label(double value);

}  // namespace concord::view
