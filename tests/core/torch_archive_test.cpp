#include "concord/core/torch_archive.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <caffe2/serialize/inline_container.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "concord/core/optimizer_bytes.h"

namespace concord::core {
namespace {

std::string bytes_of(torch::serialize::OutputArchive& archive) {
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

std::string tensor_archive() {
  torch::serialize::OutputArchive archive;
  archive.write("t0", torch::arange(6, torch::kFloat32).reshape({2, 3}), /*is_buffer=*/true);
  archive.write("t1", torch::tensor({int64_t{1} << 40}), /*is_buffer=*/true);
  return bytes_of(archive);
}

// A trained optimiser's archive bytes: every kind of state Concord's optimisers keep.
template <typename Optimizer, typename Options>
std::string optimizer_archive(const Options& options) {
  torch::manual_seed(0);
  torch::nn::Linear layer(3, 2);
  Optimizer optimizer(layer->parameters(), options);
  for (int step = 0; step < 2; ++step) {
    optimizer.zero_grad();
    layer->forward(torch::ones({4, 3})).pow(2).sum().backward();
    optimizer.step();
  }
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  return bytes_of(archive);
}

// Replaces `from` (which must occur) by `to` of the same length: the archive's entries are stored,
// not compressed, and LibTorch's reader does not check their CRCs, so an edit in place reaches it.
std::string edited(std::string bytes, const std::string& from, const std::string& to) {
  const std::size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(from.size(), to.size());
  if (at != std::string::npos) bytes.replace(at, from.size(), to);
  return bytes;
}

std::string refusal(const std::string& bytes, bool tensors_only) {
  try {
    if (tensors_only) {
      read_tensor_archive(bytes.data(), bytes.size());
    } else {
      torch::serialize::InputArchive archive;
      load_checked_archive(archive, bytes.data(), bytes.size(), torch::kCPU);
    }
  } catch (const std::exception& error) {
    return error.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(TorchArchive, ReadsTheTensorsOutputArchiveWrites) {
  const std::string bytes = tensor_archive();
  const auto tensors = read_tensor_archive(bytes.data(), bytes.size());
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_TRUE(torch::equal(tensors.at("t0"), torch::arange(6, torch::kFloat32).reshape({2, 3})));
  EXPECT_TRUE(torch::equal(tensors.at("t1"), torch::tensor({int64_t{1} << 40})));
}

// The source and pickle checks accept every optimiser state Concord writes, and the state that
// comes back is the one saved.
TEST(TorchArchive, EveryOptimiserStateConcordWritesLoadsChecked) {
  const std::string archives[] = {
      optimizer_archive<torch::optim::Adam>(torch::optim::AdamOptions(1e-3).amsgrad(true)),
      optimizer_archive<torch::optim::RMSprop>(torch::optim::RMSpropOptions(1e-3).centered(true).momentum(0.9)),
      optimizer_archive<torch::optim::SGD>(torch::optim::SGDOptions(0.1).momentum(0.9)),
  };
  for (const std::string& bytes : archives) {
    torch::serialize::InputArchive archive;
    EXPECT_NO_THROW(load_checked_archive(archive, bytes.data(), bytes.size(), torch::kCPU));
  }
  torch::manual_seed(0);
  torch::nn::Linear layer(3, 2);
  torch::optim::Adam adam(layer->parameters(), torch::optim::AdamOptions(1e-3));
  layer->forward(torch::ones({4, 3})).sum().backward();
  adam.step();
  torch::optim::Adam restored(layer->parameters(), torch::optim::AdamOptions(1e-3));
  optimizer_from_bytes(optimizer_to_bytes(adam), restored, torch::kCPU);
  const auto& saved = static_cast<const torch::optim::AdamParamState&>(*adam.state().begin()->second);
  const auto& loaded =
      static_cast<const torch::optim::AdamParamState&>(*restored.state().at(adam.state().begin()->first));
  EXPECT_EQ(loaded.step(), saved.step());
  EXPECT_TRUE(torch::equal(loaded.exp_avg(), saved.exp_avg()));
  EXPECT_TRUE(torch::equal(loaded.exp_avg_sq(), saved.exp_avg_sq()));
}

// Two optimisers trained alike over parameters at different addresses: what LibTorch's save()
// filed under each parameter's address (and wrote in hash-map order) is filed by position, so
// their bytes are the same, and a load puts each state back on the parameter at its position.
template <typename Optimizer, typename Options>
void expect_identical_bytes_and_states_by_position(const Options& options) {
  std::vector<torch::nn::Linear> layers;
  std::vector<std::unique_ptr<Optimizer>> optimizers;
  for (int copy = 0; copy < 2; ++copy) {
    torch::manual_seed(0);
    layers.emplace_back(torch::nn::Linear(3, 2));
    optimizers.push_back(std::make_unique<Optimizer>(layers.back()->parameters(), options));
    for (int step = 0; step < 2; ++step) {
      optimizers.back()->zero_grad();
      layers.back()->forward(torch::ones({4, 3})).pow(2).sum().backward();
      optimizers.back()->step();
    }
  }
  const at::Tensor first = optimizer_to_bytes(*optimizers[0]);
  EXPECT_TRUE(torch::equal(first, optimizer_to_bytes(*optimizers[1])));
  torch::nn::Linear other(3, 2);
  Optimizer restored(other->parameters(), options);
  optimizer_from_bytes(first, restored, torch::kCPU);
  const auto saved_parameters = layers[0]->parameters();
  const auto restored_parameters = other->parameters();
  ASSERT_EQ(restored.state().size(), optimizers[0]->state().size());
  for (size_t i = 0; i < saved_parameters.size(); ++i) {
    torch::serialize::OutputArchive saved, loaded;
    optimizers[0]->state().at(optimizer_state_key(saved_parameters[i]))->serialize(saved);
    restored.state().at(optimizer_state_key(restored_parameters[i]))->serialize(loaded);
    EXPECT_EQ(bytes_of(saved), bytes_of(loaded)) << "parameter " << i;
  }
}

TEST(OptimizerBytes, IdenticalOptimisersWriteIdenticalBytesWhateverTheAddresses) {
  expect_identical_bytes_and_states_by_position<torch::optim::Adam>(torch::optim::AdamOptions(1e-3).amsgrad(true));
  expect_identical_bytes_and_states_by_position<torch::optim::RMSprop>(
      torch::optim::RMSpropOptions(1e-3).centered(true).momentum(0.9));
  expect_identical_bytes_and_states_by_position<torch::optim::SGD>(torch::optim::SGDOptions(0.1).momentum(0.9));
}

// Checkpoints written before the indexed format hold LibTorch's own; they still load.
TEST(OptimizerBytes, LibTorchsOwnFormatStillLoads) {
  const std::string bytes = optimizer_archive<torch::optim::Adam>(torch::optim::AdamOptions(1e-3));
  at::Tensor tensor = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(tensor.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  torch::nn::Linear layer(3, 2);
  torch::optim::Adam adam(layer->parameters(), torch::optim::AdamOptions(1e-3));
  optimizer_from_bytes(tensor, adam, torch::kCPU);
  ASSERT_EQ(adam.state().size(), 2u);
  for (const at::Tensor& parameter : layer->parameters()) {
    EXPECT_EQ(static_cast<const torch::optim::AdamParamState&>(*adam.state().at(optimizer_state_key(parameter))).step(),
              2);
  }
}

TEST(OptimizerBytes, AStateOfOtherParametersIsRefused) {
  torch::nn::Linear layer(3, 2);
  torch::optim::Adam adam(layer->parameters(), torch::optim::AdamOptions(1e-3));
  layer->forward(torch::ones({4, 3})).sum().backward();
  adam.step();
  torch::nn::Linear no_bias(torch::nn::LinearOptions(3, 2).bias(false));
  torch::optim::Adam other(no_bias->parameters(), torch::optim::AdamOptions(1e-3));
  try {
    optimizer_from_bytes(optimizer_to_bytes(adam), other, torch::kCPU);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("optimiser state of 2 parameters, for an optimiser of 1"));
  }
}

// LibTorch would compile these lines; the check refuses them first.
// An Adam state that LibTorch 2.11 (a CUDA build) wrote: its archive adds 'byteorder' and
// '.data/serialization_id' records, and its source and pickle pass the same checks.
TEST(TorchArchive, AnAdamStateLibTorch2WroteLoadsChecked) {
  std::ifstream in(std::string(CONCORD_SOURCE_DIR) + "/tests/core/data/adam_state_libtorch_2_11.pt", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 0u);
  torch::serialize::InputArchive archive;
  EXPECT_NO_THROW(load_checked_archive(archive, bytes.data(), bytes.size(), torch::kCPU));
  EXPECT_THAT(refusal(edited(bytes, "little", "middle"), false), ::testing::HasSubstr("byteorder"));
}

TEST(TorchArchive, SourceBeyondAttributeDeclarationsIsRefused) {
  const std::string adam = optimizer_archive<torch::optim::Adam>(torch::optim::AdamOptions(1e-3));
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"  step : int", "  step : Int"},
                                 {"  step : int", "  step = int"},
                                 {"  step : int", "def step():x"},
                                 {"class Module(Module):", "class Module(Finals):"}}) {
    const std::string message = refusal(edited(adam, from, to), /*tensors_only=*/false);
    EXPECT_NE(message.find("its source holds more than attribute declarations"), std::string::npos) << message;
  }
}

// Pickles LibTorch 1.13's unpickler would run off its stack with (the first is the fuzzer's find).
TEST(TorchArchive, MalformedPicklesAreRefused) {
  const std::string good = tensor_archive();
  const std::string cases[] = {
      edited(good, "\x81}(", "\x87}("),  // TUPLE3 on two values
      edited(good, "\x81}(", "\x81}t"),  // TUPLE without a MARK
      edited(good, "ub", "0b"),          // POP: an opcode Concord's pickles never hold
      edited(good, "bq\r.", "bh\x7f."),  // a memo never stored
  };
  for (const std::string& bytes : cases) {
    const std::string message = refusal(bytes, /*tensors_only=*/true);
    EXPECT_NE(message.find("malformed pickle"), std::string::npos) << message;
  }
}

// An archive holding `pickle` as its data.pkl, nothing else.
std::string archive_with_pickle(const std::string& pickle) {
  std::string bytes;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeEndOfFile();
  return bytes;
}

// What would make LibTorch's destructors, or the tensor check, recurse without bound.
TEST(TorchArchive, DeepOrSelfContainingValuesAreRefused) {
  const std::string deep = std::string("\x80\x02)") + std::string(200, '\x85') + ".";  // TUPLE1 200 times
  EXPECT_THAT(refusal(archive_with_pickle(deep), true), ::testing::HasSubstr("values nest deeper than 100"));
  // EMPTY_DICT, BINPUT 0, MARK, 'a', BINGET 0, SETITEMS: a dictionary holding itself.
  const std::string self = std::string(
      "\x80\x02}q\x00(X\x01\x00\x00\x00"
      "a"
      "h\x00"
      "u.",
      16);
  EXPECT_THAT(refusal(archive_with_pickle(self), true), ::testing::HasSubstr("a dictionary or list fetched again"));
}

// A central-directory entry of data.pkl that claims a deflated size of nearly 4 GiB (what the
// checkpoint fuzzer built): miniz would allocate that before reading, so it is refused first.
TEST(TorchArchive, ARecordClaimingMoreBytesThanTheArchiveIsRefusedBeforeAllocation) {
  for (const bool tensors_only : {true, false}) {
    std::string bytes = tensors_only
                            ? tensor_archive()
                            : optimizer_archive<torch::optim::SGD>(torch::optim::SGDOptions(0.1).momentum(0.9));
    const std::size_t name = bytes.rfind("/data.pkl");
    ASSERT_NE(name, std::string::npos);
    const std::size_t entry = bytes.rfind("PK\x01\x02", name);
    ASSERT_NE(entry, std::string::npos);
    for (const uint32_t claimed : {0xFFFFFF15u, 0xFFFFFFFFu}) {  // the second asks for a zip64 field it lacks
      std::string crafted = bytes;
      crafted[entry + 10] = 8;  // deflated, which miniz does not bound by the archive's size
      for (int i = 0; i < 4; ++i) crafted[entry + 24 + i] = static_cast<char>((claimed >> (8 * i)) & 0xFF);
      EXPECT_THAT(refusal(crafted, tensors_only),
                  testing::HasSubstr("claims " + std::to_string(claimed) + " bytes, more than the " +
                                     std::to_string(crafted.size()) + "-byte archive"));
    }
  }
}

TEST(TorchArchive, BytesWithoutACentralDirectoryAreRefused) {
  EXPECT_THAT(refusal("short", true), testing::HasSubstr("not a zip archive (too short)"));
  EXPECT_THAT(refusal(std::string(64, 'x'), false), testing::HasSubstr("no end of central directory"));
}

TEST(TorchArchive, OnlyModuleClassesAreResolved) {
  const std::string message = refusal(edited(tensor_archive(), "c__torch__\nModule", "cbuiltins\nModule\n"), true);
  EXPECT_FALSE(message.empty());
}

}  // namespace
}  // namespace concord::core
