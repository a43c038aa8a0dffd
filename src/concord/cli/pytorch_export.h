#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "concord/cli/trained_agent.h"

namespace concord::cli {

// `concord export`: a trained agent's acting network in PyTorch's own file format, so that it can
// leave Concord. The file is what `torch.save` of this dict writes (LibTorch's
// torch::pickle_save: a zip of a pickle and the tensors' storages), and `torch.load(file)` in
// Python reads it back, without Concord:
//
//   format           "concord.export/1"
//   algo, env_id     the run's train.algo and env.id
//   global_step      the env steps the agent trained for
//   config           the run's resolved config, as TOML text (the network's algo.* keys)
//   observation_shape, observation_dtype ("float32" or "uint8")
//   action_kind      "discrete" (action_n actions) or "box" (action_shape, action_low, action_high)
//   state_dict       the acting network's parameters and buffers by module path, as
//                    torch.nn.Module.state_dict() names them ("actor_torso.layers.0.weight"; a
//                    network with memory adds its cores' torch.nn.LSTM or GRU parameters,
//                    "actor_core.lstm.weight_ih_l0")
//
// python/concord/export.py rebuilds a torch.nn.Module from it (concord.export.torch_module).
inline constexpr const char* kExportFormat = "concord.export/1";

struct ExportReport {
  std::filesystem::path file;
  int64_t tensors = 0;
  int64_t parameters = 0;  // elements over every tensor of the state dict
};

// Writes `trained`'s network to `file` atomically. Throws std::runtime_error naming the file
// when it cannot be written.
ExportReport export_for_pytorch(const TrainedCheckpoint& trained, const std::filesystem::path& file);

}  // namespace concord::cli
