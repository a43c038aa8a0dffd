// concord: the command-line front end. Every failure ends in one line on stderr,
// "concord: error: <what went wrong>", and a non-zero exit status (2 for bad usage).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include <new>
#include <vector>

#include <c10/util/Exception.h>
#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/view_commands.h"
#include "concord/core/allocator.h"
#include "concord/core/blas.h"
#include "concord/core/did_you_mean.h"

namespace {

// SIGINT or SIGTERM before a command installs its own handling (SignalStop, the launcher's) ends
// the program with one line and status 128 + the signal, instead of the default action's silent
// death. Only async-signal-safe calls.
void stop_at_once(int signal_number) {
  static const char interrupted[] = "concord: stopped by SIGINT\n";
  static const char terminated[] = "concord: stopped by SIGTERM\n";
  const bool interrupt = signal_number == SIGINT;
  const ssize_t written = write(STDERR_FILENO, interrupt ? interrupted : terminated,
                                (interrupt ? sizeof(interrupted) : sizeof(terminated)) - 1);
  (void)written;
  _exit(128 + signal_number);
}

// Runs from the executable's .preinit_array, before any shared library's initialisers: LibTorch's
// take about half a second (its operator registry), and a Ctrl-C in that time used to kill the
// program with no line. A signal the parent left blocked is unblocked here, so that it arrives now
// rather than at some later point where nothing expects it.
void handle_signals_from_the_start(int, char**, char**) {
  struct sigaction action {};
  action.sa_handler = stop_at_once;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &stop_signals, nullptr);
}

__attribute__((section(".preinit_array"),
               used)) void (*const kHandleSignalsFromTheStart)(int, char**, char**) = handle_signals_from_the_start;

// The long options of the command a mistyped flag was given to, for "did you mean".
std::vector<std::string> long_options(CLI::App& app, const std::string& command) {
  std::vector<std::string> names;
  CLI::App* target = &app;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == command) target = sub;
  }
  for (const CLI::Option* option : target->get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

// CLI11's "The following arguments were not expected: --totl-timesteps 5" with a suggestion for
// each flag that is nearly one the command has.
std::string unexpected_arguments(const CLI::ExtrasError& error, CLI::App& app, int argc, char** argv) {
  std::string message = error.what();
  const std::vector<std::string> known = long_options(app, argc > 1 ? argv[1] : "");
  for (int i = 2; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--") break;
    if (word.rfind("--", 0) != 0) continue;
    word = word.substr(0, word.find('='));
    if (std::find(known.begin(), known.end(), word) != known.end()) continue;
    const std::vector<std::string> close = concord::core::similar_names(word, known, 1);
    if (!close.empty()) message += "; did you mean " + close.front() + " for " + word + "?";
  }
  return message;
}

// `concord launch -n 2 concord train --seed 1` without '--': CLI11 takes the command's flags for
// the launcher's own and rejects them, which says nothing of the missing separator.
std::string launch_separator_hint(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "launch") return "";
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--") return "";
  }
  return "; put '--' before the command the processes run: concord launch -n 2 -- concord train ...";
}

}  // namespace

int main(int argc, char** argv) {
  // On a CPU OpenBLAS does not know, run again with the kernel set the CPU can use (core/blas.h).
  concord::core::reexec_with_faster_blas_kernel(argv);
  // Past a file-size limit (ulimit -f) a write must fail with EFBIG, which the writer reports in
  // one line and cleans up after, instead of SIGXFSZ ending the process silently mid-checkpoint.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"Concord: parallel and distributed deep reinforcement learning"};
  app.require_subcommand(1);
  // The numerics a run depends on: OpenBLAS's kernel set differs by CPU, and with it every
  // learning curve (scripts/kernel_check.sh reads the kernel from here). Then malloc's settings,
  // which the speed of pixel workloads depends on.
  app.set_version_flag("--version", []() -> std::string {
    // scripts/test.sh reads the advice from here: one place decides it (core::faster_blas_kernel).
    const std::string faster = concord::core::faster_blas_kernel();
    const std::string chosen = concord::core::blas_kernel_chosen_by_concord();
    const std::string faster_kernel = !faster.empty()   ? " (OPENBLAS_CORETYPE=" + faster + " runs faster)"
                                      : !chosen.empty() ? " (OPENBLAS_CORETYPE=" + chosen + ", set by concord)"
                                                        : "";
    return std::string("concord " CONCORD_VERSION ", LibTorch " CONCORD_TORCH_VERSION ", BLAS ") +
           concord::core::loaded_blas() + ", kernel " + concord::core::blas_kernel() + faster_kernel + ", " +
           concord::core::allocator_settings();
  });
  concord::cli::add_train_command(app);
  concord::cli::add_eval_command(app);
  concord::cli::add_envs_command(app);
  concord::cli::add_config_command(app);
  concord::cli::add_rollout_command(app);
  concord::cli::add_launch_command(app);
  concord::cli::add_fit_command(app);
  concord::cli::add_export_command(app);
  concord::cli::add_plot_command(app);
  concord::cli::add_board_command(app);
  // The commands in the order they were added, for the errors that list them.
  std::vector<std::string> commands;
  std::string command_list;
  for (const CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    commands.push_back(command->get_name());
    command_list += (command_list.empty() ? "" : ", ") + command->get_name();
  }
  // `concord` alone: CLI11 would say "A subcommand is required" without naming any.
  if (argc == 1) {
    std::fprintf(stderr, "concord: error: a command is required: %s (see --help)\n", command_list.c_str());
    return 2;
  }
  // CLI11 reports a mistyped command as a missing one; name it instead.
  if (argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    const std::string hint = concord::core::did_you_mean(argv[1], commands);
    std::fprintf(stderr, "concord: error: unknown command '%s'%s (commands: %s; see --help)\n", argv[1], hint.c_str(),
                 command_list.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const concord::cli::ExitStatus& stopped) {
    return stopped.status;
  } catch (const CLI::ExtrasError& error) {
    const std::string launch_hint = launch_separator_hint(argc, argv);
    std::fprintf(stderr, "concord: error: %s (see --help)\n",
                 launch_hint.empty() ? unexpected_arguments(error, app, argc, argv).c_str()
                                     : (std::string(error.what()) + launch_hint).c_str());
    return 2;
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "concord: error: %s%s (see --help)\n", error.what(),
                 launch_separator_hint(argc, argv).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "concord: error: out of memory (lower env.num_envs or the buffer sizes)\n");
    return 1;
  } catch (const c10::Error& error) {
    // LibTorch's own errors carry a C++ stack trace after the message: one line is what a user needs.
    std::string message = error.what_without_backtrace();
    if (message.find("can't allocate memory") != std::string::npos) {
      message = "out of memory: " + message.substr(0, message.find('\n'));
    }
    std::fprintf(stderr, "concord: error: %s\n", message.substr(0, message.find('\n')).c_str());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
