#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

#include "concord/core/checkpoint.h"
#include "concord/core/rng.h"

namespace concord::core {

// Reading back what a component saved in a checkpoint: its counters as metadata[section][key],
// its arrays as tensors. Each reader throws CheckpointError (kCorrupt, or kTensorMissing, with an
// empty path for the caller to fill in) naming what is missing or does not fit, so that a
// component's load() needs no checks of its own.
int64_t metadata_int(const Checkpoint& checkpoint, const std::string& section, const std::string& key);
// A counter at the top of the metadata (metadata[key]).
int64_t metadata_int(const Checkpoint& checkpoint, const std::string& key);
double metadata_double(const Checkpoint& checkpoint, const std::string& section, const std::string& key);
std::string metadata_string(const Checkpoint& checkpoint, const std::string& section, const std::string& key);

// The tensor `name`, which must have `like`'s shape and dtype.
const at::Tensor& checkpoint_tensor(const Checkpoint& checkpoint, const std::string& name, const at::Tensor& like);
// The tensor `name`, whatever its shape.
const at::Tensor& checkpoint_tensor(const Checkpoint& checkpoint, const std::string& name);
// The tensors whose names start with `prefix`, by the rest of their names (empty if none).
TensorMap tensors_under(const Checkpoint& checkpoint, const std::string& prefix);

// Throws CheckpointError kCorrupt with `problem` (and an empty path).
[[noreturn]] void checkpoint_corrupt(const std::string& problem);

// A generator's complete state as text (the standard's stream form), so that a resumed run draws
// what the uninterrupted one would have drawn; restore_rng throws CheckpointError when `state`
// is not one.
std::string rng_state(const Rng& rng);
void restore_rng(Rng& rng, const std::string& state, const std::string& what);

}  // namespace concord::core
