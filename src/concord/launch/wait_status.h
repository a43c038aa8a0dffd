#pragma once

#include <string>

namespace concord::launch {

// How a child process ended, in words, from a waitpid() status: "exited with status 3",
// "was killed by signal 9 (SIGKILL)", "was killed by signal 11 (SIGSEGV, core dumped)".
std::string describe_wait_status(int status);

// "SIGTERM" for 15; "signal 99" for a number without a name.
std::string signal_name(int signal_number);

// True when the child exited on its own with status 0.
bool exited_cleanly(int status);

}  // namespace concord::launch
