// libFuzzer target: the checkpoint reader (load_checkpoint, read_checkpoint_header), which promises a
// CheckpointError for any bytes whatsoever, and the optimiser-state reader (optimizer_from_bytes)
// on every 1-D uint8 tensor of a checkpoint that loads, which promises an exception.
//
// Both CRCs would make almost every mutation a CRC mismatch, so the first input byte picks how much
// of the file the harness frames (the rest is the fuzzer's):
//   mode 0: the bytes are the file;
//   mode 1: "<header JSON>\0<payload>", framed with the magic, a version, the header's length and,
//           for version 2, its correct CRC;
//   mode 2: as 1, and payload_size and payload_crc32c in the header (if it is a JSON object) are
//           corrected, so that the LibTorch archive and the table of contents are checked.
// Bit 2 of the first byte picks format version 1 (no header CRC) instead of 2.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <torch/optim/adam.h>
#include <nlohmann/json.hpp>

#include "concord/core/checkpoint.h"
#include "concord/core/crc32c.h"
#include "concord/core/little_endian.h"
#include "concord/core/optimizer_bytes.h"
#include "fuzz_files.h"

namespace {

std::string frame(uint8_t control, std::string_view rest) {
  const size_t split = rest.find('\0');
  std::string header(rest.substr(0, split));
  const std::string_view payload = split == std::string_view::npos ? std::string_view() : rest.substr(split + 1);
  const uint32_t version = (control & 4) != 0 ? 1 : 2;
  if ((control & 3) == 2) {
    nlohmann::json document = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
    if (document.is_object()) {
      document["payload_size"] = payload.size();
      document["payload_crc32c"] = concord::core::crc32c(payload);
      header = document.dump();
    }
  }
  std::string file("CONCORDCKPT", 12);
  concord::core::put_le(file, version, 4);
  concord::core::put_le(file, header.size(), 8);
  if (version >= 2) concord::core::put_le(file, concord::core::crc32c(header), 4);
  file += header;
  file.append(payload.data(), payload.size());
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const uint8_t control = data[0];
  const std::string bytes = (control & 3) == 0 ? std::string(rest) : frame(control, rest);
  const auto path = concord::fuzz::write_file(concord::fuzz::scratch_dir() / "fuzz.ckpt", bytes);

  bool header_ok = false;
  try {
    const nlohmann::json header = concord::core::read_checkpoint_header(path);
    header_ok = true;
    (void)header.dump();
  } catch (const concord::core::CheckpointError&) {
  }
  try {
    const concord::core::Checkpoint checkpoint = concord::core::load_checkpoint(path);
    // A file that loads has a header that reads, and tensors that are usable.
    if (!header_ok) std::abort();
    for (const auto& [name, tensor] : checkpoint.tensors) {
      if (!tensor.defined()) std::abort();
      (void)tensor.sum();
      if (tensor.scalar_type() == at::kByte && tensor.dim() == 1) {
        try {
          torch::optim::Adam adam({torch::zeros({1}, torch::requires_grad())});
          concord::core::optimizer_from_bytes(tensor, adam, at::kCPU);
        } catch (const std::exception&) {
        }
      }
    }
  } catch (const concord::core::CheckpointError&) {
  }
  return 0;
}
