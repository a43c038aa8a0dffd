#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/parallel/aggregation.h"

namespace concord::parallel {

// How one input of a data-parallel function reaches the workers.
enum class InputKind {
  kSliced,     // split along dimension 0 across workers (and again into sub-slices)
  kBroadcast,  // the whole tensor, copied to every worker
  kIndexed,    // an int64 index batch, sliced like kSliced; each worker passes the function the rows
               // of its own resident data (set_resident) that its indices name, so the data itself
               // never travels
};

// Which rows of the call one invocation of the function sees.
struct CallSlice {
  int64_t rows;        // rows in this invocation's slice
  int64_t total_rows;  // rows of the whole call (over all workers and sub-slices)
  int piece = 0;       // which of this worker's sub-slices, 0-based
  int pieces = 1;      // this worker's sub-slices in this call
};

using TensorFunction =
    std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>& inputs, const CallSlice& slice)>;

struct FunctionSpec {
  std::vector<InputKind> inputs;
  std::vector<Aggregation> outputs;
  int sub_slices = 1;  // each worker's slice is cut again into this many pieces, run one after another
};

// Synkhronos's function-level data parallelism (Stooke & Abbeel 2017) over a Communicator: one
// call of a LibTorch function (a model and a loss, or any tensor function) runs on all W ranks.
//
//   rank 0: call(inputs) -> header (shapes, dtypes) broadcast
//     sliced / indexed: rank 0 sends slice r of dimension 0 to rank r (uneven: sizes differ by <= 1)
//     broadcast:        every rank receives the whole tensor
//   every rank: for each of its sub-slices: outputs = fn(sub-slice inputs, CallSlice)
//               accumulate each output by its Aggregation, then combine across ranks (allreduce or
//               allgather) so that every rank returns the same result (kNone: its own)
//
// A collective: every rank calls operator() in the same order. Only rank 0's `inputs` are read;
// the others may pass {}. Every sliced or indexed input must have the same number of rows, at
// least W * sub_slices. The function's outputs must have the same shapes on every worker except
// for kGather and kNone outputs, which may differ in dimension 0. Not thread-safe; one per rank.
class DataParallelFunction {
 public:
  // Throws std::invalid_argument for an empty input list, sub_slices < 1 or an empty function.
  DataParallelFunction(comm::Communicator& communicator, TensorFunction function, FunctionSpec spec);

  // This worker's resident data for kIndexed input `input` (rows selected by the call's indices).
  // Each rank sets its own once, e.g. the data set it loaded itself.
  void set_resident(size_t input, torch::Tensor data);

  std::vector<torch::Tensor> operator()(const std::vector<torch::Tensor>& inputs);

  comm::Communicator& communicator() { return communicator_; }

 private:
  std::vector<torch::Tensor> distribute_inputs(const std::vector<torch::Tensor>& inputs, int64_t& total_rows);
  std::vector<torch::Tensor> combine(std::vector<std::vector<torch::Tensor>> per_sub_slice,
                                     const std::vector<int64_t>& sub_slice_rows, int64_t total_rows);
  torch::Tensor gather_rows(const torch::Tensor& local);

  comm::Communicator& communicator_;
  TensorFunction function_;
  FunctionSpec spec_;
  std::map<size_t, torch::Tensor> resident_;
};

}  // namespace concord::parallel
