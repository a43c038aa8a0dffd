#include "concord/core/optimizer_bytes.h"

#include <ATen/ops/empty.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/version.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/core/torch_archive.h"

namespace concord::core {

OptimizerStateKey optimizer_state_key(const at::Tensor& parameter) {
#if TORCH_VERSION_MAJOR >= 2
  return parameter.unsafeGetTensorImpl();
#else
  return c10::guts::to_string(parameter.unsafeGetTensorImpl());
#endif
}

namespace {

// The indexed format: "concord_optimizer_state" (its version, 1), "parameters" (how many the
// optimiser has, over all its groups in order) and "state/i" for each parameter i that has state,
// written by the state's own serialize(). LibTorch's own save() files each state under the
// address of the parameter's TensorImpl and in hash-map order, so that identical runs wrote
// different bytes; this is keyed by position and written in order.
constexpr const char* kIndexedFormat = "concord_optimizer_state";
constexpr int64_t kIndexedVersion = 1;

template <typename Optimizer, typename ParamState>
std::unique_ptr<torch::optim::OptimizerParamState> empty_state_if(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const Optimizer*>(&optimizer) == nullptr) return nullptr;
  return std::make_unique<ParamState>();
}

// An empty state of the kind `optimizer` keeps per parameter, for the state a load reads into;
// nullptr for an optimiser the indexed format does not know (LBFGS, one of a program's own), which
// is saved in LibTorch's format instead.
std::unique_ptr<torch::optim::OptimizerParamState> empty_state(const torch::optim::Optimizer& optimizer) {
  if (auto state = empty_state_if<torch::optim::AdamW, torch::optim::AdamWParamState>(optimizer)) return state;
  if (auto state = empty_state_if<torch::optim::Adam, torch::optim::AdamParamState>(optimizer)) return state;
  if (auto state = empty_state_if<torch::optim::SGD, torch::optim::SGDParamState>(optimizer)) return state;
  if (auto state = empty_state_if<torch::optim::RMSprop, torch::optim::RMSpropParamState>(optimizer)) return state;
  if (auto state = empty_state_if<torch::optim::Adagrad, torch::optim::AdagradParamState>(optimizer)) return state;
  return nullptr;
}

std::vector<at::Tensor> all_parameters(const torch::optim::Optimizer& optimizer) {
  std::vector<at::Tensor> parameters;
  for (const auto& group : optimizer.param_groups()) {
    for (const at::Tensor& parameter : group.params()) parameters.push_back(parameter);
  }
  return parameters;
}

void save_indexed(const torch::optim::Optimizer& optimizer, torch::serialize::OutputArchive& archive) {
  archive.write(kIndexedFormat, c10::IValue(kIndexedVersion));
  const std::vector<at::Tensor> parameters = all_parameters(optimizer);
  archive.write("parameters", c10::IValue(static_cast<int64_t>(parameters.size())));
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto found = optimizer.state().find(optimizer_state_key(parameters[i]));
    if (found == optimizer.state().end()) continue;
    torch::serialize::OutputArchive state(archive.compilation_unit());
    found->second->serialize(state);
    archive.write("state/" + std::to_string(i), state);
  }
}

void load_indexed(torch::serialize::InputArchive& archive, const c10::IValue& version,
                  torch::optim::Optimizer& optimizer) {
  if (!version.isInt() || version.toInt() != kIndexedVersion) {
    throw std::runtime_error("optimiser state of format version " +
                             (version.isInt() ? std::to_string(version.toInt()) : std::string("(not a number)")) +
                             "; this build reads version " + std::to_string(kIndexedVersion));
  }
  const std::vector<at::Tensor> parameters = all_parameters(optimizer);
  c10::IValue count;
  if (!archive.try_read("parameters", count) || !count.isInt()) {
    throw std::runtime_error("optimiser state without its parameter count");
  }
  if (count.toInt() != static_cast<int64_t>(parameters.size())) {
    throw std::invalid_argument("optimiser state of " + std::to_string(count.toInt()) +
                                " parameters, for an optimiser of " + std::to_string(parameters.size()));
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    torch::serialize::InputArchive saved;
    if (!archive.try_read("state/" + std::to_string(i), saved)) continue;
    std::unique_ptr<torch::optim::OptimizerParamState> state = empty_state(optimizer);
    if (state == nullptr) throw std::invalid_argument("an indexed optimiser state for an optimiser of another kind");
    state->serialize(saved);
    optimizer.state()[optimizer_state_key(parameters[i])] = std::move(state);
  }
}

}  // namespace

at::Tensor optimizer_to_bytes(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  if (empty_state(optimizer) != nullptr) {
    save_indexed(optimizer, archive);
  } else {
    optimizer.save(archive);
  }
  std::ostringstream stream;
  archive.save_to(stream);
  const std::string bytes = stream.str();
  at::Tensor tensor = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::memcpy(tensor.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return tensor;
}

void optimizer_from_bytes(const at::Tensor& bytes, torch::optim::Optimizer& optimizer, const c10::Device& device) {
  if (bytes.scalar_type() != at::kByte || bytes.dim() != 1) {
    throw std::invalid_argument("expected a 1-D uint8 tensor");
  }
  const at::Tensor contiguous = bytes.to(at::kCPU).contiguous();
  torch::serialize::InputArchive archive;
  load_checked_archive(archive, reinterpret_cast<const char*>(contiguous.data_ptr<uint8_t>()),
                       static_cast<size_t>(contiguous.numel()), device);
  optimizer.state().clear();
  c10::IValue version;
  if (archive.try_read(kIndexedFormat, version)) {
    load_indexed(archive, version, optimizer);
  } else {
    optimizer.load(archive);  // LibTorch's format: checkpoints written before the indexed one
  }
}

}  // namespace concord::core
