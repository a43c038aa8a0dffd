#include "concord/core/torch_thread.h"

#include <utility>

#include <ATen/Parallel.h>

namespace concord::core {

std::thread torch_thread(std::function<void()> body) {
  return std::thread([body = std::move(body)] {
    // Copies the count set by at::set_num_threads into this thread's OpenMP settings.
    at::init_num_threads();
    body();
  });
}

}  // namespace concord::core
