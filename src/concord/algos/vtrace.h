#pragma once

#include <ATen/core/Tensor.h>

namespace concord::algos {

// The output of vtrace(): both [T, B], with the dtype and device of rewards.
struct VTraceResult {
  at::Tensor vs;             // v_s, the value targets
  at::Tensor pg_advantages;  // the advantages that weight the policy-gradient term
};

// IMPALA's V-trace off-policy value targets (Espeholt et al., 2018), with lambda = 1.
//
// Row t of every [T, B] tensor is one transition per environment b, taken by the behaviour
// policy mu from observation o_t: values[t] = V(o_t) under the learner's value function, reward
// rewards[t], discounts[t] = gamma * (1 - terminated[t]) (0 when the step ended the episode by
// termination), behaviour_log_probs[t] = log mu(a_t | o_t) and target_log_probs[t] =
// log pi(a_t | o_t) of the action that was taken. bootstrap_value[b] = V(o_T) follows the last
// row, and V_T = v_T = bootstrap_value below.
//
//   pi / mu = exp(target_log_probs[t] - behaviour_log_probs[t])
//   rho_t   = min(rho_bar, pi / mu),   c_t = min(c_bar, pi / mu)
//   delta_t = rho_t * (rewards[t] + discounts[t] * V_{t+1} - V_t)
//   v_t     = V_t + delta_t + discounts[t] * c_t * (v_{t+1} - V_{t+1})      (backwards in t)
//   pg_advantages[t] = rho_t * (rewards[t] + discounts[t] * v_{t+1} - V_t)
//
// The policy-gradient clipping uses rho_bar too (IMPALA's clip_pg_rho_threshold equals
// clip_rho_threshold by default). On-policy (equal log-probs) with rho_bar, c_bar >= 1, vs is
// the discounted return bootstrapped from bootstrap_value, i.e. n_step_returns() with the same
// terminations and no truncations.
//
// Truncation: the discounts carry terminations only. A step that Gymnasium truncated (and
// auto-reset) keeps discount gamma here, so it bootstraps from values[t + 1], the first
// observation of the next episode; a caller that wants no bootstrap there sets discounts[t] to
// 0 as for a termination.
//
// Shapes and types: every [T, B] input and bootstrap_value [B] are float tensors of one dtype
// on one device, which may be any device. The recursion runs under NoGradGuard, so the results
// are new tensors that never require grad, whatever the inputs do. T may be 0. rho_bar and
// c_bar must be positive (infinity disables clipping). Throws std::invalid_argument, naming the
// offending shapes, dtypes, devices or values.
VTraceResult vtrace(const at::Tensor& behaviour_log_probs, const at::Tensor& target_log_probs,
                    const at::Tensor& rewards, const at::Tensor& values, const at::Tensor& bootstrap_value,
                    const at::Tensor& discounts, double rho_bar = 1.0, double c_bar = 1.0);

}  // namespace concord::algos
