// Classic control drawn as Gymnasium's rgb_array renderers draw it (gymnasium/envs/classic_control):
// the same picture sizes, colours and geometry, in Gymnasium's y-up coordinates flipped into the
// image, from what each observation holds (positions and angles).
#include <cairo.h>

#include <cmath>
#include <cstring>
#include <string>

#include "concord/envs/rendering.h"

namespace concord::envs {
namespace {

struct Colour {
  double r, g, b;
};
constexpr Colour kBlack{0, 0, 0};

Colour rgb(int r, int g, int b) { return {r / 255.0, g / 255.0, b / 255.0}; }

// A Cairo surface in Gymnasium's coordinates: origin bottom left, y up.
class Canvas {
 public:
  Canvas(int width, int height)
      : width_(width),
        height_(height),
        surface_(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height)),
        cairo_(cairo_create(surface_)) {}
  ~Canvas() {
    cairo_destroy(cairo_);
    cairo_surface_destroy(surface_);
  }
  Canvas(const Canvas&) = delete;
  Canvas& operator=(const Canvas&) = delete;

  void clear() {
    cairo_identity_matrix(cairo_);
    cairo_set_source_rgb(cairo_, 1, 1, 1);
    cairo_paint(cairo_);
    cairo_translate(cairo_, 0, height_);
    cairo_scale(cairo_, 1, -1);
  }
  // A polygon of (x, y) corners rotated by `angle` about the origin, then moved by (dx, dy).
  void polygon(std::initializer_list<std::pair<double, double>> corners, double angle, double dx, double dy,
               Colour colour) {
    const double c = std::cos(angle);
    const double s = std::sin(angle);
    bool first = true;
    for (const auto& [x, y] : corners) {
      const double px = x * c - y * s + dx;
      const double py = x * s + y * c + dy;
      if (first) {
        cairo_move_to(cairo_, px, py);
      } else {
        cairo_line_to(cairo_, px, py);
      }
      first = false;
    }
    cairo_close_path(cairo_);
    fill(colour);
  }
  void circle(double x, double y, double radius, Colour colour) {
    cairo_new_sub_path(cairo_);
    cairo_arc(cairo_, x, y, radius, 0, 2 * M_PI);
    fill(colour);
  }
  void line(double x0, double y0, double x1, double y1, Colour colour) {
    cairo_move_to(cairo_, x0, y0);
    cairo_line_to(cairo_, x1, y1);
    stroke(colour);
  }
  cairo_t* cairo() { return cairo_; }
  void stroke(Colour colour) {
    cairo_set_source_rgb(cairo_, colour.r, colour.g, colour.b);
    cairo_set_line_width(cairo_, 1.0);
    cairo_stroke(cairo_);
  }
  void copy_to(RgbFrame& frame) {
    cairo_surface_flush(surface_);
    frame.width = width_;
    frame.height = height_;
    frame.pixels.resize(static_cast<size_t>(width_) * height_ * 3);
    const unsigned char* data = cairo_image_surface_get_data(surface_);
    const int stride = cairo_image_surface_get_stride(surface_);
    for (int y = 0; y < height_; ++y) {
      const auto* row = reinterpret_cast<const uint32_t*>(data + static_cast<ptrdiff_t>(y) * stride);
      uint8_t* out = frame.pixels.data() + static_cast<size_t>(y) * width_ * 3;
      for (int x = 0; x < width_; ++x) {
        const uint32_t pixel = row[x];  // xRGB in native byte order
        out[3 * x] = static_cast<uint8_t>(pixel >> 16);
        out[3 * x + 1] = static_cast<uint8_t>(pixel >> 8);
        out[3 * x + 2] = static_cast<uint8_t>(pixel);
      }
    }
  }

 private:
  void fill(Colour colour) {
    cairo_set_source_rgb(cairo_, colour.r, colour.g, colour.b);
    cairo_fill(cairo_);
  }

  int width_;
  int height_;
  cairo_surface_t* surface_;
  cairo_t* cairo_;
};

class ClassicControlRenderer : public EnvRenderer {
 public:
  ClassicControlRenderer(int width, int height, int fps) : EnvRenderer(width, height, fps), canvas_(width, height) {}
  void render(const void* observation, RgbFrame& frame) final {
    canvas_.clear();
    draw(static_cast<const float*>(observation), canvas_);
    canvas_.copy_to(frame);
  }

 protected:
  virtual void draw(const float* observation, Canvas& canvas) = 0;

 private:
  Canvas canvas_;
};

// CartPole: [x, x_dot, theta, theta_dot]; 600x400 at 50 frames a second.
class CartPoleRenderer final : public ClassicControlRenderer {
 public:
  CartPoleRenderer() : ClassicControlRenderer(600, 400, 50) {}

 private:
  void draw(const float* obs, Canvas& canvas) override {
    const double scale = 600 / (2.4 * 2);
    const double pole_width = 10.0;
    const double pole_length = scale * (2 * 0.5);
    const double cart_width = 50.0;
    const double cart_height = 30.0;
    const double cart_x = obs[0] * scale + 600 / 2.0;
    const double cart_y = 100;
    const double l = -cart_width / 2, r = cart_width / 2, t = cart_height / 2, b = -cart_height / 2;
    canvas.polygon({{l, b}, {l, t}, {r, t}, {r, b}}, 0.0, cart_x, cart_y, kBlack);
    const double axle = cart_height / 4.0;
    const double pl = -pole_width / 2, pr = pole_width / 2, pt = pole_length - pole_width / 2, pb = -pole_width / 2;
    canvas.polygon({{pl, pb}, {pl, pt}, {pr, pt}, {pr, pb}}, -obs[2], cart_x, cart_y + axle, rgb(202, 152, 101));
    canvas.circle(cart_x, cart_y + axle, pole_width / 2, rgb(129, 132, 203));
    canvas.line(0, cart_y, 600, cart_y, kBlack);
  }
};

// Pendulum: [cos theta, sin theta, theta_dot]; 500x500 at 30 frames a second.
class PendulumRenderer final : public ClassicControlRenderer {
 public:
  PendulumRenderer() : ClassicControlRenderer(500, 500, 30) {}

 private:
  void draw(const float* obs, Canvas& canvas) override {
    const double bound = 2.2;
    const double scale = 500 / (bound * 2);
    const double offset = 500 / 2.0;
    const double rod_length = 1 * scale;
    const double rod_width = 0.2 * scale;
    const double theta = std::atan2(obs[1], obs[0]);
    const double l = 0, r = rod_length, t = rod_width / 2, b = -rod_width / 2;
    const double angle = theta + M_PI / 2;
    const Colour rod = rgb(204, 77, 77);
    canvas.polygon({{l, b}, {l, t}, {r, t}, {r, b}}, angle, offset, offset, rod);
    canvas.circle(offset, offset, rod_width / 2, rod);
    canvas.circle(offset + rod_length * std::cos(angle), offset + rod_length * std::sin(angle), rod_width / 2, rod);
    canvas.circle(offset, offset, 0.05 * scale, kBlack);
  }
};

// MountainCar (discrete, continuous, sparse): [position, velocity]; 600x400 at 30 frames a second.
class MountainCarRenderer final : public ClassicControlRenderer {
 public:
  explicit MountainCarRenderer(double goal_position) : ClassicControlRenderer(600, 400, 30), goal_(goal_position) {}

 private:
  static double height(double x) { return std::sin(3 * x) * 0.45 + 0.55; }

  void draw(const float* obs, Canvas& canvas) override {
    const double min_position = -1.2, max_position = 0.6;
    const double scale = 600 / (max_position - min_position);
    const double car_width = 40, car_height = 20, clearance = 10;
    cairo_t* cr = canvas.cairo();
    for (int i = 0; i < 100; ++i) {
      const double x = min_position + (max_position - min_position) * i / 99.0;
      const double px = (x - min_position) * scale, py = height(x) * scale;
      if (i == 0) {
        cairo_move_to(cr, px, py);
      } else {
        cairo_line_to(cr, px, py);
      }
    }
    canvas.stroke(kBlack);
    const double position = obs[0];
    const double angle = std::cos(3 * position);
    const double dx = (position - min_position) * scale, dy = clearance + height(position) * scale;
    const double l = -car_width / 2, r = car_width / 2, t = car_height, b = 0;
    canvas.polygon({{l, b}, {l, t}, {r, t}, {r, b}}, angle, dx, dy, kBlack);
    for (double wheel : {car_width / 4, -car_width / 4}) {
      const double wx = wheel * std::cos(angle) + dx, wy = wheel * std::sin(angle) + dy;
      canvas.circle(wx, wy, car_height / 2.5, rgb(128, 128, 128));
    }
    const double flag_x = (goal_ - min_position) * scale;
    const double flag_y1 = height(goal_) * scale, flag_y2 = flag_y1 + 50;
    canvas.line(flag_x, flag_y1, flag_x, flag_y2, kBlack);
    canvas.polygon({{flag_x, flag_y2}, {flag_x, flag_y2 - 10}, {flag_x + 25, flag_y2 - 5}}, 0.0, 0.0, 0.0,
                   rgb(204, 204, 0));
  }

  double goal_;
};

// Acrobot: [cos t1, sin t1, cos t2, sin t2, t1_dot, t2_dot]; 500x500 at 15 frames a second.
class AcrobotRenderer final : public ClassicControlRenderer {
 public:
  AcrobotRenderer() : ClassicControlRenderer(500, 500, 15) {}

 private:
  void draw(const float* obs, Canvas& canvas) override {
    const double bound = 1.0 + 1.0 + 0.2;
    const double scale = 500 / (bound * 2);
    const double offset = 500 / 2.0;
    const double s0 = std::atan2(obs[1], obs[0]);
    const double s1 = std::atan2(obs[3], obs[2]);
    // Gymnasium's points are (x, y) with x = -cos, then swapped: the pivot hangs the links down.
    const double p1x = -1.0 * std::cos(s0) * scale, p1y = 1.0 * std::sin(s0) * scale;
    const double p2x = p1x - 1.0 * std::cos(s0 + s1) * scale, p2y = p1y + 1.0 * std::sin(s0 + s1) * scale;
    const double xs[3][2] = {{0, 0}, {p1y, p1x}, {p2y, p2x}};
    const double thetas[2] = {s0 - M_PI / 2, s0 + s1 - M_PI / 2};
    canvas.line(-2.2 * scale + offset, 1 * scale + offset, 2.2 * scale + offset, 1 * scale + offset, kBlack);
    for (int i = 0; i < 2; ++i) {
      const double x = xs[i][0] + offset, y = xs[i][1] + offset;
      const double l = 0, r = 1.0 * scale, t = 0.1 * scale, b = -0.1 * scale;
      canvas.polygon({{l, b}, {l, t}, {r, t}, {r, b}}, thetas[i], x, y, rgb(0, 204, 204));
      canvas.circle(x, y, 0.1 * scale, rgb(204, 204, 0));
    }
  }
};

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

std::unique_ptr<EnvRenderer> make_classic_control_renderer(const EnvSpec& spec) {
  const std::string& id = spec.id;
  if (id == "CartPole-v1" || id == "CartPoleNoVel-v1") return std::make_unique<CartPoleRenderer>();
  if (id == "Pendulum-v1" || id == "PendulumNoVel-v1") return std::make_unique<PendulumRenderer>();
  if (id == "MountainCar-v0" || id == "SparseMountainCar-v0") return std::make_unique<MountainCarRenderer>(0.5);
  if (id == "MountainCarContinuous-v0") return std::make_unique<MountainCarRenderer>(0.45);
  if (starts_with(id, "Acrobot-")) return std::make_unique<AcrobotRenderer>();
  return nullptr;
}

}  // namespace concord::envs
