#include "concord/launch/line_prefixer.h"

#include <stdexcept>
#include <utility>

namespace concord::launch {

LinePrefixer::LinePrefixer(std::string prefix, std::size_t max_line_bytes)
    : prefix_(std::move(prefix)), max_line_bytes_(max_line_bytes) {
  if (max_line_bytes_ == 0) throw std::invalid_argument("LinePrefixer: max_line_bytes must be positive");
}

std::string LinePrefixer::feed(std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    const std::size_t newline = bytes.find('\n');
    const std::size_t room = max_line_bytes_ - partial_line_.size();
    if (newline != std::string_view::npos && newline <= room) {
      out += prefix_;
      out += partial_line_;
      out.append(bytes.data(), newline + 1);
      partial_line_.clear();
      bytes.remove_prefix(newline + 1);
    } else if (bytes.size() > room) {
      // The line is too long to hold: emit what fills the buffer as a line of its own.
      out += prefix_;
      out += partial_line_;
      out.append(bytes.data(), room);
      out += '\n';
      partial_line_.clear();
      bytes.remove_prefix(room);
    } else {
      partial_line_.append(bytes.data(), bytes.size());
      break;
    }
  }
  return out;
}

std::string LinePrefixer::finish() {
  if (partial_line_.empty()) return {};
  std::string out = prefix_ + partial_line_ + '\n';
  partial_line_.clear();
  return out;
}

}  // namespace concord::launch
