#include "concord/algos/reverse_scan.h"

#include <ATen/Dispatch.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/empty_like.h>

namespace concord::algos {

at::Tensor reverse_scan(const at::Tensor& base, const at::Tensor& coef, const at::Tensor& last) {
  const int64_t steps = base.size(0);
  const int64_t batch = base.size(1);
  at::Tensor out = at::empty_like(base, at::MemoryFormat::Contiguous);
  if (base.is_cpu()) {
    // Per-row tensor operations cost microseconds each; this loop costs nanoseconds per element.
    const at::Tensor base_c = base.contiguous();
    const at::Tensor coef_c = coef.to(base.scalar_type()).contiguous();
    const at::Tensor last_c = last.to(base.scalar_type()).contiguous();
    AT_DISPATCH_FLOATING_TYPES(base.scalar_type(), "reverse_scan", [&] {
      const scalar_t* b = base_c.data_ptr<scalar_t>();
      const scalar_t* c = coef_c.data_ptr<scalar_t>();
      const scalar_t* next = last_c.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      for (int64_t t = steps - 1; t >= 0; --t) {
        for (int64_t i = 0; i < batch; ++i) o[t * batch + i] = b[t * batch + i] + c[t * batch + i] * next[i];
        next = o + t * batch;
      }
    });
    return out;
  }
  at::Tensor next = last;
  for (int64_t t = steps - 1; t >= 0; --t) {
    at::Tensor row = out.select(0, t);
    at::addcmul_out(row, base.select(0, t), coef.select(0, t), next);
    next = row;
  }
  return out;
}

}  // namespace concord::algos
