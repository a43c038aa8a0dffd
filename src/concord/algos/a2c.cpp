#include "concord/algos/a2c.h"

#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "concord/algos/gae.h"
#include "concord/algos/returns.h"

namespace concord::algos {
namespace {

constexpr const char* kAlgorithm = "a2c";

// Collects "field=value must ..." problems and throws them as one std::invalid_argument.
class Problems {
 public:
  template <typename T>
  void check(bool ok, const char* field, T value, const char* requirement) {
    if (ok) return;
    std::ostringstream out;
    out << field << "=" << value << " must be " << requirement;
    problems_.push_back(out.str());
  }
  void throw_if_any(const std::string& what) const {
    if (problems_.empty()) return;
    std::string message = "invalid " + what + ":";
    for (const std::string& problem : problems_) message += " " + problem + ";";
    message.pop_back();
    throw std::invalid_argument(message);
  }

 private:
  std::vector<std::string> problems_;
};

// Every loss input is [n], n being log_probs' length (-1 when that is not 1-D itself).
void check_loss_input(const char* name, const at::Tensor& t, int64_t n) {
  if (t.defined() && t.dim() == 1 && t.size(0) == n) return;
  std::ostringstream out;
  out << "a2c_loss: " << name << " must be a 1-D tensor ["
      << (n >= 0 ? std::to_string(n) : std::string("N")) << "], got ";
  if (t.defined()) {
    out << t.sizes();
  } else {
    out << "an undefined tensor";
  }
  throw std::invalid_argument(out.str());
}

// 1 - Var(y - y_pred) / Var(y), NaN when Var(y) = 0 (population variances, as numpy's np.var).
double explained_variance(const at::Tensor& y_pred, const at::Tensor& y_true) {
  const double var_y = y_true.var(/*unbiased=*/false).item<double>();
  if (var_y == 0.0) return std::numeric_limits<double>::quiet_NaN();
  return 1.0 - y_true.sub(y_pred).var(/*unbiased=*/false).item<double>() / var_y;
}

// Checkpoint helpers, the same in ppo.cpp (candidates for a shared learner_checkpoint.h).

at::Tensor optimizer_to_bytes(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream stream;
  archive.save_to(stream);
  const std::string bytes = stream.str();
  at::Tensor tensor = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::memcpy(tensor.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return tensor;
}

// Replaces the optimiser's state (LibTorch's load() keeps the state of parameters the archive
// lacks, so it is cleared first); its tensors go to `device`.
void optimizer_from_bytes(const at::Tensor& bytes, torch::optim::Optimizer& optimizer,
                          const at::Device& device) {
  if (bytes.scalar_type() != at::kByte || bytes.dim() != 1) {
    throw std::invalid_argument("expected a 1-D uint8 tensor");
  }
  const at::Tensor contiguous = bytes.to(at::kCPU).contiguous();
  torch::serialize::InputArchive archive;
  archive.load_from(reinterpret_cast<const char*>(contiguous.data_ptr<uint8_t>()),
                    static_cast<size_t>(contiguous.numel()), device);
  optimizer.state().clear();
  optimizer.load(archive);
}

A2cConfig validated(A2cConfig config) {
  config.validate();
  return config;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const A2cConfig& config,
                                                        const nn::ActorCritic& model) {
  if (config.optimizer == "adam") {
    return std::make_unique<torch::optim::Adam>(
        model->parameters(),
        torch::optim::AdamOptions(config.learning_rate).eps(config.optimizer_eps));
  }
  return std::make_unique<torch::optim::RMSprop>(model->parameters(),
                                                 torch::optim::RMSpropOptions(config.learning_rate)
                                                     .alpha(config.rmsprop_alpha)
                                                     .eps(config.optimizer_eps));
}

[[noreturn]] void corrupt(const std::string& problem) {
  throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, "", problem);
}

// Parameters as "model/<name>", the optimiser state as "optimizer", metadata "algorithm" and
// "updates".
void save_learner_state(core::Checkpoint& checkpoint, const std::string& algorithm,
                        const nn::ActorCritic& model, const torch::optim::Optimizer& optimizer,
                        int64_t updates) {
  for (const auto& parameter : model->named_parameters()) {
    checkpoint.tensors["model/" + parameter.key()] = parameter.value().detach().clone();
  }
  checkpoint.tensors["optimizer"] = optimizer_to_bytes(optimizer);
  checkpoint.metadata["algorithm"] = algorithm;
  checkpoint.metadata["updates"] = updates;
}

// The inverse of save_learner_state; returns the update count. Checks everything (reading the
// optimiser state into `scratch`, an optimiser of the same kind over the same parameters) before
// changing anything.
int64_t load_learner_state(const core::Checkpoint& checkpoint, const std::string& algorithm,
                           const nn::ActorCritic& model, torch::optim::Optimizer& optimizer,
                           torch::optim::Optimizer& scratch) {
  const nlohmann::json& metadata = checkpoint.metadata;
  if (!metadata.contains("algorithm") || metadata["algorithm"] != algorithm) {
    corrupt("metadata \"algorithm\" is " +
            (metadata.contains("algorithm") ? metadata["algorithm"].dump() : "missing") +
            ", expected \"" + algorithm + "\"");
  }
  if (!metadata.contains("updates") || !metadata["updates"].is_number_integer()) {
    corrupt("metadata \"updates\" is missing or not an integer");
  }
  // Every parameter present with its shape, and nothing else under "model/".
  const auto parameters = model->named_parameters();
  for (const auto& parameter : parameters) {
    const std::string name = "model/" + parameter.key();
    const auto found = checkpoint.tensors.find(name);
    if (found == checkpoint.tensors.end()) {
      throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "",
                                  "tensor \"" + name + "\" is missing");
    }
    if (found->second.sizes() != parameter.value().sizes()) {
      std::ostringstream out;
      out << "tensor \"" << name << "\" has shape " << found->second.sizes() << ", the model's is "
          << parameter.value().sizes();
      corrupt(out.str());
    }
  }
  for (const auto& entry : checkpoint.tensors) {
    if (entry.first.rfind("model/", 0) == 0 && !parameters.contains(entry.first.substr(6))) {
      corrupt("tensor \"" + entry.first + "\" is not a parameter of this model");
    }
  }
  const auto state = checkpoint.tensors.find("optimizer");
  if (state == checkpoint.tensors.end()) {
    throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "",
                                "tensor \"optimizer\" is missing");
  }
  const at::Device device = parameters.front().value().device();
  try {
    optimizer_from_bytes(state->second, scratch, device);
  } catch (const std::exception& error) {
    corrupt(std::string("tensor \"optimizer\" is not a readable optimiser state: ") + error.what());
  }

  {
    c10::NoGradGuard no_grad;
    for (const auto& parameter : parameters) {
      parameter.value().copy_(checkpoint.tensors.at("model/" + parameter.key()));
    }
  }
  optimizer_from_bytes(state->second, optimizer, device);
  return metadata["updates"].get<int64_t>();
}

}  // namespace

void A2cConfig::validate() const {
  Problems problems;
  problems.check(learning_rate > 0.0, "learning_rate", learning_rate, "> 0");
  problems.check(num_steps >= 1, "num_steps", num_steps, ">= 1");
  problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
  problems.check(gae_lambda >= 0.0 && gae_lambda <= 1.0, "gae_lambda", gae_lambda, "in [0, 1]");
  problems.check(optimizer == "rmsprop" || optimizer == "adam", "optimizer",
                 "\"" + optimizer + "\"", "\"rmsprop\" or \"adam\"");
  problems.check(rmsprop_alpha >= 0.0 && rmsprop_alpha < 1.0, "rmsprop_alpha", rmsprop_alpha,
                 "in [0, 1)");
  problems.check(optimizer_eps > 0.0, "optimizer_eps", optimizer_eps, "> 0");
  problems.check(ent_coef >= 0.0, "ent_coef", ent_coef, ">= 0");
  problems.check(vf_coef >= 0.0, "vf_coef", vf_coef, ">= 0");
  problems.check(max_grad_norm > 0.0, "max_grad_norm", max_grad_norm, "> 0");
  problems.throw_if_any("A2cConfig");
}

A2cLoss a2c_loss(const at::Tensor& log_probs, const at::Tensor& advantages,
                 const at::Tensor& values, const at::Tensor& returns, const at::Tensor& entropy,
                 double ent_coef, double vf_coef) {
  const int64_t n = log_probs.defined() && log_probs.dim() == 1 ? log_probs.size(0) : -1;
  check_loss_input("log_probs", log_probs, n);
  check_loss_input("advantages", advantages, n);
  check_loss_input("values", values, n);
  check_loss_input("returns", returns, n);
  check_loss_input("entropy", entropy, n);

  // Policy gradient: raise the log-probability of actions in proportion to their advantage.
  const at::Tensor policy_loss = -(advantages.detach() * log_probs).mean();
  // Value regression towards the bootstrapped returns.
  const at::Tensor value_loss = (returns - values).square().mean();
  // Entropy bonus, against premature convergence.
  const at::Tensor entropy_mean = entropy.mean();

  A2cLoss out;
  out.loss = policy_loss + vf_coef * value_loss - ent_coef * entropy_mean;
  out.policy_loss = policy_loss.detach();
  out.value_loss = value_loss.detach();
  out.entropy = entropy_mean.detach();
  return out;
}

A2c::A2c(A2cConfig config)
    : config_(validated(std::move(config))),
      model_(config_.network),
      optimizer_(make_optimizer(config_, model_)) {}

Metrics A2c::update(const Rollout& rollout, double progress) {
  const int64_t num_steps = rollout.num_steps();
  const int64_t batch_size = num_steps * rollout.num_envs();
  const int64_t min_batch = config_.norm_adv ? 2 : 1;
  if (num_steps != config_.num_steps || batch_size < min_batch ||
      !(progress >= 0.0 && progress <= 1.0)) {
    std::ostringstream out;
    out << "A2c::update: need T = num_steps = " << config_.num_steps << ", T * B >= " << min_batch
        << " and progress in [0, 1]; got T = " << num_steps << ", B = " << rollout.num_envs()
        << ", progress = " << progress;
    throw std::invalid_argument(out.str());
  }
  const at::Device device = model_->parameters().front().device();

  // Annealing the rate if instructed to do so.
  const double lr =
      config_.anneal_lr ? (1.0 - progress) * config_.learning_rate : config_.learning_rate;
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);

  // Bootstrapped returns: n-step (gae_lambda = 1) or GAE's, truncated episodes bootstrapping
  // from truncation_values; advantage = return - value when acting.
  const at::Tensor values = rollout.values.detach().to(device);
  const at::Tensor rewards = rollout.rewards.to(device);
  const at::Tensor terminated = rollout.terminated.to(device);
  const at::Tensor truncated = rollout.truncated.to(device);
  const at::Tensor bootstrap_value = rollout.bootstrap_value.detach().to(device);
  std::optional<at::Tensor> truncation_values;
  if (rollout.truncation_values.defined()) truncation_values = rollout.truncation_values.to(device);
  const at::Tensor returns = config_.gae_lambda == 1.0
                                 ? n_step_returns(rewards, terminated, truncated, values,
                                                  bootstrap_value, truncation_values, config_.gamma)
                                 : gae(rewards, values, terminated, truncated, bootstrap_value,
                                       truncation_values, config_.gamma, config_.gae_lambda)
                                       .returns;

  // Flatten the batch: [T, B, ...] -> [T * B, ...].
  const at::Tensor b_obs = rollout.observations.to(device).flatten(0, 1);
  const at::Tensor b_actions = rollout.actions.to(device).flatten(0, 1);
  const at::Tensor b_returns = returns.reshape(-1);
  const at::Tensor b_values = values.reshape(-1);
  at::Tensor b_advantages = b_returns - b_values;
  if (config_.norm_adv) {
    b_advantages = (b_advantages - b_advantages.mean()) / (b_advantages.std() + 1e-8);
  }

  // One gradient step on the whole batch.
  const nn::ActionEvaluation eval = model_->evaluate(b_obs, b_actions);
  const A2cLoss loss = a2c_loss(eval.log_prob, b_advantages, eval.value, b_returns, eval.entropy,
                                config_.ent_coef, config_.vf_coef);
  optimizer_->zero_grad();
  loss.loss.backward();
  torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.max_grad_norm);
  optimizer_->step();
  ++updates_;

  return {
      {"charts/learning_rate", lr},
      {"losses/value_loss", loss.value_loss.item<double>()},
      {"losses/policy_loss", loss.policy_loss.item<double>()},
      {"losses/entropy", loss.entropy.item<double>()},
      {"losses/explained_variance", explained_variance(b_values, b_returns)},
  };
}

void A2c::save(core::Checkpoint& checkpoint) const {
  save_learner_state(checkpoint, kAlgorithm, model_, *optimizer_, updates_);
}

void A2c::load(const core::Checkpoint& checkpoint) {
  const std::unique_ptr<torch::optim::Optimizer> scratch = make_optimizer(config_, model_);
  updates_ = load_learner_state(checkpoint, kAlgorithm, model_, *optimizer_, *scratch);
}

}  // namespace concord::algos
