#pragma once

// Counting the LibTorch operations a piece of code dispatches, for the micro benchmarks' phase
// breakdowns: a thread-local RecordFunction callback (ATen operators, nested ones included, and
// autograd nodes in backward) adds to whichever counter is active on the thread.

#include <benchmark/benchmark.h>

#include <ATen/record_function.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace concord::bench {

struct OpCounter {
  std::map<std::string, int64_t> by_name;
  int64_t total = 0;
};

// Where operations dispatched on this thread are counted; nullptr: nowhere.
inline thread_local OpCounter* active_counter = nullptr;

// Starts counting into active_counter; stop with at::removeCallback(handle).
inline at::CallbackHandle count_operations() {
  return at::addThreadLocalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        if (active_counter != nullptr) {
          ++active_counter->total;
          ++active_counter->by_name[fn.name()];
        }
        return nullptr;
      }).scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

// "<name>  N ops: op xK ...", one line.
inline void print_counts(const char* name, const OpCounter& counter) {
  std::printf("%-8s %3lld ops:", name, static_cast<long long>(counter.total));
  for (const auto& [op, calls] : counter.by_name) std::printf(" %s x%lld", op.c_str(), static_cast<long long>(calls));
  std::printf("\n");
}

// Per phase: <name>_us (mean microseconds per iteration) and <name>_ops; and ops, their sum.
inline void report_phases(benchmark::State& state, const char* const* names, const std::vector<double>& seconds,
                          const std::vector<OpCounter>& counts) {
  int64_t total_ops = 0;
  for (size_t phase = 0; phase < seconds.size(); ++phase) {
    state.counters[std::string(names[phase]) + "_us"] =
        benchmark::Counter(seconds[phase] * 1e6 / static_cast<double>(state.iterations()));
    state.counters[std::string(names[phase]) + "_ops"] = static_cast<double>(counts[phase].total);
    total_ops += counts[phase].total;
  }
  state.counters["ops"] = static_cast<double>(total_ops);
}

}  // namespace concord::bench
