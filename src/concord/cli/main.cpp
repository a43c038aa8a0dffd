// concord: the command-line front end. Every failure ends in one line on stderr,
// "concord: error: <what went wrong>", and a non-zero exit status (2 for bad usage).
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/core/allocator.h"
#include "concord/core/blas.h"

int main(int argc, char** argv) {
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
    const std::string faster_kernel = faster.empty() ? "" : " (OPENBLAS_CORETYPE=" + faster + " runs faster)";
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
  // CLI11 reports a mistyped command as a missing one; name it instead.
  auto is_command = [&app](const std::string& name) {
    for (const CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
      if (command->get_name() == name) return true;
    }
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !is_command(argv[1])) {
    std::fprintf(stderr,
                 "concord: error: unknown command '%s' (commands: train, eval, envs, config, rollout, launch, fit; see "
                 "--help)\n",
                 argv[1]);
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
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "concord: error: %s (see --help)\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
