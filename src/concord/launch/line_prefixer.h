#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace concord::launch {

// Turns a byte stream (a child's stdout or stderr, read in arbitrary chunks) into whole lines,
// each starting with a fixed prefix such as "[rank 1] ". Lines are only ever emitted whole, so
// the output of several children can be interleaved line by line without tearing.
//
// A line longer than `max_line_bytes` is emitted in pieces of that size (each its own prefixed
// line) so that a child that never writes a newline cannot grow the buffer without bound. The
// bytes after the last newline are held until more arrive or finish() is called.
// Not thread-safe; one instance per stream.
class LinePrefixer {
 public:
  explicit LinePrefixer(std::string prefix, std::size_t max_line_bytes = 64 * 1024);

  // Appends `bytes`; returns the complete, prefixed lines they finish (possibly empty).
  std::string feed(std::string_view bytes);
  // Returns the held partial line, prefixed and newline-terminated (empty if none), at end of stream.
  std::string finish();

 private:
  std::string prefix_;
  std::size_t max_line_bytes_;
  std::string partial_line_;
};

}  // namespace concord::launch
