#include "concord/launch/wait_status.h"

#include <sys/wait.h>

#include <cstring>

namespace concord::launch {

std::string signal_name(int signal_number) {
  // sigabbrev_np (glibc >= 2.32) gives "TERM" for 15, and nullptr for numbers it does not know.
  const char* abbreviation = sigabbrev_np(signal_number);
  if (abbreviation == nullptr) return "signal " + std::to_string(signal_number);
  return std::string("SIG") + abbreviation;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    return "was killed by signal " + std::to_string(signal_number) + " (" + signal_name(signal_number) +
           (WCOREDUMP(status) ? ", core dumped)" : ")");
  }
  return "ended with wait status " + std::to_string(status);
}

bool exited_cleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace concord::launch
