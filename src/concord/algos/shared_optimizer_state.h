#pragma once

#include <torch/optim/optimizer.h>

namespace concord::algos {

// Makes `replica`'s per-parameter statistics (RMSprop's square_avg, momentum and grad_avg;
// Adam's moments) the very tensors of `primary`'s, so that every replica's step updates one
// shared set of statistics in place: the shared RMSProp of A3C (Mnih et al., 2016). Both must
// be the same optimiser type over one flat parameter each. Statistics that do not exist yet are
// created by a step with a zero gradient, which leaves the parameters unchanged (eps must be
// positive, or 0 / 0 makes them NaN; for Adam it advances the step count by one). Throws
// std::logic_error for other optimiser types.
void share_optimizer_state(torch::optim::Optimizer& replica, torch::optim::Optimizer& primary);

}  // namespace concord::algos
