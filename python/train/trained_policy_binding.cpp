// concord._train.TrainedPolicy and evaluate(): a checkpoint of `concord train` as an actor over
// numpy batches, and `concord eval`'s numbers (cli::evaluate_trained_checkpoint).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch/torch.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../shape_text.h"
#include "concord/cli/trained_agent.h"
#include "concord/core/torch_thread.h"
#include "training_bindings.h"

namespace concord::python {
namespace {

class TrainedPolicy {
 public:
  explicit TrainedPolicy(const std::string& path) : TrainedPolicy(cli::read_trained_checkpoint(path)) {}

  // A batch [B, *observation shape] -> B actions; one observation -> one action.
  py::array act(const py::array& observations, bool deterministic) {
    if (learner_->acts_with_memory()) {
      throw py::value_error(
          "act(): this agent has memory (algo.recurrent): use act_with_state(obs, state, episode_start), which "
          "also returns the state to pass with the next observations");
    }
    bool single = false;
    const torch::Tensor input = observation_tensor(observations, single);
    return to_numpy(act_on(algos::ActorInput(input), deterministic).actions, single);
  }

  // The same for an agent with memory: `state` is what the last call returned for these envs (None
  // at the first: every env starts from the initial state), `episode_start` [B] is true where an
  // observation is the first of an episode (that env's state is reset first; None: none). Returns
  // (actions, next state), the state a dict of float32 arrays [B, ...]; an empty dict for a
  // feed-forward agent.
  py::tuple act_with_state(const py::array& observations, const std::optional<py::dict>& state,
                           const std::optional<py::array>& episode_start, bool deterministic) {
    bool single = false;
    const torch::Tensor input = observation_tensor(observations, single);
    const int64_t batch = input.size(0);
    core::TensorMap state_in;
    if (state) {
      for (const auto& item : *state) {
        const std::string name = py::str(item.first);
        const auto values = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(item.second);
        if (!values || values.ndim() < 1 || values.shape(0) != batch) {
          throw py::value_error("act_with_state(): state['" + name + "'] must be an array with " +
                                std::to_string(batch) + " rows, one per observation");
        }
        std::vector<int64_t> shape(values.shape(), values.shape() + values.ndim());
        state_in[name] = torch::from_blob(const_cast<float*>(values.data()), shape, torch::kFloat32).clone();
      }
    }
    torch::Tensor starts;
    if (episode_start) {
      const auto values = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(*episode_start);
      if (!values || values.size() != batch) {
        throw py::value_error("act_with_state(): episode_start must hold " + std::to_string(batch) +
                              " values, one per observation");
      }
      starts = torch::from_blob(const_cast<float*>(values.data()), {batch}, torch::kFloat32).clone();
    }
    algos::ActorOutput out;
    try {
      out = act_on(algos::ActorInput(input, std::move(state_in), starts), deterministic);
    } catch (const std::invalid_argument& error) {
      throw py::value_error(std::string("act_with_state(): ") + error.what());
    }
    py::dict state_out;
    for (const auto& [name, tensor] : out.state) {
      const torch::Tensor values = tensor.to(torch::kCPU, torch::kFloat32).contiguous();
      py::array_t<float> array(std::vector<py::ssize_t>(values.sizes().begin(), values.sizes().end()));
      std::memcpy(array.mutable_data(), values.data_ptr<float>(), static_cast<size_t>(array.size()) * sizeof(float));
      state_out[py::str(name)] = std::move(array);
    }
    return py::make_tuple(to_numpy(out.actions, single), state_out);
  }

  const envs::EnvSpec& spec() const { return spec_; }
  const std::string& algo() const { return algo_; }
  int64_t global_step() const { return global_step_; }
  const std::string& checkpoint() const { return checkpoint_; }

 private:
  // The observations as the model takes them; `single` is set for one observation without a batch.
  torch::Tensor observation_tensor(const py::array& observations, bool& single) const {
    const envs::Space& space = spec_.observation_space;
    const std::vector<int64_t>& shape = space.shape();
    single = observations.ndim() == static_cast<py::ssize_t>(shape.size());
    bool fits = single || observations.ndim() == static_cast<py::ssize_t>(shape.size() + 1);
    for (size_t d = 0; fits && d < shape.size(); ++d) {
      fits = observations.shape(static_cast<py::ssize_t>(d + (single ? 0 : 1))) == shape[d];
    }
    if (!fits) {
      std::vector<int64_t> got(observations.shape(), observations.shape() + observations.ndim());
      throw py::value_error("act(): observations must be shaped (batch, *" + shape_text(shape) + ") or " +
                            shape_text(shape) + " for " + spec_.id + ", got " + shape_text(got));
    }
    const int64_t batch = single ? 1 : observations.shape(0);
    std::vector<int64_t> tensor_shape{batch};
    for (int64_t dim : space.tensor_shape()) tensor_shape.push_back(dim);
    // The model takes the space's dtype (uint8 grids are converted inside it, as in training).
    if (space.dtype() == envs::Dtype::kUInt8) return from_numpy<uint8_t>(observations, torch::kUInt8, tensor_shape);
    return from_numpy<float>(observations, torch::kFloat32, tensor_shape);
  }

  // The actor on `input`, actions clipped to a Box's bounds, without the GIL.
  algos::ActorOutput act_on(const algos::ActorInput& input, bool deterministic) {
    py::gil_scoped_release release;
    torch::NoGradGuard no_grad;
    algos::ActingContext acting;  // after training: DQN's final epsilon when not deterministic
    acting.deterministic = deterministic;
    algos::ActorOutput out = learner_->actor().act(input, acting);
    if (!spec_.action_space.is_discrete()) out.actions = torch::max(torch::min(out.actions, high_), low_);
    out.actions = out.actions.contiguous();
    return out;
  }

  explicit TrainedPolicy(const cli::TrainedCheckpoint& trained) : TrainedPolicy(trained, restore(trained)) {}

  TrainedPolicy(const cli::TrainedCheckpoint& trained, cli::TrainedAgent agent)
      : spec_(std::move(agent.spec)),
        learner_(std::move(agent.learner)),
        algo_(trained.config.get_string("train.algo")),
        global_step_(trained.global_step),
        checkpoint_(trained.file.string()) {
    const envs::Space& actions = spec_.action_space;
    if (!actions.is_discrete()) {
      low_ = torch::tensor(actions.low()).view(actions.tensor_shape());
      high_ = torch::tensor(actions.high()).view(actions.tensor_shape());
    }
  }

  static cli::TrainedAgent restore(const cli::TrainedCheckpoint& trained) {
    torch::set_num_threads(static_cast<int>(trained.config.get_int("run.torch_threads")));
    return cli::restore_trained_agent(trained);
  }

  template <typename Element>
  static torch::Tensor from_numpy(const py::array& observations, torch::Dtype dtype,
                                  const std::vector<int64_t>& tensor_shape) {
    const auto values = py::array_t<Element, py::array::c_style | py::array::forcecast>::ensure(observations);
    if (!values) throw py::error_already_set();
    return torch::from_blob(const_cast<Element*>(values.data()), tensor_shape, dtype).clone();
  }

  py::array to_numpy(const torch::Tensor& actions, bool single) const {
    const envs::Space& space = spec_.action_space;
    std::vector<py::ssize_t> shape;
    if (!single) shape.push_back(actions.size(0));
    if (space.is_discrete()) {
      py::array_t<int64_t> result(shape);
      std::memcpy(result.mutable_data(), actions.data_ptr<int64_t>(), result.size() * sizeof(int64_t));
      return std::move(result);
    }
    for (int64_t dim : space.shape()) shape.push_back(dim);
    py::array_t<float> result(shape);
    std::memcpy(result.mutable_data(), actions.data_ptr<float>(), result.size() * sizeof(float));
    return std::move(result);
  }

  envs::EnvSpec spec_;
  std::unique_ptr<algos::Learner> learner_;  // owns the actor's parameters
  torch::Tensor low_, high_;                 // continuous actions' bounds
  std::string algo_;
  int64_t global_step_ = 0;
  std::string checkpoint_;
};

py::dict evaluate(const std::string& path, std::optional<int64_t> episodes, std::optional<uint64_t> seed,
                  bool stochastic, std::optional<int> step_limit) {
  if (episodes && (*episodes < 1 || *episodes > 10000)) {
    throw py::value_error("evaluate(): episodes must be in [1, 10000], got " + std::to_string(*episodes));
  }
  cli::EvaluationReport report;
  {
    const core::RestoreFlushDenormals restore_denormals;  // as train() does
    py::gil_scoped_release release;                       // the envs may be Python envs, stepped holding the GIL
    report = cli::evaluate_trained_checkpoint(path, episodes, seed, stochastic,
                                              step_limit.value_or(policies::runtime::kEvaluationStepLimit));
  }
  py::dict result;
  result["algo"] = report.algo;
  result["env_id"] = report.env_id;
  result["global_step"] = report.global_step;
  result["episodes"] = report.episodes;
  result["seed"] = report.seed;
  result["stochastic"] = report.stochastic;
  result["returns"] = report.returns;
  result["mean"] = report.summary.mean;
  result["std"] = report.summary.std;
  result["cut_at_limit"] = report.cut_at_limit;  // episodes truncated where the env has no time limit
  result["step_limit"] = report.step_limit;
  return result;
}

}  // namespace

void bind_trained_policy(py::module_& module) {
  py::class_<TrainedPolicy>(module, "TrainedPolicy")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("act", &TrainedPolicy::act, py::arg("obs"), py::arg("deterministic") = true,
           "Actions for a batch of observations [B, *shape] (or one observation): int64 [B] for a discrete "
           "action space, float32 [B, *shape] clipped to the bounds for a Box. deterministic=False samples from "
           "LibTorch's global generator.")
      .def("act_with_state", &TrainedPolicy::act_with_state, py::arg("obs"), py::arg("state") = py::none(),
           py::arg("episode_start") = py::none(), py::arg("deterministic") = true,
           "(actions, next state) for an agent with memory (algo.recurrent): state is what the last call returned "
           "for these envs (None at the first), episode_start [B] true where an observation begins an episode. "
           "The state is a dict of float32 arrays [B, ...], empty for a feed-forward agent.")
      .def_property_readonly("env_id", [](const TrainedPolicy& self) { return self.spec().id; })
      .def_property_readonly("algo", &TrainedPolicy::algo)
      .def_property_readonly("global_step", &TrainedPolicy::global_step)
      .def_property_readonly("checkpoint", &TrainedPolicy::checkpoint)
      .def("__repr__", [](const TrainedPolicy& self) {
        return "TrainedPolicy('" + self.checkpoint() + "', " + self.algo() + " on " + self.spec().id + " after " +
               std::to_string(self.global_step()) + " steps)";
      });
  module.def("evaluate", &evaluate, py::arg("path"), py::arg("episodes") = py::none(), py::arg("seed") = py::none(),
             py::arg("stochastic") = false, py::arg("max_episode_steps") = py::none(),
             "`concord eval`'s numbers; concord.evaluate() calls it.");
}

}  // namespace concord::python
