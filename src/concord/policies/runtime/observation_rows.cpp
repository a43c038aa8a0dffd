#include "concord/policies/runtime/observation_rows.h"

namespace concord::policies::runtime {

torch::ScalarType scalar_type(envs::Dtype dtype) {
  return dtype == envs::Dtype::kUInt8 ? torch::kUInt8 : torch::kFloat32;
}

std::vector<int64_t> observation_batch_shape(const envs::Space& observation_space,
                                             std::initializer_list<int64_t> leading) {
  std::vector<int64_t> shape = observation_space.tensor_shape();
  shape.insert(shape.begin(), leading);
  return shape;
}

torch::Tensor observation_view(const envs::BatchedEnvs& env, const void* rows, int64_t count) {
  const envs::Space& space = env.spec().observation_space;
  // from_blob needs a mutable pointer; the view is only ever read or copied.
  return torch::from_blob(const_cast<void*>(rows), observation_batch_shape(space, {count}),
                          torch::TensorOptions().dtype(scalar_type(space.dtype())));
}

}  // namespace concord::policies::runtime
