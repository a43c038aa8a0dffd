// concord._train.train: `concord train` (cli::run_training_session) called from Python. The GIL is
// released for the whole run, so that the engine's threads can take it to step Python envs; the
// callback takes it back. SIGINT and SIGTERM are the session's own (cli::SignalStop) while it runs,
// so Ctrl-C stops the run with a checkpoint, and is raised as KeyboardInterrupt afterwards; also
// while a Python env's step keeps the run from its loop (python_env.cpp: the step is abandoned).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "concord/cli/training_checkpoint.h"
#include "concord/cli/training_session.h"
#include "concord/core/torch_thread.h"
#include "concord/envs/env.h"
#include "training_bindings.h"

namespace concord::python {
namespace {

// The callback's view of an update: the learner's and policy's metrics, the loop's counters and the
// recent episodes' mean return (None before the first episode ends).
py::dict update_record(const policies::TrainingState& state, const algos::Metrics& metrics,
                       const core::EpisodeStats& episodes) {
  py::dict record;
  for (const auto& [name, value] : metrics) record[py::str(name)] = value;
  record["global_step"] = state.global_step;
  record["updates"] = state.updates;
  const std::optional<double> recent = episodes.recent_mean_return();
  record["recent_mean_return"] = recent ? py::object(py::float_(*recent)) : py::none();
  return record;
}

py::dict train(std::vector<std::string> config_files, std::vector<std::string> overrides, const std::string& env_id,
               int64_t seed, int64_t num_envs, int64_t num_threads, const std::string& run_root,
               const std::string& progress, const std::string& algo, const std::string& policy, int64_t total_timesteps,
               const std::string& resume, const py::object& callback) {
  cli::TrainFlags flags;
  flags.run.config_files = std::move(config_files);
  flags.run.overrides = std::move(overrides);
  flags.run.env_id = env_id;
  flags.run.seed = seed;
  flags.run.num_envs = num_envs;
  flags.run.num_threads = num_threads;
  flags.run.run_root = run_root;
  flags.run.progress = progress;
  flags.algo = algo;
  flags.policy = policy;
  flags.total_timesteps = total_timesteps;
  flags.resume = resume;

  // A callback that raises stops the run as a signal would (the final checkpoint is written), and
  // its exception is raised once training has ended; one that returns False just stops it.
  std::unique_ptr<py::error_already_set> callback_error;  // written under the GIL
  std::atomic<bool> stopped_by_callback{false};
  std::atomic<bool> callback_failed{false};
  cli::TrainingHooks hooks;
  if (!callback.is_none()) {
    hooks.on_update = [&](const policies::TrainingState& state, const algos::Metrics& metrics,
                          const core::EpisodeStats& episodes) {
      py::gil_scoped_acquire gil;
      if (callback_failed || stopped_by_callback) return;
      try {
        const py::object answer = callback(update_record(state, metrics, episodes));
        if (answer.is(py::bool_(false))) stopped_by_callback = true;
      } catch (py::error_already_set& error) {
        callback_error = std::make_unique<py::error_already_set>(std::move(error));
        callback_failed = true;
      }
    };
    // Polled without the GIL, possibly from a policy's worker threads: hence the atomics.
    hooks.should_stop = [&] { return stopped_by_callback || callback_failed; };
  }

  cli::TrainingOutcome outcome;
  // A signal that came while a Python env's step kept the run from its loop (envs::EnvInterrupted):
  // the run ended at once, with the checkpoint of its last update, and the signal is Python's now.
  int interrupting_signal = 0;
  std::string interrupted_call;
  {
    // Training flushes denormals on this thread (run.flush_denormals); the interpreter's own
    // arithmetic gets its mode back afterwards.
    const core::RestoreFlushDenormals restore_denormals;
    py::gil_scoped_release release;
    try {
      outcome = cli::run_training_session(flags, hooks);
    } catch (const envs::EnvInterrupted& stop) {
      interrupting_signal = stop.signal_number();
      interrupted_call = stop.what();
    }
  }
  if (callback_error) throw *callback_error;
  if (interrupting_signal == SIGINT) {
    PyErr_SetString(PyExc_KeyboardInterrupt, ("training stopped: " + interrupted_call).c_str());
    throw py::error_already_set();
  }
  if (interrupting_signal != 0) {
    std::raise(interrupting_signal);
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    throw std::runtime_error("training stopped: " + interrupted_call);
  }
  if (outcome.stop_signal == SIGINT) {
    PyErr_SetString(PyExc_KeyboardInterrupt, ("training stopped at step " + std::to_string(outcome.state.global_step) +
                                              "; checkpoint saved in " + outcome.run_dir.string())
                                                 .c_str());
    throw py::error_already_set();
  }
  if (outcome.stop_signal != 0) {
    // The handler Python had is back: deliver the signal to it, as if training had not caught it.
    std::raise(outcome.stop_signal);
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  py::dict result;
  result["run_dir"] = outcome.run_dir.string();
  result["checkpoint"] = outcome.run_dir.empty() ? std::string() : cli::checkpoint_path(outcome.run_dir).string();
  result["algo"] = outcome.algo;
  result["env_id"] = outcome.env_id;
  result["global_step"] = outcome.state.global_step;
  result["updates"] = outcome.state.updates;
  result["wall_seconds"] = outcome.wall_seconds;
  result["stopped_early"] = stopped_by_callback.load();
  return result;
}

}  // namespace

void bind_training(py::module_& module) {
  module.def("train", &train, py::arg("config_files"), py::arg("overrides"), py::arg("env_id"), py::arg("seed"),
             py::arg("num_envs"), py::arg("num_threads"), py::arg("run_root"), py::arg("progress"), py::arg("algo"),
             py::arg("policy"), py::arg("total_timesteps"), py::arg("resume"), py::arg("callback"),
             "`concord train` with its flags (empty / 0 / -1: not given); concord.train() calls it.");
}

}  // namespace concord::python
