#include "concord/core/checkpoint.h"

#include <cstdint>
#include <filesystem>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include "concord/core/crc32c.h"
#include "core/temp_dir.h"

namespace concord::core {
namespace {

namespace fs = std::filesystem;
using Kind = CheckpointError::Kind;
using nlohmann::json;

constexpr std::size_t kPreambleV1 = 24;
constexpr std::size_t kPreambleV2 = 28;  // version 2 adds the header's CRC

class CheckpointTest : public test::TempDirTest {
 protected:
  CheckpointTest() : TempDirTest("concord_checkpoint_test_") {}

  // Splits a checkpoint file into its JSON header and payload.
  static std::pair<json, std::string> split(const std::string& bytes) {
    const std::size_t preamble = get_le(bytes, 12, 4) >= 2 ? kPreambleV2 : kPreambleV1;
    const uint64_t header_size = get_le(bytes, 16, 8);
    return {json::parse(bytes.substr(preamble, header_size)), bytes.substr(preamble + header_size)};
  }
  // Reassembles a version-1 file (no header CRC) around a (possibly edited) header.
  static std::string assemble(json header, const std::string& payload) {
    std::string bytes(std::string("CONCORDCKPT\0", 12) + std::string(12, '\0'));
    put_le(bytes, 12, 1, 4);
    header["format_version"] = 1;
    const std::string text = header.dump();
    put_le(bytes, 16, text.size(), 8);
    return bytes + text + payload;
  }

  static Checkpoint sample() {
    Checkpoint checkpoint;
    checkpoint.metadata = {{"global_step", 12345}, {"algorithm", "ppo"}, {"env_id", "CartPole-v1"}};
    checkpoint.tensors["policy.fc1.weight"] = torch::arange(12, torch::kFloat32).reshape({3, 4}) / 7.0;
    checkpoint.tensors["optimizer.step"] = torch::tensor({int64_t{1} << 40, int64_t{-5}}, torch::kInt64);
    return checkpoint;
  }

  // Expects load_checkpoint(path) to throw CheckpointError of `kind`, naming the path; returns the message.
  static std::string expect_error(const fs::path& path, Kind kind) {
    try {
      load_checkpoint(path);
    } catch (const CheckpointError& error) {
      const std::string message = error.what();
      EXPECT_EQ(error.kind(), kind) << message;
      EXPECT_NE(message.find(path.string()), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      return message;
    }
    ADD_FAILURE() << "load_checkpoint(" << path << ") did not throw";
    return "";
  }
};

void expect_same_tensors(const Checkpoint& expected, const Checkpoint& actual) {
  ASSERT_EQ(expected.tensors.size(), actual.tensors.size());
  for (const auto& [name, tensor] : expected.tensors) {
    const auto found = actual.tensors.find(name);
    ASSERT_NE(found, actual.tensors.end()) << name;
    EXPECT_EQ(found->second.scalar_type(), tensor.scalar_type()) << name;
    EXPECT_EQ(found->second.sizes(), tensor.sizes()) << name;
    EXPECT_TRUE(torch::equal(found->second, tensor.cpu())) << name;
  }
}

TEST_F(CheckpointTest, RoundTripsMetadataAndTensorsExactly) {
  const Checkpoint saved = sample();
  save_checkpoint(dir_ / "a.ckpt", saved);
  const Checkpoint loaded = load_checkpoint(dir_ / "a.ckpt");
  EXPECT_EQ(loaded.metadata, saved.metadata);
  expect_same_tensors(saved, loaded);
}

TEST_F(CheckpointTest, RoundTripsManyDtypesAndShapes) {
  Checkpoint saved;
  saved.tensors["double"] = torch::randn({2, 3, 4}, torch::kFloat64);
  saved.tensors["float"] = torch::randn({5}, torch::kFloat32);
  saved.tensors["half"] = torch::randn({3}).to(torch::kFloat16);
  saved.tensors["int32"] = torch::randint(-100, 100, {7}, torch::kInt32);
  saved.tensors["uint8"] = torch::randint(0, 255, {4}, torch::kUInt8);
  saved.tensors["bool"] = torch::tensor({true, false, true});
  saved.tensors["scalar"] = torch::tensor(3.5);
  saved.tensors["zero_sized"] = torch::zeros({0, 3});
  saved.tensors["with spaces/and:odd.chars"] = torch::ones({1});
  saved.tensors[""] = torch::ones({2}, torch::kInt64);
  saved.tensors["requires_grad"] = torch::ones({2}, torch::requires_grad());
  save_checkpoint(dir_ / "b.ckpt", saved);
  const Checkpoint loaded = load_checkpoint(dir_ / "b.ckpt");
  EXPECT_TRUE(loaded.metadata.is_null());
  expect_same_tensors(saved, loaded);
  EXPECT_FALSE(loaded.tensors.at("requires_grad").requires_grad());
}

TEST_F(CheckpointTest, ViewsAreStoredWithoutTheirBaseStorage) {
  const torch::Tensor base = torch::arange(1000000, torch::kFloat32);
  Checkpoint saved;
  saved.tensors["slice"] = base.slice(0, 10, 14);
  saved.tensors["transposed"] = torch::arange(6, torch::kFloat32).reshape({2, 3}).t();
  save_checkpoint(dir_ / "v.ckpt", saved);
  EXPECT_LT(fs::file_size(dir_ / "v.ckpt"), 100000U);
  expect_same_tensors(saved, load_checkpoint(dir_ / "v.ckpt"));
}

TEST_F(CheckpointTest, EmptyCheckpointRoundTrips) {
  save_checkpoint(dir_ / "empty.ckpt", Checkpoint{});
  const Checkpoint loaded = load_checkpoint(dir_ / "empty.ckpt");
  EXPECT_TRUE(loaded.tensors.empty());
  EXPECT_TRUE(loaded.metadata.is_null());
}

TEST_F(CheckpointTest, SavingReplacesAnExistingCheckpoint) {
  save_checkpoint(dir_ / "c.ckpt", sample());
  Checkpoint second;
  second.metadata = {{"global_step", 2}};
  second.tensors["only"] = torch::ones({3});
  save_checkpoint(dir_ / "c.ckpt", second);
  const Checkpoint loaded = load_checkpoint(dir_ / "c.ckpt");
  EXPECT_EQ(loaded.metadata["global_step"], 2);
  expect_same_tensors(second, loaded);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(CheckpointTest, FileIsSelfDescribing) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  const std::string bytes = read_bytes(dir_ / "a.ckpt");
  EXPECT_EQ(bytes.substr(0, 12), std::string("CONCORDCKPT\0", 12));
  EXPECT_EQ(get_le(bytes, 12, 4), 2U);
  const auto [header, payload] = split(bytes);
  EXPECT_EQ(header["format_version"], 2);
  EXPECT_EQ(get_le(bytes, 24, 4), crc32c(bytes.substr(kPreambleV2, get_le(bytes, 16, 8))));
  EXPECT_TRUE(header["created"].is_string());
  EXPECT_EQ(header["metadata"]["algorithm"], "ppo");
  EXPECT_EQ(header["payload_size"], payload.size());
  EXPECT_EQ(header["payload_crc32c"], crc32c(payload));
  const json expected_toc = json::array({
      {{"name", "optimizer.step"}, {"dtype", "Long"}, {"shape", {2}}},
      {{"name", "policy.fc1.weight"}, {"dtype", "Float"}, {"shape", {3, 4}}},
  });
  EXPECT_EQ(header["tensors"], expected_toc);
}

TEST_F(CheckpointTest, HeaderReadsWithoutThePayload) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  const json header = read_checkpoint_header(dir_ / "a.ckpt");
  EXPECT_EQ(header["metadata"]["global_step"], 12345);
  EXPECT_EQ(header["tensors"].size(), 2U);

  // A corrupt payload does not stop the header from being read; a short file does.
  std::string bytes = read_bytes(dir_ / "a.ckpt");
  bytes[bytes.size() - 10] ^= 0x55;
  write_bytes(dir_ / "a.ckpt", bytes);
  EXPECT_EQ(read_checkpoint_header(dir_ / "a.ckpt")["metadata"]["env_id"], "CartPole-v1");
  write_bytes(dir_ / "a.ckpt", bytes.substr(0, bytes.size() - 1));
  EXPECT_THROW(read_checkpoint_header(dir_ / "a.ckpt"), CheckpointError);
}

TEST_F(CheckpointTest, MissingFile) {
  const std::string message = expect_error(dir_ / "absent.ckpt", Kind::kMissing);
  EXPECT_NE(message.find("no such file"), std::string::npos) << message;
  EXPECT_THROW(read_checkpoint_header(dir_ / "absent.ckpt"), CheckpointError);
}

TEST_F(CheckpointTest, DirectoryIsUnreadable) { expect_error(dir_, Kind::kUnreadable); }

TEST_F(CheckpointTest, NotACheckpoint) {
  write_bytes(dir_ / "model.pt", "PK\3\4 this is a zip, say a torch.save file, not ours");
  const std::string message = expect_error(dir_ / "model.pt", Kind::kNotACheckpoint);
  EXPECT_NE(message.find("not a Concord checkpoint"), std::string::npos) << message;
}

TEST_F(CheckpointTest, NewerVersionIsUnsupported) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  std::string bytes = read_bytes(dir_ / "a.ckpt");
  put_le(bytes, 12, 3, 4);
  write_bytes(dir_ / "a.ckpt", bytes);
  const std::string message = expect_error(dir_ / "a.ckpt", Kind::kUnsupportedVersion);
  EXPECT_NE(message.find("version 3"), std::string::npos) << message;
}

TEST_F(CheckpointTest, EveryTruncationIsReportedAsTruncated) {
  Checkpoint small;
  small.metadata = {{"global_step", 1}};
  small.tensors["w"] = torch::ones({2});
  save_checkpoint(dir_ / "full.ckpt", small);
  const std::string bytes = read_bytes(dir_ / "full.ckpt");
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    // A fresh name each time: rewriting one file in place makes ext4 flush it, which is slow.
    const fs::path cut = dir_ / ("cut" + std::to_string(size) + ".ckpt");
    write_bytes(cut, bytes.substr(0, size));
    SCOPED_TRACE("size " + std::to_string(size));
    const std::string message = expect_error(cut, Kind::kTruncated);
    EXPECT_NE(message.find("found " + std::to_string(size)), std::string::npos) << message;
    EXPECT_NE(message.find("expected"), std::string::npos) << message;
    if (size + 1 == bytes.size()) {
      EXPECT_NE(message.find("expected " + std::to_string(bytes.size()) + " bytes"), std::string::npos) << message;
    }
    fs::remove(cut);
  }
}

TEST_F(CheckpointTest, PayloadCorruptionFailsTheCrc) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  std::string bytes = read_bytes(dir_ / "a.ckpt");
  bytes[bytes.size() / 2 + 200 < bytes.size() ? bytes.size() / 2 + 200 : bytes.size() - 1] ^= 0x01;
  write_bytes(dir_ / "a.ckpt", bytes);
  const std::string message = expect_error(dir_ / "a.ckpt", Kind::kCorrupt);
  EXPECT_NE(message.find("CRC"), std::string::npos) << message;
}

TEST_F(CheckpointTest, TrailingBytesAreCorruption) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  write_bytes(dir_ / "a.ckpt", read_bytes(dir_ / "a.ckpt") + "xyz");
  const std::string message = expect_error(dir_ / "a.ckpt", Kind::kCorrupt);
  EXPECT_NE(message.find("3 unexpected bytes"), std::string::npos) << message;
}

TEST_F(CheckpointTest, TensorListedButAbsentFromThePayload) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  auto [header, payload] = split(read_bytes(dir_ / "a.ckpt"));
  header["tensors"].push_back({{"name", "value.bias"}, {"dtype", "Float"}, {"shape", {1}}});
  write_bytes(dir_ / "a.ckpt", assemble(header, payload));
  const std::string message = expect_error(dir_ / "a.ckpt", Kind::kTensorMissing);
  EXPECT_NE(message.find("'value.bias'"), std::string::npos) << message;
}

TEST_F(CheckpointTest, HeaderDisagreeingWithThePayloadIsCorruption) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  const auto [header, payload] = split(read_bytes(dir_ / "a.ckpt"));

  json wrong_dtype = header;
  wrong_dtype["tensors"][0]["dtype"] = "Float";
  write_bytes(dir_ / "dtype.ckpt", assemble(wrong_dtype, payload));
  EXPECT_NE(expect_error(dir_ / "dtype.ckpt", Kind::kCorrupt).find("Long in the payload"), std::string::npos);

  json wrong_shape = header;
  wrong_shape["tensors"][1]["shape"] = {4, 3};
  write_bytes(dir_ / "shape.ckpt", assemble(wrong_shape, payload));
  expect_error(dir_ / "shape.ckpt", Kind::kCorrupt);

  json not_json_fields = header;
  not_json_fields["payload_size"] = "many";
  write_bytes(dir_ / "fields.ckpt", assemble(not_json_fields, payload));
  expect_error(dir_ / "fields.ckpt", Kind::kCorrupt);

  json duplicate = header;
  duplicate["tensors"][1]["name"] = duplicate["tensors"][0]["name"];
  write_bytes(dir_ / "duplicate.ckpt", assemble(duplicate, payload));
  expect_error(dir_ / "duplicate.ckpt", Kind::kCorrupt);

  json garbage_payload = header;
  const std::string junk(payload.size(), 'j');
  garbage_payload["payload_crc32c"] = crc32c(junk);
  write_bytes(dir_ / "junk.ckpt", assemble(garbage_payload, junk));
  expect_error(dir_ / "junk.ckpt", Kind::kCorrupt);
}

TEST_F(CheckpointTest, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  const std::string magic("CONCORDCKPT\0", 12);
  for (int trial = 0; trial < 300; ++trial) {
    const fs::path path = dir_ / ("random" + std::to_string(trial) + ".ckpt");
    std::string bytes(rng() % 400, '\0');
    for (char& byte : bytes) {
      byte = static_cast<char>(rng());
    }
    if (trial % 3 == 1) {  // past the magic, into the version and lengths
      bytes = magic + bytes;
    } else if (trial % 3 == 2) {  // a valid version 1 and a plausible header length
      std::string preamble = magic + std::string(12, '\0');
      put_le(preamble, 12, 1, 4);
      put_le(preamble, 16, bytes.size() / 2, 8);
      bytes = preamble + bytes;
    }
    write_bytes(path, bytes);
    EXPECT_THROW(load_checkpoint(path), CheckpointError) << "trial " << trial;
    EXPECT_THROW(read_checkpoint_header(path), CheckpointError) << "trial " << trial;
    fs::remove(path);
  }
}

TEST_F(CheckpointTest, EveryFlippedByteLoadsOrThrowsCheckpointError) {
  Checkpoint small;
  small.metadata = {{"global_step", 7}};
  small.tensors["w"] = torch::arange(4, torch::kFloat32);
  save_checkpoint(dir_ / "small.ckpt", small);
  const std::string bytes = read_bytes(dir_ / "small.ckpt");
  int loaded = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const fs::path path = dir_ / ("flipped" + std::to_string(i) + ".ckpt");
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5A);
    write_bytes(path, flipped);
    try {
      load_checkpoint(path);
      ++loaded;
    } catch (const CheckpointError&) {
    } catch (const std::exception& error) {
      ADD_FAILURE() << "byte " << i << ": unexpected exception " << error.what();
    }
    fs::remove(path);
  }
  // Every byte is covered: the preamble by its own checks, the header and payload by their CRCs.
  EXPECT_EQ(loaded, 0);
}

// A hand-edited step (the same number of digits, so every size still agrees) fails the header's
// CRC, in load_checkpoint and in the cheap read_checkpoint_header alike.
TEST_F(CheckpointTest, EditedMetadataFailsTheHeaderCrc) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  std::string bytes = read_bytes(dir_ / "a.ckpt");
  const std::size_t at = bytes.find("\"global_step\":12345");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 19, "\"global_step\":99999");
  write_bytes(dir_ / "a.ckpt", bytes);
  const std::string message = expect_error(dir_ / "a.ckpt", Kind::kCorrupt);
  EXPECT_NE(message.find("header CRC-32C"), std::string::npos) << message;
  EXPECT_THROW(read_checkpoint_header(dir_ / "a.ckpt"), CheckpointError);
}

// Files of format version 1, which have no header CRC, still load.
TEST_F(CheckpointTest, VersionOneFilesStillLoad) {
  save_checkpoint(dir_ / "a.ckpt", sample());
  const auto [header, payload] = split(read_bytes(dir_ / "a.ckpt"));
  write_bytes(dir_ / "v1.ckpt", assemble(header, payload));
  const Checkpoint loaded = load_checkpoint(dir_ / "v1.ckpt");
  EXPECT_EQ(loaded.metadata, sample().metadata);
  expect_same_tensors(sample(), loaded);
  EXPECT_EQ(read_checkpoint_header(dir_ / "v1.ckpt")["format_version"], 1);
}

// The payloads a crafted file can carry: another class, source beside the pickle, a tensor whose
// sizes reach past its storage. The reader must refuse each in one line, or ignore the source.
class CraftedPayloadTest : public CheckpointTest {
 protected:
  // A file listing one Float tensor "w" of `shape` around `payload`.
  std::string wrap(const std::string& payload, const std::vector<int64_t>& shape) {
    Checkpoint checkpoint;
    checkpoint.tensors["w"] = torch::zeros(shape);
    save_checkpoint(dir_ / "base.ckpt", checkpoint);
    json header = split(read_bytes(dir_ / "base.ckpt")).first;
    header["payload_size"] = payload.size();
    header["payload_crc32c"] = crc32c(payload);
    return assemble(header, payload);
  }
  static std::string archive_of(const at::Tensor& tensor) {
    torch::serialize::OutputArchive archive;
    archive.write("t0", tensor, /*is_buffer=*/true);
    std::ostringstream out;
    archive.save_to(out);
    return out.str();
  }
};

TEST_F(CraftedPayloadTest, AnotherClassIsRefused) {
  torch::jit::Module other("__torch__.Other");
  other.register_buffer("t0", torch::ones({2}));
  std::ostringstream out;
  other.save(out);
  write_bytes(dir_ / "other.ckpt", wrap(out.str(), {2}));
  const std::string message = expect_error(dir_ / "other.ckpt", Kind::kCorrupt);
  EXPECT_NE(message.find("unexpected class '__torch__.Other'"), std::string::npos) << message;
}

// LibTorch's own reader compiles the archive's code/ to learn the class, and its compiler crashes
// on crafted source; Concord's never reads it.
TEST_F(CraftedPayloadTest, TheArchivesSourceIsNeverCompiled) {
  std::string payload = archive_of(torch::arange(2, torch::kFloat32));
  const std::size_t source = payload.find("class Module");
  ASSERT_NE(source, std::string::npos);  // entries are stored, not compressed
  payload.replace(source, 12, "((((((((((((");
  write_bytes(dir_ / "source.ckpt", wrap(payload, {2}));
  EXPECT_TRUE(torch::equal(load_checkpoint(dir_ / "source.ckpt").tensors.at("w"), torch::arange(2, torch::kFloat32)));
}

TEST_F(CraftedPayloadTest, ATensorReachingPastItsStorageIsRefused) {
  const at::Tensor lying = torch::ones({2});
  lying.unsafeGetTensorImpl()->set_sizes_and_strides(at::IntArrayRef{1000}, at::IntArrayRef{1});
  write_bytes(dir_ / "past.ckpt", wrap(archive_of(lying), {1000}));
  const std::string message = expect_error(dir_ / "past.ckpt", Kind::kCorrupt);
  EXPECT_NE(message.find("reaches outside its storage"), std::string::npos) << message;

  const at::Tensor offset = torch::ones({4});
  offset.unsafeGetTensorImpl()->set_storage_offset(3);
  offset.unsafeGetTensorImpl()->set_sizes_and_strides(at::IntArrayRef{2}, at::IntArrayRef{1});
  write_bytes(dir_ / "offset.ckpt", wrap(archive_of(offset), {2}));
  expect_error(dir_ / "offset.ckpt", Kind::kCorrupt);
}

// A component restoring itself from a checkpoint in memory does not know the file; whoever does
// names it, so no message reads "checkpoint '': ...".
TEST_F(CheckpointTest, ErrorsWithoutAPathGetOneLater) {
  const CheckpointError anonymous(Kind::kTensorMissing, "", "tensor 'optimizer' is missing");
  EXPECT_STREQ(anonymous.what(), "checkpoint: tensor 'optimizer' is missing");
  const CheckpointError named = anonymous.with_path(dir_ / "a.ckpt");
  EXPECT_EQ(named.kind(), Kind::kTensorMissing);
  EXPECT_EQ(std::string(named.what()),
            "checkpoint '" + (dir_ / "a.ckpt").string() + "': tensor 'optimizer' is missing");
  EXPECT_EQ(named.with_path(dir_ / "b.ckpt").path(), dir_ / "a.ckpt");
}

TEST_F(CheckpointTest, SaveRejectsUndefinedTensorsAndUnencodableMetadata) {
  Checkpoint undefined;
  undefined.tensors["nothing"] = torch::Tensor();
  EXPECT_THROW(save_checkpoint(dir_ / "u.ckpt", undefined), std::invalid_argument);
  Checkpoint bad_utf8;
  bad_utf8.metadata = {{"name", std::string("\xff\xfe")}};
  EXPECT_THROW(save_checkpoint(dir_ / "m.ckpt", bad_utf8), std::invalid_argument);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CheckpointTest, SaveIntoAMissingDirectoryThrowsNamingThePath) {
  try {
    save_checkpoint(dir_ / "nope" / "a.ckpt", sample());
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find((dir_ / "nope").string()), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace concord::core
