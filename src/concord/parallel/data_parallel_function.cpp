#include "concord/parallel/data_parallel_function.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "concord/parallel/slicing.h"

namespace concord::parallel {
namespace {

// The call header rank 0 broadcasts: per input its dtype, rank and up to kMaxDims sizes, then a
// status word (0: valid; 1: rank 0 rejected the call), so that a bad call fails on every rank
// instead of leaving the others waiting.
constexpr int64_t kMaxDims = 8;
constexpr int64_t kFieldsPerInput = 2 + kMaxDims;
constexpr int kInputTagBase = 0x5D900;

bool is_sliced(InputKind kind) { return kind == InputKind::kSliced || kind == InputKind::kIndexed; }

// 0-dimensional results (a loss) become one row, so that results of several slices concatenate.
torch::Tensor as_rows(const torch::Tensor& tensor) { return tensor.dim() == 0 ? tensor.reshape({1}) : tensor; }

}  // namespace

DataParallelFunction::DataParallelFunction(comm::Communicator& communicator, TensorFunction function, FunctionSpec spec)
    : communicator_(communicator), function_(std::move(function)), spec_(std::move(spec)) {
  if (!function_ || spec_.inputs.empty() || spec_.sub_slices < 1) {
    throw std::invalid_argument("DataParallelFunction needs a function, at least one input and sub_slices >= 1 (got " +
                                std::to_string(spec_.inputs.size()) +
                                " inputs, sub_slices = " + std::to_string(spec_.sub_slices) + ")");
  }
}

void DataParallelFunction::set_resident(size_t input, torch::Tensor data) {
  if (input >= spec_.inputs.size() || spec_.inputs[input] != InputKind::kIndexed) {
    throw std::invalid_argument("DataParallelFunction: input " + std::to_string(input) + " is not an indexed input");
  }
  resident_[input] = std::move(data);
}

std::vector<torch::Tensor> DataParallelFunction::distribute_inputs(const std::vector<torch::Tensor>& inputs,
                                                                   int64_t& total_rows) {
  const int rank = communicator_.rank();
  const int world = communicator_.world_size();
  const auto count = static_cast<int64_t>(spec_.inputs.size());
  torch::Tensor header = torch::zeros({count * kFieldsPerInput + 1}, torch::kInt64);
  std::string rejection;
  if (rank == 0) {
    auto* fields = header.data_ptr<int64_t>();
    int64_t rows = -1;
    if (static_cast<int64_t>(inputs.size()) != count) {
      rejection = "expected " + std::to_string(count) + " inputs, got " + std::to_string(inputs.size());
    }
    for (int64_t i = 0; rejection.empty() && i < count; ++i) {
      const torch::Tensor& input = inputs[static_cast<size_t>(i)];
      const InputKind kind = spec_.inputs[static_cast<size_t>(i)];
      if (!input.defined() || input.dim() > kMaxDims || (is_sliced(kind) && input.dim() == 0)) {
        rejection = "input " + std::to_string(i) +
                    " is undefined, 0-dimensional where it is sliced, or has more than " + std::to_string(kMaxDims) +
                    " dimensions";
        break;
      }
      if (kind == InputKind::kIndexed && input.scalar_type() != torch::kInt64) {
        rejection = "indexed input " + std::to_string(i) + " must be an int64 index batch";
        break;
      }
      if (is_sliced(kind)) {
        if (rows >= 0 && input.size(0) != rows) {
          rejection = "sliced inputs disagree in dimension 0 (" + std::to_string(rows) + " vs " +
                      std::to_string(input.size(0)) + " in input " + std::to_string(i) + ")";
          break;
        }
        rows = input.size(0);
      }
      int64_t* field = fields + i * kFieldsPerInput;
      field[0] = static_cast<int64_t>(input.scalar_type());
      field[1] = input.dim();
      for (int64_t d = 0; d < input.dim(); ++d) field[2 + d] = input.size(d);
    }
    if (rejection.empty() && rows >= 0 && rows < int64_t{world} * spec_.sub_slices) {
      rejection = std::to_string(rows) + " rows cannot feed " + std::to_string(world) + " workers x " +
                  std::to_string(spec_.sub_slices) + " sub-slices";
    }
    fields[count * kFieldsPerInput] = rejection.empty() ? 0 : 1;
  }
  communicator_.broadcast(header, 0);
  const auto* fields = header.data_ptr<int64_t>();
  if (fields[count * kFieldsPerInput] != 0) {
    throw std::invalid_argument("data-parallel call rejected by rank 0" + (rejection.empty() ? "" : ": " + rejection));
  }

  total_rows = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (is_sliced(spec_.inputs[static_cast<size_t>(i)])) total_rows = fields[i * kFieldsPerInput + 2];
  }
  const std::vector<int64_t> bounds = slice_bounds(total_rows, world);

  std::vector<torch::Tensor> local(static_cast<size_t>(count));
  std::vector<torch::Tensor> outgoing;
  std::vector<std::unique_ptr<comm::Request>> sends;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t* field = fields + i * kFieldsPerInput;
    std::vector<int64_t> shape(field + 2, field + 2 + field[1]);
    const auto dtype = static_cast<torch::ScalarType>(field[0]);
    const InputKind kind = spec_.inputs[static_cast<size_t>(i)];
    const int tag = kInputTagBase + static_cast<int>(i);
    if (kind == InputKind::kBroadcast) {
      torch::Tensor whole = rank == 0 ? inputs[static_cast<size_t>(i)].contiguous() : torch::empty(shape, dtype);
      communicator_.broadcast(whole, 0);
      local[static_cast<size_t>(i)] = whole;
      continue;
    }
    if (rank == 0) {
      const torch::Tensor& input = inputs[static_cast<size_t>(i)];
      for (int r = 1; r < world; ++r) {
        outgoing.push_back(
            input.slice(0, bounds[static_cast<size_t>(r)], bounds[static_cast<size_t>(r) + 1]).contiguous());
        sends.push_back(communicator_.send_async(outgoing.back(), r, tag));
      }
      local[static_cast<size_t>(i)] = input.slice(0, bounds[0], bounds[1]);
    } else {
      shape[0] = bounds[static_cast<size_t>(rank) + 1] - bounds[static_cast<size_t>(rank)];
      local[static_cast<size_t>(i)] = torch::empty(shape, dtype);
      communicator_.recv(local[static_cast<size_t>(i)], 0, tag);
    }
    if (kind == InputKind::kIndexed) {
      const auto resident = resident_.find(static_cast<size_t>(i));
      if (resident == resident_.end()) {
        throw std::logic_error("indexed input " + std::to_string(i) + " has no resident data on rank " +
                               std::to_string(rank) + " (call set_resident first)");
      }
      local[static_cast<size_t>(i)] = resident->second.index_select(0, local[static_cast<size_t>(i)]);
    }
  }
  for (auto& send : sends) send->wait();
  return local;
}

std::vector<torch::Tensor> DataParallelFunction::operator()(const std::vector<torch::Tensor>& inputs) {
  int64_t total_rows = 0;
  const std::vector<torch::Tensor> local = distribute_inputs(inputs, total_rows);
  int64_t local_rows = 0;
  for (size_t i = 0; i < local.size(); ++i) {
    if (is_sliced(spec_.inputs[i])) local_rows = local[i].size(0);
  }
  // Without any sliced input every worker runs the function once on the broadcast inputs.
  const int pieces = local_rows > 0 ? spec_.sub_slices : 1;
  const std::vector<int64_t> bounds = slice_bounds(local_rows, pieces);
  std::vector<std::vector<torch::Tensor>> results;
  std::vector<int64_t> rows;
  for (int piece = 0; piece < pieces; ++piece) {
    const int64_t begin = bounds[static_cast<size_t>(piece)];
    const int64_t end = bounds[static_cast<size_t>(piece) + 1];
    std::vector<torch::Tensor> piece_inputs;
    for (size_t i = 0; i < local.size(); ++i) {
      piece_inputs.push_back(is_sliced(spec_.inputs[i]) ? local[i].slice(0, begin, end) : local[i]);
    }
    results.push_back(function_(piece_inputs, CallSlice{end - begin, total_rows, piece, pieces}));
    if (results.back().size() != spec_.outputs.size()) {
      throw std::invalid_argument("data-parallel function returned " + std::to_string(results.back().size()) +
                                  " outputs, its spec declares " + std::to_string(spec_.outputs.size()));
    }
    rows.push_back(end - begin);
  }
  return combine(std::move(results), rows, std::max<int64_t>(total_rows, 1));
}

std::vector<torch::Tensor> DataParallelFunction::combine(std::vector<std::vector<torch::Tensor>> per_sub_slice,
                                                         const std::vector<int64_t>& sub_slice_rows,
                                                         int64_t total_rows) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> combined;
  for (size_t o = 0; o < spec_.outputs.size(); ++o) {
    const Aggregation aggregation = spec_.outputs[o];
    std::vector<torch::Tensor> pieces;
    for (auto& outputs : per_sub_slice) pieces.push_back(outputs[o].detach());
    torch::Tensor result;
    switch (aggregation) {
      case Aggregation::kAvg:
        result = torch::zeros_like(pieces[0]);
        for (size_t p = 0; p < pieces.size(); ++p) result.add_(pieces[p], static_cast<double>(sub_slice_rows[p]));
        communicator_.allreduce(result, comm::ReduceOp::kSum);
        result.div_(static_cast<double>(total_rows));
        break;
      case Aggregation::kSum:
        result = pieces[0].clone();
        for (size_t p = 1; p < pieces.size(); ++p) result.add_(pieces[p]);
        communicator_.allreduce(result, comm::ReduceOp::kSum);
        break;
      case Aggregation::kMax:
      case Aggregation::kMin: {
        const bool max = aggregation == Aggregation::kMax;
        result = pieces[0].clone();
        for (size_t p = 1; p < pieces.size(); ++p)
          result = max ? torch::maximum(result, pieces[p]) : torch::minimum(result, pieces[p]);
        result = result.contiguous();
        communicator_.allreduce(result, max ? comm::ReduceOp::kMax : comm::ReduceOp::kMin);
        break;
      }
      case Aggregation::kGather:
      case Aggregation::kNone: {
        std::vector<torch::Tensor> row_pieces;
        for (const auto& piece : pieces) row_pieces.push_back(as_rows(piece));
        result = torch::cat(row_pieces).contiguous();
        if (aggregation == Aggregation::kGather) result = gather_rows(result);
        break;
      }
    }
    combined.push_back(result);
  }
  return combined;
}

torch::Tensor DataParallelFunction::gather_rows(const torch::Tensor& local) {
  // allgather needs one shape on every rank: pad to the longest slice, then trim.
  torch::Tensor rows = torch::full({1}, local.size(0), torch::kInt64);
  const std::vector<torch::Tensor> all_rows = communicator_.allgather(rows);
  int64_t longest = 0;
  for (const auto& r : all_rows) longest = std::max(longest, r.item<int64_t>());
  std::vector<int64_t> padded_shape = local.sizes().vec();
  padded_shape[0] = longest;
  torch::Tensor padded = torch::zeros(padded_shape, local.options());
  padded.slice(0, 0, local.size(0)).copy_(local);
  const std::vector<torch::Tensor> all = communicator_.allgather(padded);
  std::vector<torch::Tensor> trimmed;
  for (size_t r = 0; r < all.size(); ++r) trimmed.push_back(all[r].slice(0, 0, all_rows[r].item<int64_t>()));
  return torch::cat(trimmed);
}

}  // namespace concord::parallel
