#include "concord/view/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>

#include <cairo-svg.h>
#include <cairo.h>

namespace concord::view {

namespace {

struct Colour {
  double r, g, b;
};
// Tableau's ten categorical colours (matplotlib's default cycle).
constexpr Colour kPalette[] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157}, {0.580, 0.404, 0.741},
    {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498}, {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812}};

struct Range {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  // A range with room: an empty one becomes [0, 1], a single value a unit around it.
  void settle() {
    if (low > high) low = 0, high = 1;
    if (low == high) {
      const double pad = low == 0 ? 1 : std::abs(low) * 0.1;
      low -= pad, high += pad;
    }
  }
};

void draw_text(cairo_t* cr, const std::string& text, double x, double y, double align_x, double align_y) {
  cairo_text_extents_t extents;
  cairo_text_extents(cr, text.c_str(), &extents);
  cairo_move_to(cr, x - extents.x_bearing - align_x * extents.width, y - extents.y_bearing - align_y * extents.height);
  cairo_show_text(cr, text.c_str());
}

void draw_panel(cairo_t* cr, const PlotPanel& panel, double left, double top, double width, double height) {
  constexpr double kMarginLeft = 68, kMarginRight = 16, kMarginTop = 28, kMarginBottom = 44;
  const double x0 = left + kMarginLeft, x1 = left + width - kMarginRight;
  const double y0 = top + kMarginTop, y1 = top + height - kMarginBottom;

  Range xr, yr;
  for (const PlotLine& line : panel.lines) {
    for (std::size_t i = 0; i < line.points.x.size(); ++i) {
      xr.add(line.points.x[i]);
      yr.add(line.points.y[i]);
      if (i < line.band_low.size()) yr.add(line.band_low[i]);
      if (i < line.band_high.size()) yr.add(line.band_high[i]);
    }
  }
  xr.settle();
  yr.settle();
  const std::vector<double> xticks = axis_ticks(xr.low, xr.high, 6);
  const std::vector<double> yticks = axis_ticks(yr.low, yr.high, 5);
  // The axes run from tick to tick when the ticks cover the data, so the curve never touches a frame.
  if (!yticks.empty()) yr.low = std::min(yr.low, yticks.front()), yr.high = std::max(yr.high, yticks.back());
  const auto px = [&](double x) { return x0 + (x - xr.low) / (xr.high - xr.low) * (x1 - x0); };
  const auto py = [&](double y) { return y1 - (y - yr.low) / (yr.high - yr.low) * (y1 - y0); };

  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  cairo_set_font_size(cr, 13);
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  draw_text(cr, panel.title, (x0 + x1) / 2, top + 8, 0.5, 0);

  // Grid and ticks.
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 11);
  cairo_set_line_width(cr, 1);
  for (const double t : xticks) {
    if (t < xr.low || t > xr.high) continue;
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, std::round(px(t)) + 0.5, y0);
    cairo_line_to(cr, std::round(px(t)) + 0.5, y1);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
    draw_text(cr, tick_label(t), px(t), y1 + 6, 0.5, 0);
  }
  for (const double t : yticks) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, x0, std::round(py(t)) + 0.5);
    cairo_line_to(cr, x1, std::round(py(t)) + 0.5);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
    draw_text(cr, tick_label(t), x0 - 6, py(t), 1, 0.5);
  }
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_rectangle(cr, x0 + 0.5, y0 + 0.5, x1 - x0 - 1, y1 - y0 - 1);
  cairo_stroke(cr);
  cairo_set_font_size(cr, 12);
  draw_text(cr, panel.x_label, (x0 + x1) / 2, y1 + 24, 0.5, 0);
  cairo_save(cr);
  cairo_translate(cr, left + 12, (y0 + y1) / 2);
  cairo_rotate(cr, -M_PI / 2);
  draw_text(cr, panel.y_label, 0, 0, 0.5, 0.5);
  cairo_restore(cr);

  // Bands, then lines, inside the frame.
  cairo_save(cr);
  cairo_rectangle(cr, x0, y0, x1 - x0, y1 - y0);
  cairo_clip(cr);
  for (std::size_t l = 0; l < panel.lines.size(); ++l) {
    const PlotLine& line = panel.lines[l];
    const Colour c = kPalette[l % std::size(kPalette)];
    const std::size_t n = line.points.x.size();
    if (line.band_low.size() == n && line.band_high.size() == n && n > 0) {
      cairo_set_source_rgba(cr, c.r, c.g, c.b, 0.2);
      cairo_move_to(cr, px(line.points.x[0]), py(line.band_high[0]));
      for (std::size_t i = 1; i < n; ++i) cairo_line_to(cr, px(line.points.x[i]), py(line.band_high[i]));
      for (std::size_t i = n; i-- > 0;) cairo_line_to(cr, px(line.points.x[i]), py(line.band_low[i]));
      cairo_close_path(cr);
      cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_set_line_width(cr, 1.6);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (std::size_t i = 0; i < n; ++i) {
      if (i == 0) {
        cairo_move_to(cr, px(line.points.x[i]), py(line.points.y[i]));
      } else {
        cairo_line_to(cr, px(line.points.x[i]), py(line.points.y[i]));
      }
    }
    if (n == 1) cairo_arc(cr, px(line.points.x[0]), py(line.points.y[0]), 2, 0, 2 * M_PI);
    cairo_stroke(cr);
  }
  cairo_restore(cr);

  // The legend, top left inside the frame, on a white box.
  if (panel.lines.empty()) return;
  cairo_set_font_size(cr, 11);
  double legend_width = 0;
  for (const PlotLine& line : panel.lines) {
    cairo_text_extents_t extents;
    cairo_text_extents(cr, line.label.c_str(), &extents);
    legend_width = std::max(legend_width, extents.x_advance);
  }
  constexpr double kRow = 15;
  const double box_x = x0 + 8, box_y = y0 + 8;
  const double box_w = legend_width + 34, box_h = kRow * static_cast<double>(panel.lines.size()) + 8;
  cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
  cairo_rectangle(cr, box_x, box_y, box_w, box_h);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  for (std::size_t l = 0; l < panel.lines.size(); ++l) {
    const Colour c = kPalette[l % std::size(kPalette)];
    const double row_y = box_y + 4 + kRow * (static_cast<double>(l) + 0.5);
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_set_line_width(cr, 2.5);
    cairo_move_to(cr, box_x + 6, row_y);
    cairo_line_to(cr, box_x + 24, row_y);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    draw_text(cr, panel.lines[l].label, box_x + 29, row_y, 0, 0.5);
  }
}

}  // namespace

std::vector<double> axis_ticks(double low, double high, int target) {
  std::vector<double> ticks;
  if (!(high > low) || !std::isfinite(low) || !std::isfinite(high) || target < 1) return ticks;
  const double raw = (high - low) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double multiple : {1.0, 2.0, 5.0, 10.0}) {
    step = multiple * magnitude;
    if (step >= raw) break;
  }
  const double first = std::floor(low / step + 1e-9) * step;
  for (int i = 0; i < 100; ++i) {
    const double t = first + i * step;  // not a running sum, which drifts (0.30000000000000004)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= high - step * 1e-9) break;
  }
  return ticks;
}

std::string tick_label(double value) {
  char buffer[32];
  const double magnitude = std::abs(value);
  if (magnitude >= 1e9) {
    std::snprintf(buffer, sizeof buffer, "%gG", value / 1e9);
  } else if (magnitude >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%gM", value / 1e6);
  } else if (magnitude >= 1e3) {
    std::snprintf(buffer, sizeof buffer, "%gk", value / 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
  }
  return buffer;
}

void write_plot(const std::vector<PlotPanel>& panels, const std::filesystem::path& file, int width, int height) {
  const std::string extension = file.extension().string();
  if (extension != ".png" && extension != ".svg") {
    throw std::invalid_argument("cannot write '" + file.string() + "': the picture's name must end in .png or .svg");
  }
  const int count = std::max<int>(1, static_cast<int>(panels.size()));
  if (width < 200 || height < 150 * count) {
    throw std::invalid_argument("a picture of " + std::to_string(width) + "x" + std::to_string(height) +
                                " is too small (at least 200 wide and 150 high a panel)");
  }
  const bool svg = extension == ".svg";
  cairo_surface_t* surface = svg ? cairo_svg_surface_create(file.c_str(), width, height)
                                 : cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
  const std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface_owner(surface,
                                                                                         cairo_surface_destroy);
  if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error("cannot write '" + file.string() +
                             "': " + cairo_status_to_string(cairo_surface_status(surface)));
  }
  cairo_t* cr = cairo_create(surface);
  const std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr_owner(cr, cairo_destroy);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  const double panel_height = static_cast<double>(height) / count;
  for (std::size_t p = 0; p < panels.size(); ++p) {
    draw_panel(cr, panels[p], 0, panel_height * static_cast<double>(p), width, panel_height);
  }
  cairo_surface_flush(surface);
  cairo_status_t status = cairo_status(cr);
  if (status == CAIRO_STATUS_SUCCESS) {
    if (svg) {
      cairo_surface_finish(surface);
      status = cairo_surface_status(surface);
    } else {
      status = cairo_surface_write_to_png(surface, file.c_str());
    }
  }
  if (status != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error("cannot write '" + file.string() + "': " + cairo_status_to_string(status));
  }
}

}  // namespace concord::view
