#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "concord/envs/env.h"

namespace concord::envs {

// bsuite's Memory Length task (Osband et al. 2020, "Behaviour Suite for Reinforcement Learning",
// memory_len; the environment is bsuite's MemoryChain with one context bit): a context bit c,
// +1 or -1, is shown at the start of an episode; L steps later the agent must answer it.
//
// Observation [time, query, context] (float32, 3): time = 1 - t / L counts down every step;
// query is the index of the bit asked for (always 0 with one bit) on t = L - 1; context is 2c - 1
// on t = 0 and 0 otherwise. Actions: Discrete(2). t starts at 0 at reset. As in bsuite, a step
// returns the observation of the step counter *before* it advances, so the observation after the
// first step is t = 0's again (the context is seen twice) and the last observation is t = L's.
//
//   steps 1 .. L: reward 0;   step L + 1: reward +1 if the action equals c, else -1; terminates
//
// So an episode is L + 1 steps, and the answer is graded at the step after the query is shown;
// a memoryless agent scores 0 in expectation (success 50%). Each episode draws c from the env's
// own random stream. bsuite sweeps L over 1..10, 12, 14, 17, 20, 25, 30..100 by 10; each is
// registered as "MemoryLength<L>-v0".
class MemoryLength final : public FloatEnv {
 public:
  explicit MemoryLength(int memory_length);

  static EnvSpec make_spec(int memory_length);
  static std::string id_for(int memory_length);
  // bsuite's sweep of memory lengths (memory_len/sweep.py).
  static std::vector<int> bsuite_lengths();

  int memory_length() const { return memory_length_; }
  int context() const { return context_; }  // this episode's bit, 0 or 1
  int timestep() const { return timestep_; }

 private:
  void reset_state(float* observation) override;
  StepResult step_state(const Action& action, float* observation) override;
  void write_observation(float* observation) const;

  int memory_length_;
  int context_ = 0;
  int timestep_ = 0;
};

}  // namespace concord::envs
