#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include <cstdint>
#include <functional>
#include <string>

#include "concord/core/checkpoint.h"

namespace concord::algos {

// The pieces every learner's save()/load() is made of, so that each algorithm checks what it
// reads in the same way and says the same things: a load checks everything before it changes
// anything, and every problem is a core::CheckpointError (with an empty path, which the caller
// fills in) naming the tensor or metadata key at fault. The readers of single fields are
// core/checkpoint_fields.h's.

// A module's parameters and buffers, by name (buffers after parameters).
torch::OrderedDict<std::string, at::Tensor> module_state(const torch::nn::Module& module);

// Writes module_state(module) as "<prefix><name>" (detached copies).
void save_module(core::Checkpoint& checkpoint, const std::string& prefix, const torch::nn::Module& module);

// What a missing or an unexpected tensor may mean for one algorithm (a config that differs from
// the one it was saved with); each returns text appended to the error, or "" for no hint. Called
// with the name below the prefix.
struct ModuleHints {
  std::function<std::string(const std::string&)> missing;
  std::function<std::string(const std::string&)> unexpected;
};

// Throws unless the checkpoint holds every tensor of module_state(module) under `prefix` with its
// shape, and nothing else under `prefix`.
void check_module(const core::Checkpoint& checkpoint, const std::string& prefix, const torch::nn::Module& module,
                  const ModuleHints& hints = {});

// Copies the tensors under `prefix` into the module (check_module first).
void load_module(const core::Checkpoint& checkpoint, const std::string& prefix, torch::nn::Module& module);

// Writes the optimiser state as a uint8 tensor of LibTorch's archive bytes.
void save_optimizer(core::Checkpoint& checkpoint, const std::string& name, const torch::optim::Optimizer& optimizer);
// Reads tensor `name` into `scratch` (an optimiser of the same kind over the same parameters),
// so that a state that does not fit is refused before the real one changes. Throws naming it.
void check_optimizer(const core::Checkpoint& checkpoint, const std::string& name, torch::optim::Optimizer& scratch,
                     const at::Device& device);
void load_optimizer(const core::Checkpoint& checkpoint, const std::string& name, torch::optim::Optimizer& optimizer,
                    const at::Device& device);

// Throws unless metadata "algorithm" is `algorithm`.
void check_algorithm(const core::Checkpoint& checkpoint, const std::string& algorithm);
}  // namespace concord::algos
