#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

namespace concord::algos {

// N-step transitions for replay-based algorithms (n-step DQN, Ape-X, R2D2-style targets), with
// Gymnasium's two kinds of episode end. The learner's target for a stored transition is
//
//   y_t = G_t + discount_t * max_a Q(bootstrap observation, a)       (or V, or a soft value)
//
// and this file computes G_t, discount_t and which observation bootstraps, either over a
// recorded segment (n_step_targets) or step by step as a collector sees them (NStepQueue).
//
// Layout: as in returns.h, row t of a [T, B] segment is one env.step of each of B
// environments: the agent saw observation o_t, the step returned rewards[t], terminated[t] and
// truncated[t], and led to next_observations[t]. With Gymnasium's same-step autoreset the
// observation the agent sees at t + 1 is already the next episode's first one when step t
// ended an episode, so next_observations[t] must be the *final* observation of the ended
// episode there (info["final_observation"]), which the caller stores; otherwise it equals
// o_{t+1}.
//
// For each start t, the window is m_t steps long:
//   m_t = min(n, e_t - t + 1, T - t)
// where e_t is the first step k >= t with terminated[k] or truncated[k] (infinite if none).
// So the window stops at the end of the episode and at the end of the segment, whichever
// comes first, and otherwise after n steps. Then
//   G_t              = sum_{k < m_t} gamma^k rewards[t + k]
//   bootstrap_step_t = t + m_t - 1: the bootstrap observation is next_observations[t + m_t - 1]
//                      (= o_{t + m_t} when the window ended neither an episode nor the segment)
//   bootstrap_t      = false if the window ends with a termination (terminated[t + m_t - 1]),
//                      true otherwise: after a truncation (the episode was cut off by a time
//                      limit, not finished, so the final observation still has a value), after
//                      n steps, and at the end of the segment (the episode goes on)
//   discount_t       = gamma^{m_t} if bootstrap_t, else 0
// Termination wins when both flags are set. A truncation is therefore not a termination: its
// window is cut (rewards of the next episode never enter G_t) but the target still bootstraps,
// from the final observation of the truncated episode. The window never crosses an episode end.
//
// gamma^k is formed by repeated multiplication and G_t accumulated in float64 in order of k,
// by both forms below, so that they agree bit for bit.

// The output of n_step_targets(): all [T, B], on the device of rewards.
struct NStepTargets {
  at::Tensor returns;          // G_t, dtype of rewards
  at::Tensor discounts;        // gamma^{m_t}, or 0 where the window ends in a termination; dtype of rewards
  at::Tensor bootstrap;        // bool: whether the target bootstraps at all
  at::Tensor bootstrap_steps;  // int64: t + m_t - 1, the row of next_observations to bootstrap from
  at::Tensor steps;            // int64: m_t, in [1, n]
};

// The batch form, over a time-major segment of B environments. rewards is a [T, B]
// floating-point tensor; terminated and truncated are [T, B] bool tensors or tensors of any
// dtype where nonzero means set, on rewards' device (any device; the work is done on the CPU,
// since it is O(T B n) scalar work). T may be 0. gamma must lie in [0, 1]; n >= 1. Throws
// std::invalid_argument naming the offending shape, dtype, device or value. The results do not
// require grad.
NStepTargets n_step_targets(const at::Tensor& rewards, const at::Tensor& terminated, const at::Tensor& truncated,
                            double gamma, int64_t n);

// One n-step transition, as NStepQueue emits it for the replay buffer.
struct NStepTransition {
  at::Tensor observation;            // o_t
  at::Tensor action;                 // a_t
  double reward = 0.0;               // G_t
  at::Tensor bootstrap_observation;  // next_observation of step t + m - 1 (see above)
  double discount = 0.0;             // gamma^m, or 0 if the window ends in a termination
  bool bootstrap = false;            // discount's condition, explicit (gamma may be 0)
  int64_t steps = 0;                 // m, in [1, n]
  // The acting network's estimates, where push() was given them (ActingEstimates; NaN where
  // not): Q(o_t, a_t) of step t, and the value of the bootstrap observation, from step t + m - 1.
  // A prioritised replay's initial priority is then |G_t + discount * bootstrap_value - q_first|.
  double q_first = std::numeric_limits<double>::quiet_NaN();
  double bootstrap_value = std::numeric_limits<double>::quiet_NaN();
};

// What the network that acted estimated for one step (Ape-X's actors): Q(o_t, a_t) and
// max_a Q(next_observation_t, a). NaN: not estimated.
struct ActingEstimates {
  double q_taken = std::numeric_limits<double>::quiet_NaN();
  double next_value = std::numeric_limits<double>::quiet_NaN();
};

// The incremental form for one environment: a collector pushes each step as it happens and
// receives the n-step transitions that are complete. Keep one queue per environment.
//
//   push(o_t, a_t, r_t, terminated_t, truncated_t, next_o_t) returns, oldest first,
//   - every pending transition, if step t ended the episode (terminated or truncated): each
//     window is cut at the episode end, and the queue is left empty for the next episode;
//   - else the oldest pending transition, if it now has n steps (its window is full);
//   - else nothing.
//   flush() returns every pending transition as if the segment ended here: each bootstraps
//   from the last pushed next_observation with discount gamma^m. Call it only when no more
//   steps will come (end of collection); a collector that keeps running keeps its queue, so
//   pending transitions wait for their full n steps.
//
// Pushing a segment row by row and then calling flush() yields exactly n_step_targets() on that
// segment (same G, discount, bootstrap flag, steps and bootstrap observation), in order of t.
// Tensors are kept by reference, not copied: pass tensors that will not be modified in place
// afterwards (a fresh step result, or a clone of a reused buffer). Holds at most n steps. Not
// thread-safe.
class NStepQueue {
 public:
  // gamma in [0, 1], n >= 1; throws std::invalid_argument otherwise.
  NStepQueue(int64_t n, double gamma);

  std::vector<NStepTransition> push(at::Tensor observation, at::Tensor action, double reward, bool terminated,
                                    bool truncated, at::Tensor next_observation, ActingEstimates estimates = {});
  std::vector<NStepTransition> flush();

  // Steps pushed whose transitions have not been emitted yet.
  int64_t pending() const { return static_cast<int64_t>(steps_.size()); }
  int64_t n() const { return n_; }
  double gamma() const { return gamma_; }

 private:
  struct Step {
    at::Tensor observation;
    at::Tensor action;
    double reward;
    at::Tensor next_observation;
    ActingEstimates estimates;
  };
  // The transition of the oldest pending step, its window running to the newest step.
  NStepTransition front_transition(bool terminated) const;

  int64_t n_;
  double gamma_;
  std::deque<Step> steps_;
};

}  // namespace concord::algos
