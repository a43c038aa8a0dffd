#pragma once

#include <functional>
#include <thread>

namespace concord::core {

// Starts a thread that runs LibTorch operators with the process's intra-op thread count
// (torch::set_num_threads, run.torch_threads). Debian's LibTorch is built with OpenMP, which keeps
// that count per thread: a plain std::thread would run every convolution on all cores, so N
// agent or worker threads would start N x cores OpenMP threads and fight over the cores (measured
// with MinAtar's network: per-thread act() rates scattered over 9x). Every thread of ours that
// runs LibTorch starts here.
std::thread torch_thread(std::function<void()> body);

}  // namespace concord::core
