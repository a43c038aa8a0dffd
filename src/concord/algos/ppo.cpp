#include "concord/algos/ppo.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/randperm.h>
#include <c10/core/GradMode.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "concord/algos/gae.h"

namespace concord::algos {
namespace {

constexpr const char* kAlgorithm = "ppo";

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

// Every loss input is [n], n being new_log_probs' length (-1 when that is not 1-D itself).
void check_loss_input(const char* name, const at::Tensor& t, int64_t n) {
  if (t.defined() && t.dim() == 1 && t.size(0) == n) return;
  std::ostringstream out;
  out << "ppo_loss: " << name << " must be a 1-D tensor ["
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

// Checkpoint helpers, the same in a2c.cpp (candidates for a shared learner_checkpoint.h).

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

PpoConfig validated(PpoConfig config) {
  config.validate();
  return config;
}

torch::optim::AdamOptions adam_options(const PpoConfig& config) {
  return torch::optim::AdamOptions(config.learning_rate).eps(config.adam_eps);
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

void PpoConfig::validate() const {
  Problems problems;
  problems.check(learning_rate > 0.0, "learning_rate", learning_rate, "> 0");
  problems.check(num_steps >= 1, "num_steps", num_steps, ">= 1");
  problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
  problems.check(gae_lambda >= 0.0 && gae_lambda <= 1.0, "gae_lambda", gae_lambda, "in [0, 1]");
  problems.check(num_minibatches >= 1, "num_minibatches", num_minibatches, ">= 1");
  problems.check(update_epochs >= 1, "update_epochs", update_epochs, ">= 1");
  problems.check(clip_coef > 0.0, "clip_coef", clip_coef, "> 0");
  problems.check(ent_coef >= 0.0, "ent_coef", ent_coef, ">= 0");
  problems.check(vf_coef >= 0.0, "vf_coef", vf_coef, ">= 0");
  problems.check(max_grad_norm > 0.0, "max_grad_norm", max_grad_norm, "> 0");
  problems.check(target_kl >= 0.0, "target_kl", target_kl, ">= 0 (0 = off)");
  problems.check(adam_eps > 0.0, "adam_eps", adam_eps, "> 0");
  problems.throw_if_any("PpoConfig");
}

PpoLoss ppo_loss(const at::Tensor& new_log_probs, const at::Tensor& old_log_probs,
                 const at::Tensor& advantages, const at::Tensor& new_values,
                 const at::Tensor& old_values, const at::Tensor& returns, const at::Tensor& entropy,
                 double clip_coef, bool clip_vloss, double ent_coef, double vf_coef) {
  const int64_t n =
      new_log_probs.defined() && new_log_probs.dim() == 1 ? new_log_probs.size(0) : -1;
  check_loss_input("new_log_probs", new_log_probs, n);
  check_loss_input("old_log_probs", old_log_probs, n);
  check_loss_input("advantages", advantages, n);
  check_loss_input("new_values", new_values, n);
  check_loss_input("old_values", old_values, n);
  check_loss_input("returns", returns, n);
  check_loss_input("entropy", entropy, n);

  const at::Tensor logratio = new_log_probs - old_log_probs;
  const at::Tensor ratio = logratio.exp();

  // Policy loss: the pessimistic (max) of the unclipped and clipped surrogate losses.
  const at::Tensor pg_loss1 = -advantages * ratio;
  const at::Tensor pg_loss2 = -advantages * ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef);
  const at::Tensor pg_loss = pg_loss1.maximum(pg_loss2).mean();

  // Value loss, clipped around the values the rollout was collected with.
  const at::Tensor v_loss_unclipped = (new_values - returns).square();
  at::Tensor v_loss;
  if (clip_vloss) {
    const at::Tensor v_clipped =
        old_values + (new_values - old_values).clamp(-clip_coef, clip_coef);
    const at::Tensor v_loss_clipped = (v_clipped - returns).square();
    v_loss = 0.5 * v_loss_unclipped.maximum(v_loss_clipped).mean();
  } else {
    v_loss = 0.5 * v_loss_unclipped.mean();
  }

  const at::Tensor entropy_loss = entropy.mean();
  PpoLoss out;
  out.loss = pg_loss - ent_coef * entropy_loss + vf_coef * v_loss;
  out.policy_loss = pg_loss.detach();
  out.value_loss = v_loss.detach();
  out.entropy = entropy_loss.detach();

  // Diagnostics: how far the policy moved (http://joschu.net/blog/kl-approx.html).
  c10::NoGradGuard no_grad;
  out.old_approx_kl = (-logratio).mean();
  out.approx_kl = ((ratio - 1.0) - logratio).mean();
  out.clipfrac = (ratio - 1.0).abs().gt(clip_coef).to(at::kFloat).mean();
  return out;
}

Ppo::Ppo(PpoConfig config)
    : config_(validated(std::move(config))),
      model_(config_.network),
      optimizer_(model_->parameters(), adam_options(config_)) {}

Metrics Ppo::update(const Rollout& rollout, double progress) {
  const int64_t num_steps = rollout.num_steps();
  const int64_t batch_size = num_steps * rollout.num_envs();
  const int64_t min_batch = config_.num_minibatches * (config_.norm_adv ? 2 : 1);
  if (num_steps != config_.num_steps || batch_size < min_batch ||
      !(progress >= 0.0 && progress <= 1.0)) {
    std::ostringstream out;
    out << "Ppo::update: need T = num_steps = " << config_.num_steps << ", T * B >= " << min_batch
        << " (num_minibatches = " << config_.num_minibatches
        << (config_.norm_adv ? ", 2 samples each for norm_adv" : "")
        << ") and progress in [0, 1]; got T = " << num_steps << ", B = " << rollout.num_envs()
        << ", progress = " << progress;
    throw std::invalid_argument(out.str());
  }
  const at::Device device = model_->parameters().front().device();

  // Annealing the rate if instructed to do so.
  const double lr =
      config_.anneal_lr ? (1.0 - progress) * config_.learning_rate : config_.learning_rate;
  for (auto& group : optimizer_.param_groups()) group.options().set_lr(lr);

  // Bootstrap value if not done: GAE, truncated episodes bootstrapping from truncation_values.
  const at::Tensor values = rollout.values.detach().to(device);
  std::optional<at::Tensor> truncation_values;
  if (rollout.truncation_values.defined()) truncation_values = rollout.truncation_values.to(device);
  const GaeResult gae_result =
      gae(rollout.rewards.to(device), values, rollout.terminated.to(device),
          rollout.truncated.to(device), rollout.bootstrap_value.detach().to(device),
          truncation_values, config_.gamma, config_.gae_lambda);

  // Flatten the batch: [T, B, ...] -> [T * B, ...].
  const at::Tensor b_obs = rollout.observations.to(device).flatten(0, 1);
  const at::Tensor b_actions = rollout.actions.to(device).flatten(0, 1);
  const at::Tensor b_logprobs = rollout.log_probs.detach().to(device).reshape(-1);
  const at::Tensor b_advantages = gae_result.advantages.reshape(-1);
  const at::Tensor b_returns = gae_result.returns.reshape(-1);
  const at::Tensor b_values = values.reshape(-1);

  // Optimizing the policy and value network.
  PpoLoss last;
  double clipfrac_sum = 0.0;
  int64_t minibatches_run = 0;
  int64_t epochs_run = 0;
  for (int64_t epoch = 0; epoch < config_.update_epochs; ++epoch) {
    const at::Tensor b_inds = at::randperm(batch_size, at::kLong).to(device);
    for (const at::Tensor& mb_inds : b_inds.tensor_split(config_.num_minibatches)) {
      const nn::ActionEvaluation eval =
          model_->evaluate(b_obs.index_select(0, mb_inds), b_actions.index_select(0, mb_inds));

      at::Tensor mb_advantages = b_advantages.index_select(0, mb_inds);
      if (config_.norm_adv) {
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8);
      }

      last = ppo_loss(eval.log_prob, b_logprobs.index_select(0, mb_inds), mb_advantages, eval.value,
                      b_values.index_select(0, mb_inds), b_returns.index_select(0, mb_inds),
                      eval.entropy, config_.clip_coef, config_.clip_vloss, config_.ent_coef,
                      config_.vf_coef);

      optimizer_.zero_grad();
      last.loss.backward();
      torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.max_grad_norm);
      optimizer_.step();

      clipfrac_sum += last.clipfrac.item<double>();
      ++minibatches_run;
    }
    ++epochs_run;

    // Early stopping once the policy has moved too far from the one that collected the data.
    if (config_.target_kl > 0.0 && last.approx_kl.item<double>() > config_.target_kl) break;
  }
  ++updates_;

  return {
      {"charts/learning_rate", lr},
      {"charts/update_epochs", static_cast<double>(epochs_run)},
      {"losses/value_loss", last.value_loss.item<double>()},
      {"losses/policy_loss", last.policy_loss.item<double>()},
      {"losses/entropy", last.entropy.item<double>()},
      {"losses/old_approx_kl", last.old_approx_kl.item<double>()},
      {"losses/approx_kl", last.approx_kl.item<double>()},
      {"losses/clipfrac", clipfrac_sum / static_cast<double>(minibatches_run)},
      {"losses/explained_variance", explained_variance(b_values, b_returns)},
  };
}

void Ppo::save(core::Checkpoint& checkpoint) const {
  save_learner_state(checkpoint, kAlgorithm, model_, optimizer_, updates_);
}

void Ppo::load(const core::Checkpoint& checkpoint) {
  torch::optim::Adam scratch(model_->parameters(), adam_options(config_));
  updates_ = load_learner_state(checkpoint, kAlgorithm, model_, optimizer_, scratch);
}

}  // namespace concord::algos
