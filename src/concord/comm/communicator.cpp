#include "concord/comm/communicator.h"

namespace concord::comm {

void Communicator::allreduce_mean(const torch::Tensor& tensor) {
  allreduce(tensor, ReduceOp::kSum);
  tensor.div_(world_size());
}

}  // namespace concord::comm
