#include "concord/launch/process_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "concord/launch/line_prefixer.h"
#include "concord/launch/wait_status.h"

extern char** environ;

namespace concord::launch {
namespace {

using Clock = std::chrono::steady_clock;

// After SIGKILL a process normally vanishes at once; one stuck in the kernel (uninterruptible
// I/O) is given this long before the supervisor stops waiting for it.
constexpr std::chrono::seconds kKillWait{5};
// After the last child is reaped, output still in the pipes is relayed until every pipe reaches
// end of file or stays silent this long (a grandchild may hold a pipe open forever), and for no
// longer than kDrainLimit in all (it may also keep writing).
constexpr std::chrono::milliseconds kDrainIdle{200};
constexpr std::chrono::seconds kDrainLimit{2};

constexpr std::array<int, 4> kForwardedSignals{SIGINT, SIGTERM, SIGHUP, SIGQUIT};

[[noreturn]] void throw_errno(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Writes all of `text` to `fd`. A closed reader (EPIPE) drops the text: losing output must not
// stop the supervision of the children.
void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t written = write(fd, text.data(), text.size());
    if (written > 0) {
      text.remove_prefix(static_cast<std::size_t>(written));
    } else if (written < 0 && errno == EAGAIN) {
      pollfd wait_writable{fd, POLLOUT, 0};
      poll(&wait_writable, 1, 100);
    } else if (written < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

// The self-pipe trick: signal handlers only write the signal number into a pipe that the
// supervision loop polls, so all the work happens outside the handler.
int g_signal_pipe_write = -1;

extern "C" void note_signal(int signal_number) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t ignored = write(g_signal_pipe_write, &byte, 1);
  errno = saved_errno;
}

// Installs the supervisor's signal handling for its lifetime and restores the previous one after.
class SignalPipe {
 public:
  SignalPipe() {
    if (g_signal_pipe_write >= 0) throw std::runtime_error("only one process supervisor may run at a time");
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw_errno("cannot create the supervisor's signal pipe");
    read_fd_ = fds[0];
    g_signal_pipe_write = fds[1];
    struct sigaction action {};
    action.sa_handler = note_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (std::size_t i = 0; i < kForwardedSignals.size(); ++i) {
      sigaction(kForwardedSignals[i], &action, &previous_forwarded_[i]);
    }
    action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &action, &previous_child_);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &previous_pipe_);
  }
  ~SignalPipe() {
    for (std::size_t i = 0; i < kForwardedSignals.size(); ++i) {
      sigaction(kForwardedSignals[i], &previous_forwarded_[i], nullptr);
    }
    sigaction(SIGCHLD, &previous_child_, nullptr);
    sigaction(SIGPIPE, &previous_pipe_, nullptr);
    close(g_signal_pipe_write);
    g_signal_pipe_write = -1;
    close(read_fd_);
  }
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  int read_fd() const { return read_fd_; }

  // The signals received since the last call, SIGCHLD included, in arrival order.
  std::string take() {
    std::string signals;
    char buffer[64];
    ssize_t got;
    while ((got = read(read_fd_, buffer, sizeof(buffer))) > 0) signals.append(buffer, static_cast<std::size_t>(got));
    return signals;
  }

 private:
  int read_fd_ = -1;
  std::array<struct sigaction, kForwardedSignals.size()> previous_forwarded_{};
  struct sigaction previous_child_ {};
  struct sigaction previous_pipe_ {};
};

// One child's stdout or stderr: the read end of its pipe, relayed to our own stream.
struct OutputRelay {
  int fd = -1;
  int target_fd = -1;
  std::optional<LinePrefixer> lines;

  // Relays what can be read now; closes the pipe at end of file.
  void relay_available() {
    char buffer[64 * 1024];
    const ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got > 0) {
      write_all(target_fd, lines->feed(std::string_view(buffer, static_cast<std::size_t>(got))));
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      finish();
    }
  }
  void finish() {
    if (fd < 0) return;
    write_all(target_fd, lines->finish());
    close_fd(fd);
  }
};

struct Child {
  const ChildSpec* spec = nullptr;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  OutputRelay out, err;

  std::string label() const { return spec->name + " (pid " + std::to_string(pid) + ")"; }
};

// "NAME=value" strings for execve: the supervisor's environment with `overrides` replacing or
// adding variables.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::unordered_set<std::string> overridden;
  for (const auto& [name, value] : overrides) overridden.insert(name);
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string name(text.substr(0, text.find('=')));
    if (overridden.count(name) == 0) entries.emplace_back(text);
  }
  for (const auto& [name, value] : overrides) entries.push_back(name + "=" + value);
  return entries;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

class Supervisor {
 public:
  explicit Supervisor(const SupervisorOptions& options) : options_(options) {
    dev_null_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (dev_null_ < 0) throw_errno("cannot open /dev/null");
  }
  ~Supervisor() {
    for (Child& child : children_) {
      close_fd(child.out.fd);
      close_fd(child.err.fd);
    }
    close_fd(dev_null_);
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  SupervisionResult run(const std::vector<ChildSpec>& specs) {
    children_.reserve(specs.size());
    for (const ChildSpec& spec : specs) {
      if (!start(spec)) break;
    }
    supervise_until_all_reaped();
    drain_output();
    return result();
  }

 private:
  // kFinishing: the first child finished cleanly while others it let fail still run (actors a
  // policy dropped, perhaps stalled for good); they have the grace period to end by themselves.
  enum class Phase { kRunning, kFinishing, kStopping, kKilling };

  // Forks and execs one child; false (with the failure recorded and the others being stopped)
  // if it could not be started.
  bool start(const ChildSpec& spec) {
    if (spec.argv.empty()) throw std::invalid_argument("process supervisor: " + spec.name + " has no command");
    std::vector<std::string> argv = spec.argv;
    std::vector<std::string> environment = child_environment(spec.environment);
    std::vector<char*> argv_pointers = c_strings(argv);
    std::vector<char*> environment_pointers = c_strings(environment);

    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_error_pipe[2];
    if (options_.prefix_output && (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)) {
      throw_errno("cannot create a pipe for " + spec.name);
    }
    // Closed by a successful exec (O_CLOEXEC); carries errno back when exec fails.
    if (pipe2(exec_error_pipe, O_CLOEXEC) != 0) throw_errno("cannot create a pipe for " + spec.name);

    // Signals stay blocked from fork until the child has reset its handlers, so that a Ctrl-C
    // landing in between never runs the supervisor's handler inside the child.
    sigset_t all_signals, previous_mask;
    sigfillset(&all_signals);
    pthread_sigmask(SIG_SETMASK, &all_signals, &previous_mask);
    const pid_t supervisor_pid = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      // Only async-signal-safe calls from here to exec.
      for (const int signal_number : kForwardedSignals) signal(signal_number, SIG_DFL);
      signal(SIGCHLD, SIG_DFL);
      signal(SIGPIPE, SIG_DFL);
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != supervisor_pid) _exit(128 + SIGTERM);  // the supervisor died before prctl
      dup2(dev_null_, STDIN_FILENO);
      if (out_pipe[1] >= 0) dup2(out_pipe[1], STDOUT_FILENO);
      if (err_pipe[1] >= 0) dup2(err_pipe[1], STDERR_FILENO);
      pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
      execvpe(argv_pointers[0], argv_pointers.data(), environment_pointers.data());
      const int exec_errno = errno;
      [[maybe_unused]] const ssize_t ignored = write(exec_error_pipe[1], &exec_errno, sizeof(exec_errno));
      _exit(127);
    }
    const int fork_errno = errno;
    if (pid > 0) setpgid(pid, pid);  // also here, so the group exists before we might signal it
    pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
    close_fd(out_pipe[1]);
    close_fd(err_pipe[1]);
    close_fd(exec_error_pipe[1]);
    if (pid < 0) {
      close_fd(out_pipe[0]);
      close_fd(err_pipe[0]);
      close_fd(exec_error_pipe[0]);
      begin_stop("cannot start " + spec.name + ": fork failed: " + std::strerror(fork_errno), SIGTERM);
      return false;
    }

    int exec_errno = 0;
    ssize_t got;
    do {
      got = read(exec_error_pipe[0], &exec_errno, sizeof(exec_errno));
    } while (got < 0 && errno == EINTR);
    close_fd(exec_error_pipe[0]);
    if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
      int status;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      close_fd(out_pipe[0]);
      close_fd(err_pipe[0]);
      begin_stop("cannot start '" + spec.argv[0] + "': " + std::strerror(exec_errno), SIGTERM);
      return false;
    }

    Child child;
    child.spec = &spec;
    child.pid = pid;
    child.running = true;
    if (options_.prefix_output) {
      const std::string prefix = "[" + spec.name + "] ";
      child.out = OutputRelay{out_pipe[0], STDOUT_FILENO, LinePrefixer(prefix)};
      child.err = OutputRelay{err_pipe[0], STDERR_FILENO, LinePrefixer(prefix)};
      fcntl(child.out.fd, F_SETFL, O_NONBLOCK);
      fcntl(child.err.fd, F_SETFL, O_NONBLOCK);
    }
    spdlog::debug("started {}: {}", child.label(), spec.argv[0]);
    children_.push_back(std::move(child));
    return true;
  }

  void supervise_until_all_reaped() {
    while (any_running()) {
      std::vector<pollfd> fds{{signals_.read_fd(), POLLIN, 0}};
      std::vector<OutputRelay*> relays;
      for (Child& child : children_) {
        for (OutputRelay* relay : {&child.out, &child.err}) {
          if (relay->fd < 0) continue;
          fds.push_back({relay->fd, POLLIN, 0});
          relays.push_back(relay);
        }
      }
      const int ready = poll(fds.data(), fds.size(), poll_timeout_ms());
      if (ready < 0 && errno != EINTR) throw_errno("poll failed while supervising children");
      if (ready > 0) {
        for (std::size_t i = 0; i < relays.size(); ++i) {
          if (fds[i + 1].revents != 0) relays[i]->relay_available();
        }
        if (fds[0].revents != 0) handle_signals(signals_.take());
      }
      reap_exited();
      enforce_deadline();
    }
  }

  int poll_timeout_ms() const {
    if (phase_ == Phase::kRunning) return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left + 1, 0, 60 * 60 * 1000));
  }

  void handle_signals(const std::string& signals) {
    for (const char byte : signals) {
      const int signal_number = static_cast<unsigned char>(byte);
      if (signal_number == SIGCHLD) continue;  // reap_exited() runs after every wake-up
      if (phase_ == Phase::kRunning || phase_ == Phase::kFinishing) {
        received_signal_ = signal_number;
        spdlog::warn("received {}; forwarding it to every rank (SIGKILL after {:.3g} s, or at once on a second signal)",
                     signal_name(signal_number), options_.grace_period.count() / 1000.0);
        begin_stop("", signal_number);
      } else if (phase_ == Phase::kStopping) {
        spdlog::warn("received {} while stopping; killing every rank", signal_name(signal_number));
        kill_remaining();
      }
    }
  }

  void reap_exited() {
    for (std::size_t index = 0; index < children_.size(); ++index) {
      Child& child = children_[index];
      if (!child.running) continue;
      int status;
      const pid_t reaped = waitpid(child.pid, &status, WNOHANG);
      if (reaped != child.pid) continue;
      child.running = false;
      child.status = status;
      if (exited_cleanly(status)) {
        spdlog::debug("{} finished", child.label());
        if (index == 0 && phase_ == Phase::kRunning) begin_finishing();
      } else if (phase_ == Phase::kRunning && options_.tolerates_failure && options_.tolerates_failure(index)) {
        spdlog::warn("{} {}; the run goes on without it", child.label(), describe_wait_status(status));
      } else if (phase_ == Phase::kRunning) {
        const std::string cause = child.label() + " " + describe_wait_status(status) + stopped_peers(index) +
                                  (options_.explain_failure ? options_.explain_failure(index) : std::string());
        spdlog::error("{}; stopping the other ranks", cause);
        begin_stop(cause, SIGTERM);
      } else if (received_signal_ != 0 && stopped_as_asked(status)) {
        spdlog::debug("{} stopped on {}", child.label(), signal_name(received_signal_));
      } else {
        spdlog::info("{} {}", child.label(), describe_wait_status(status));
        if (received_signal_ && first_child_failure_.empty()) {
          first_child_failure_ = child.label() + " " + describe_wait_status(status);
        }
      }
    }
  }

  // The ranks other than `failed` that are stopped (SIGSTOP, a debugger) as " (rank R (pid P) is
  // stopped ...)", or "": a rank whose peers time out waiting for it is the likelier cause than the
  // peer that noticed first, and it would otherwise never be named.
  std::string stopped_peers(std::size_t failed) const {
    std::string stopped;
    for (std::size_t index = 0; index < children_.size(); ++index) {
      const Child& other = children_[index];
      if (index == failed || !other.running) continue;
      std::ifstream stat("/proc/" + std::to_string(other.pid) + "/stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      // "pid (comm) S ...": the state follows the last ')' (a command name may hold one).
      const std::size_t paren = line.rfind(')');
      if (paren == std::string::npos || paren + 2 >= line.size()) continue;
      const char state = line[paren + 2];
      if (state == 'T' || state == 't') stopped += (stopped.empty() ? "" : ", ") + other.label();
    }
    if (stopped.empty()) return "";
    return " (" + stopped + (stopped.find(',') == std::string::npos ? " is" : " are") +
           " stopped, by SIGSTOP or a debugger: the likelier cause, if the failure was a wait for a peer)";
  }

  // A child that handles the forwarded signal by finishing its work and exiting with 128 + its
  // number (as `concord train` does after writing its checkpoint) did what the signal asked.
  bool stopped_as_asked(int status) const { return WIFEXITED(status) && WEXITSTATUS(status) == 128 + received_signal_; }

  // Starts stopping every running child with `signal_number`; `cause` (if any) is why the run
  // failed. Only the first stop counts; a run fails for its first reason.
  void begin_stop(const std::string& cause, int signal_number) {
    if (phase_ != Phase::kRunning && phase_ != Phase::kFinishing) return;
    if (!cause.empty()) failure_ = cause;
    phase_ = Phase::kStopping;
    deadline_ = Clock::now() + options_.grace_period;
    signal_running(signal_number);
  }

  // Rank 0 is done. Ranks whose failure it tolerates owe it nothing more: those still running
  // after the grace period (a stalled actor never ends by itself) are stopped, and how they end
  // does not fail the run. Without such ranks the others are waited for as before.
  void begin_finishing() {
    if (!any_running() || !options_.tolerates_failure) return;
    for (std::size_t index = 0; index < children_.size(); ++index) {
      if (children_[index].running && !options_.tolerates_failure(index)) return;
    }
    phase_ = Phase::kFinishing;
    deadline_ = Clock::now() + options_.grace_period;
  }

  void kill_remaining() {
    phase_ = Phase::kKilling;
    deadline_ = Clock::now() + kKillWait;
    signal_running(SIGKILL);
  }

  // Signals each running child's process group. A running child is not yet reaped, so its pid,
  // and with it its group id, cannot have been reused.
  void signal_running(int signal_number) {
    for (const Child& child : children_) {
      if (child.running) kill(-child.pid, signal_number);
    }
  }

  void enforce_deadline() {
    if (phase_ == Phase::kRunning || !any_running() || Clock::now() < deadline_) return;
    if (phase_ == Phase::kFinishing) {
      for (const Child& child : children_) {
        if (child.running) {
          spdlog::warn("{} still running {:.3g} s after rank 0 finished; stopping it", child.label(),
                       options_.grace_period.count() / 1000.0);
        }
      }
      begin_stop("", SIGTERM);
      return;
    }
    if (phase_ == Phase::kStopping) {
      for (const Child& child : children_) {
        if (child.running) {
          spdlog::warn("{} still running {:.3g} s after being stopped; sending SIGKILL", child.label(),
                       options_.grace_period.count() / 1000.0);
        }
      }
      kill_remaining();
      return;
    }
    for (Child& child : children_) {
      if (!child.running) continue;
      spdlog::error("{} did not exit after SIGKILL; no longer waiting for it", child.label());
      child.running = false;
      child.status = -1;
      if (failure_.empty()) failure_ = child.label() + " did not exit after SIGKILL";
    }
  }

  void drain_output() {
    const auto give_up = Clock::now() + kDrainLimit;
    auto quiet_since = Clock::now();
    while (Clock::now() - quiet_since < kDrainIdle && Clock::now() < give_up) {
      std::vector<pollfd> fds;
      std::vector<OutputRelay*> relays;
      for (Child& child : children_) {
        for (OutputRelay* relay : {&child.out, &child.err}) {
          if (relay->fd < 0) continue;
          fds.push_back({relay->fd, POLLIN, 0});
          relays.push_back(relay);
        }
      }
      if (fds.empty()) return;
      const int ready = poll(fds.data(), fds.size(), static_cast<int>(kDrainIdle.count()));
      if (ready <= 0) continue;
      for (std::size_t i = 0; i < relays.size(); ++i) {
        if (fds[i].revents != 0) relays[i]->relay_available();
      }
      quiet_since = Clock::now();
    }
    for (Child& child : children_) {
      child.out.finish();
      child.err.finish();
    }
  }

  bool any_running() const {
    return std::any_of(children_.begin(), children_.end(), [](const Child& child) { return child.running; });
  }

  SupervisionResult result() const {
    SupervisionResult result;
    if (!failure_.empty()) {
      result.failure = failure_;
    } else if (received_signal_) {
      // Interrupted: a clean exit of every rank (e.g. `concord train` saving a checkpoint on
      // SIGINT) is a success, as it is for a single `concord train`.
      if (!first_child_failure_.empty()) {
        result.failure = "interrupted by " + signal_name(received_signal_) + "; " + first_child_failure_;
      } else {
        spdlog::warn("stopped by {}; every rank exited cleanly", signal_name(received_signal_));
        result.stop_signal = received_signal_;
      }
    }
    result.success = result.failure.empty();
    result.received_signal = received_signal_;
    return result;
  }

  SupervisorOptions options_;
  SignalPipe signals_;
  int dev_null_ = -1;
  std::vector<Child> children_;
  Phase phase_ = Phase::kRunning;
  Clock::time_point deadline_{};
  std::string failure_;
  int received_signal_ = 0;
  std::string first_child_failure_;
};

}  // namespace

SupervisionResult supervise(const std::vector<ChildSpec>& children, const SupervisorOptions& options) {
  if (children.empty()) throw std::invalid_argument("process supervisor: no children to start");
  Supervisor supervisor(options);
  return supervisor.run(children);
}

}  // namespace concord::launch
