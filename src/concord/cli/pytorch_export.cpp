#include "concord/cli/pytorch_export.h"

#include <string_view>
#include <vector>

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>

#include "concord/core/atomic_file.h"
#include "concord/envs/registry.h"

namespace concord::cli {
namespace {

// Every learner saves its acting network's module_state under this prefix (algos/module_checkpoint.h).
constexpr std::string_view kModelPrefix = "model/";

}  // namespace

ExportReport export_for_pytorch(const TrainedCheckpoint& trained, const std::filesystem::path& file) {
  const core::Config& config = trained.config;
  const envs::EnvSpec spec = envs::make_env(config.get_string("env.id"))->spec();
  c10::Dict<std::string, at::Tensor> state_dict;
  ExportReport report{file, 0, 0};
  for (const auto& [name, tensor] : trained.checkpoint.tensors) {
    if (name.compare(0, kModelPrefix.size(), kModelPrefix) != 0) continue;
    // Contiguous CPU copies: the pickle stores each storage whole.
    state_dict.insert(name.substr(kModelPrefix.size()), tensor.detach().to(torch::kCPU).contiguous().clone());
    report.tensors += 1;
    report.parameters += tensor.numel();
  }
  if (report.tensors == 0) {
    throw std::runtime_error("checkpoint '" + trained.file.string() + "' holds no network (no tensor under model/)");
  }
  c10::impl::GenericDict exported(c10::StringType::get(), c10::AnyType::get());
  exported.insert(std::string("format"), std::string(kExportFormat));
  exported.insert(std::string("algo"), config.get_string("train.algo"));
  exported.insert(std::string("env_id"), spec.id);
  exported.insert(std::string("global_step"), trained.global_step);
  exported.insert(std::string("config"), config.to_toml());
  const envs::Space& observations = spec.observation_space;
  exported.insert(std::string("observation_shape"), c10::List<int64_t>(observations.shape()));
  exported.insert(std::string("observation_dtype"),
                  std::string(observations.dtype() == envs::Dtype::kUInt8 ? "uint8" : "float32"));
  const envs::Space& actions = spec.action_space;
  if (actions.is_discrete()) {
    exported.insert(std::string("action_kind"), std::string("discrete"));
    exported.insert(std::string("action_n"), actions.n());
  } else {
    exported.insert(std::string("action_kind"), std::string("box"));
    exported.insert(std::string("action_shape"), c10::List<int64_t>(actions.shape()));
    exported.insert(std::string("action_low"),
                    c10::List<double>(std::vector<double>(actions.low().begin(), actions.low().end())));
    exported.insert(std::string("action_high"),
                    c10::List<double>(std::vector<double>(actions.high().begin(), actions.high().end())));
  }
  exported.insert(std::string("state_dict"), state_dict);
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(exported));
  core::write_file_atomically(file, std::string_view(bytes.data(), bytes.size()));
  return report;
}

}  // namespace concord::cli
