#pragma once

// The machine's load, printed by benchmarks beside their figures: on a shared machine a run
// under load is slower for reasons that are not the code's. Header-only.

#include <fstream>
#include <string>

namespace concord::bench {

// The 1, 5 and 15 minute load averages from /proc/loadavg, or "unknown".
inline std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one.empty() ? "unknown" : one + " " + five + " " + fifteen;
}

}  // namespace concord::bench
