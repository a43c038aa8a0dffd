#include <pybind11/pybind11.h>

#include <stdexcept>

#include "bindings.h"
#include "python_env.h"

namespace py = pybind11;

namespace {

constexpr const char* kDoc = R"doc(Concord's vector environments with Gymnasium 1.x's vector API.

    envs = concord.make("CartPole-v1", num_envs=8, seed=0)
    obs, info = envs.reset(seed=42)
    obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())
    envs.close()

Autoreset: Gymnasium's SAME_STEP mode (metadata["autoreset_mode"]). On the step that ends an
episode the env is reset at once: the returned observation is the new episode's first, and the
ended episode's last observation is info["final_obs"][i] where info["_final_obs"][i]. Unlike
Gymnasium's object array of per-env observations, info["final_obs"] is one dense array shaped
like the observations (zeros where the mask is False). info["final_info"] holds the ended steps'
own info (a MuJoCo task's reward terms and positions; {} for the other envs, which report none)
with its mask info["_final_info"]. The same step puts the ended
episodes' totals in info["episode"] = {"r": float32 returns, "l": int32 lengths} with the mask
info["_episode"], as RecordEpisodeStatistics does (without its "t"). These keys appear only on
steps where some episode ended.

Seeding: reset(seed=s) seeds env i with a SplitMix64 hash of (s, i), not Gymnasium's s + i, so
that runs seeded s and s + 1 share no env stream; make(seed=...) is used by the first reset
without a seed; each env's trajectory depends only on the seed and its own actions, not on
num_threads. Per-env seed lists and reset options are not supported.

Copies: every array returned is a fresh copy that the caller owns. The engine reuses its batch
buffers on the next step, so views would change under the caller; one copy per step costs little
beside the Python loop around it.

Types follow the engine: observations in the observation space's dtype (uint8 for MinAtar, no
conversion to float), rewards float32, terminated / truncated bool. Discrete actions are integer
arrays [num_envs]; Box actions float arrays [num_envs, *shape], passed on unclipped as in
Gymnasium. Bad actions raise ValueError before any env steps.

Threads: the GIL is released while the engine resets or steps. One VectorEnv serves one Python
thread at a time (a concurrent call raises RuntimeError).

Asynchronous (EnvPool style): make(..., batch_size=B) with B < num_envs. async_reset() queues a
reset of every env; send(actions, env_id) queues steps for those envs; recv() returns the first
B results to finish as (obs, rewards, terminated, truncated, info) with info["env_id"] naming
their envs. reset() and step(actions, env_id) are async_reset()/send() followed by recv().
)doc";

}  // namespace

PYBIND11_MODULE(_envs, module) {
  module.doc() = kDoc;
  // The engine reports a bad action or env id as std::out_of_range, which pybind11 would raise as
  // IndexError; to Python callers it is a bad argument like the others.
  py::register_local_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  concord::python::bind_spaces(module);
  concord::python::bind_vector_env(module);
  concord::python::bind_env_registration(module);
}
