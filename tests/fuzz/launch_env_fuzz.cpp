// libFuzzer target: how a rank reads its place in the run from the environment
// (comm::LaunchEnvironment::from_environment), and that it reads back what `concord launch` writes
// (launch::torchrun_environment).
//
// Input: lines "NAME=VALUE", set as environment variables (and unset again afterwards) before
// from_environment() runs; it must return a consistent environment or throw CommError. A line
// "#topology N M R P L" (nproc_per_node, nnodes, node_rank, master_port, local_rank, taken modulo
// the ranges `concord launch` accepts) also has the launcher's variables for that rank checked: they
// must read back as the same rank, sizes, address and port, unless the launcher refuses the topology.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "concord/comm/communicator.h"
#include "concord/comm/launch_environment.h"
#include "concord/comm/torchrun_variables.h"
#include "concord/launch/torchrun_environment.h"

namespace {

using concord::comm::CommError;
using concord::comm::LaunchEnvironment;

// Every variable a test input may have set: cleared before each input, so inputs do not leak.
std::set<std::string>& set_names() {
  static std::set<std::string> names;
  return names;
}

void clear_environment() {
  for (const std::string& name : set_names()) ::unsetenv(name.c_str());
  set_names().clear();
}

void set_variable(const std::string& name, const std::string& value) {
  if (::setenv(name.c_str(), value.c_str(), 1) == 0) set_names().insert(name);
}

void check_consistent(const LaunchEnvironment& environment) {
  if (!environment.is_distributed()) return;
  if (environment.rank < 0 || environment.world_size < 1 || environment.rank >= environment.world_size) std::abort();
  if (environment.local_rank < 0 || environment.local_world_size < 1) std::abort();
  if (environment.master_port < 1 || environment.master_port > 65535) std::abort();
  if (environment.master_addr.empty()) std::abort();
}

LaunchEnvironment read_environment() {
  const LaunchEnvironment environment = LaunchEnvironment::from_environment();
  check_consistent(environment);
  return environment;
}

// A topology within the ranges `concord launch` accepts (launch_command.cpp), and one of its local ranks.
void check_launcher_round_trip(std::string_view line) {
  std::istringstream in{std::string(line)};
  int64_t values[5] = {};
  for (int64_t& value : values) {
    if (!(in >> value)) return;
  }
  auto modulo = [](int64_t value, int64_t range) { return static_cast<int>(((value % range) + range) % range); };
  concord::launch::LaunchTopology topology;
  topology.nproc_per_node = 1 + modulo(values[0], 4096);
  topology.nnodes = 1 + modulo(values[1], 1 << 16);
  topology.node_rank = modulo(values[2], topology.nnodes);
  topology.master_port = 1 + modulo(values[3], 65535);
  topology.master_addr = "10.0.0.1";
  const int local_rank = modulo(values[4], topology.nproc_per_node);

  std::vector<std::pair<std::string, std::string>> variables;
  try {
    variables = concord::launch::torchrun_environment(topology, local_rank);
  } catch (const std::invalid_argument&) {
    return;  // a topology the launcher refuses starts nothing
  }
  clear_environment();
  for (const auto& [name, value] : variables) set_variable(name, value);
  const LaunchEnvironment environment = read_environment();  // CommError escapes: a finding
  if (environment.launcher != "torchrun" || environment.rank != topology.global_rank(local_rank) ||
      environment.world_size != topology.world_size() || environment.local_rank != local_rank ||
      environment.local_world_size != topology.nproc_per_node || environment.master_addr != topology.master_addr ||
      environment.master_port != topology.master_port) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string topology_line;
  clear_environment();
  size_t start = 0;
  while (start < input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(start, end - start);
    start = end + 1;
    if (line.rfind("#topology ", 0) == 0) {
      topology_line = std::string(line.substr(10));
      continue;
    }
    const size_t equals = line.find('=');
    // setenv() copies up to the first NUL; a name with '=' or NUL is not a variable at all.
    if (equals == std::string_view::npos || equals == 0) continue;
    const std::string name(line.substr(0, equals));
    if (name.find('\0') != std::string::npos) continue;
    // The process's own variables (PATH, HOME, ASAN_OPTIONS, ...) stay as they are.
    if (std::getenv(name.c_str()) != nullptr && set_names().count(name) == 0) continue;
    set_variable(name, std::string(line.substr(equals + 1)).c_str());
  }
  try {
    (void)read_environment();
  } catch (const CommError&) {
  }
  if (!topology_line.empty()) check_launcher_round_trip(topology_line);
  clear_environment();
  return 0;
}
