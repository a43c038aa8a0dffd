#pragma once

#include <filesystem>
#include <vector>

#include "concord/core/proto/tensorboard_event.pb.h"

namespace concord::core {

// Reads every Event of a TensorBoard event file written by TensorBoardWriter (or TensorFlow),
// checking both masked CRC-32Cs of every record. Throws std::runtime_error naming the file and the
// byte offset of the offending record when the file cannot be read, a record is truncated, a CRC
// does not match, or a record is not an Event. Stateless; safe from any thread.
std::vector<tensorboard::Event> read_event_file(const std::filesystem::path& path);

}  // namespace concord::core
