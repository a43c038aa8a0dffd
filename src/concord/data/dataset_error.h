#pragma once

#include <stdexcept>

namespace concord::data {

// A data set that is missing, unreadable or corrupt. The message names the file and says how to
// get it back (usually: run scripts/setup.sh, or which Debian package to install).
class DatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace concord::data
