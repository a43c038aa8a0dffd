#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "concord/core/tensor_map.h"

namespace concord::core {

// A training snapshot: free-form metadata (global_step, algorithm, env id, config, ...) and named
// tensors (parameters, optimiser state, normaliser statistics, ...). Tensor names may be any
// string, dots included. at::Tensor is torch::Tensor.
struct Checkpoint {
  nlohmann::json metadata;
  TensorMap tensors;
};

// The on-disk format this build writes, and the newest it reads (it reads every older one too).
// Version 2 added the header's CRC.
inline constexpr uint32_t kCheckpointFormatVersion = 2;

// Why a checkpoint could not be read. The message is one line, "checkpoint '<path>': <problem>".
class CheckpointError : public std::runtime_error {
 public:
  enum class Kind {
    kMissing,             // no file at the path
    kUnreadable,          // exists but cannot be read (a directory, no permission, I/O error)
    kNotACheckpoint,      // does not start with the Concord magic bytes
    kUnsupportedVersion,  // written by a newer format version than this build reads
    kTruncated,           // shorter than its own header says
    kCorrupt,             // CRC mismatch, malformed header, trailing bytes, payload disagreeing with header
    kTensorMissing,       // the header lists a tensor the payload lacks
  };

  // An empty `path` is for code that restores a component from a checkpoint already in memory and
  // does not know the file; whoever does names it with with_path().
  CheckpointError(Kind kind, const std::filesystem::path& path, const std::string& problem);
  Kind kind() const { return kind_; }
  const std::filesystem::path& path() const { return path_; }
  const std::string& problem() const { return problem_; }

  // This error naming `path` if it named no file yet, else unchanged.
  CheckpointError with_path(const std::filesystem::path& path) const;

 private:
  Kind kind_;
  std::filesystem::path path_;
  std::string problem_;
};

// File layout (integers little-endian):
//
//   "CONCORDCKPT\0" | u32 format version | u64 header length | u32 header CRC-32C | JSON header | payload
//
// (version 1 files, which still load, lack the header CRC).
// The JSON header holds format_version, created (UTC, ISO 8601), metadata, and the table of
// contents: tensors [{name, dtype, shape}], payload_size, payload_crc32c. The payload is the
// tensors serialised by LibTorch's OutputArchive (keyed by position in the table of contents).
//
// save_checkpoint writes the file atomically (write_file_atomically): a crash leaves either the old
// file or the new one. Tensors are detached and stored on the CPU; they load on the CPU. Throws
// std::invalid_argument for an undefined tensor or metadata JSON cannot encode, and
// std::runtime_error naming the path when the file cannot be written. Stateless; concurrent calls
// for different paths are safe.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);

// Reads and fully verifies a checkpoint: size, header CRC (version 2), payload CRC, and that every tensor in the table
// of contents is present with the listed dtype and shape. Throws CheckpointError on any problem, for any input bytes.
// Stateless.
Checkpoint load_checkpoint(const std::filesystem::path& path);

// Reads only the JSON header (metadata and table of contents) and checks the file size it
// implies, without reading or verifying the payload: cheap even for large checkpoints. Throws
// CheckpointError like load_checkpoint, except that it cannot detect payload corruption.
nlohmann::json read_checkpoint_header(const std::filesystem::path& path);

}  // namespace concord::core
