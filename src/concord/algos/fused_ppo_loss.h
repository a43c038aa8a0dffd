#pragma once

#include <ATen/core/Tensor.h>

#include "concord/algos/ppo.h"

namespace concord::algos {

// ppo_loss (ppo.h) as one autograd node: the same loss and the same detached terms, with the
// gradient with respect to new_log_probs, new_values and entropy written in closed form.
//
// Why: on CartPole-sized networks a PPO gradient step is bound by LibTorch's per-operation cost,
// and the loss's two dozen elementwise operations become about as many autograd nodes, each
// dispatched again in backward. Here they run once, without recording, and backward is three
// products. The network and the action distribution stay under autograd as before.
//
// The gradient follows LibTorch's own conventions at the kinks, so it matches ppo_loss's to
// rounding: at a tie, maximum() sends half the gradient to each side, and clamp() passes it
// where min <= x <= max (bounds included). Inputs are [N] as for ppo_loss; only new_log_probs,
// new_values and entropy may require grad. tests/algos/fused_ppo_loss_test.cpp pins loss, terms
// and gradients against ppo_loss, and one whole update against the unfused path.
PpoLoss fused_ppo_loss(const at::Tensor& new_log_probs, const at::Tensor& old_log_probs, const at::Tensor& advantages,
                       const at::Tensor& new_values, const at::Tensor& old_values, const at::Tensor& returns,
                       const at::Tensor& entropy, double clip_coef, bool clip_vloss, double ent_coef, double vf_coef);

}  // namespace concord::algos
