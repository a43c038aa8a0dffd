// data_parallel: training throughput (samples/s) of Synkhronos-style synchronous SGD
// (parallel::SynchronousSgd, gradients averaged by the registry's bucketed `allreduce`) at W = 1,
// 2, ... workers, beside the baseline of a plain serial training loop on one thread (no slicing,
// no communication), all measured in the same run (issue 20: Synkhronos's 7.5x on 8 GPUs, on a
// full-size workload). Every worker runs one LibTorch thread. The batch comes as an index batch
// from rank 0 over the training images resident on every worker (indexed input), so only indices
// travel. Each configuration trains for a fixed number of steps after a warm-up.
//
//   transports  threads:   W threads of this process over comm::ThreadGroup (shared memory)
//               processes: W processes on loopback, c10d Gloo (comm::connect): the program starts
//                          itself as the ranks with torchrun's variables (self_launch.h)
//   scaling     strong:    a fixed global batch (--batch, 256) split over the W workers
//               weak:      a fixed batch per worker (--worker-batch, 128): W x 128 rows per step,
//                          compared with the serial loop on the same W x 128 rows
//
// Per configuration, per step: samples/s, against the serial loop at the same global batch and
// against W = 1 (target of issue 20: at least 1.8x the serial loop at W = 2), and a breakdown:
//   step      wall time of a step on rank 0
//   compute   the step minus the time inside communicator operations, on the slowest worker:
//             forward, backward and the optimiser step on its slice (and the index selection)
//   comm      step - compute: communication (header and index distribution, the gradient
//             allreduce buckets, the loss average) including any wait for a slower worker
//   in ops    time inside communicator operations, mean over workers (measured by wrapping the
//             communicator the library is given; no library code changes)
//   allreduce alone: median blocking allreduce of a tensor of the flat gradient's size on the
//             same communicator after training (a cross-check on the comm column)
//   cores busy: CPU seconds of all workers (Gloo's threads included) per wall second
//
// The serial loop runs first, at every global batch and every slice (rows per worker) that a
// configuration or the extrapolation uses. Then an extrapolation to W = 8 (--extrapolate-to) per
// transport and scaling. It is a model, not a measurement:
//   speed-up(W) = serial(G) / (k x serial(n) + comm(W)),  n = ceil(G / W) rows per worker,
//                 G = --batch (strong) or W x --worker-batch (weak)
//   serial(x)   the serial loop's measured time per step on x rows: serial(n) is the compute time
//               of a 1/W slice (forward, backward, optimiser step); for a G beyond the measured
//               batches (weak scaling at W = 8), G x the time per row at the largest measured batch
//   comm(W)     = L + 2(W-1)/W x S / bw: the ring allreduce of the S-byte flat gradient (every
//               worker sends and receives 2(W-1)/W x S bytes) plus a per-step latency L, with L
//               and bw fitted (least squares) to the measured comm per step at the measured W:
//               at W = 1 and 2, L = comm(1) and bw = S / (comm(2) - comm(1))
//   k           1: every worker has a core of its own, as every GPU is its own device; and k as
//               measured: the compute of a slice at the largest measured W divided by serial(n),
//               the slowdown that workers sharing this machine cause each other
// The model's speed-up at W = 2 is printed beside the measured one, and Synkhronos's reported 7.5x
// on 8 GPUs (Stooke & Abbeel 2017) beside the prediction.
//
// The output starts with the command line, the hardware threads and the load average, and ends
// with the load average again: on a shared machine other processes' load slows the workers. An
// error is one line on stderr (a failed rank's output before it) and exit status 1. --quick
// (ctest's data_parallel_quick) trains global batches of 16 and 8 rows per worker for 2 steps.
//
//   data_parallel                                  resnet20 on fashion_mnist, W = 1, 2, both
//                                                  transports and scalings
//   data_parallel --transport processes --scaling weak --workers 1,2,4 --steps 50
//   data_parallel --model cnn --dataset mnist      the earlier, lighter workload
//   data_parallel --quick                          a smoke run (tiny batches, 2 steps): seconds
//   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. data_parallel --rank-batch 256
//                                                  one rank of a processes run, from a launcher;
//                                                  rank 0 prints one machine-readable line

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/comm/communicator.h"
#include "concord/comm/launch_environment.h"
#include "concord/comm/thread_group.h"
#include "concord/core/config.h"
#include "concord/core/timer.h"
#include "concord/data/dataset_registry.h"
#include "concord/data/labelled_data.h"
#include "concord/nn/flat_parameters.h"
#include "concord/parallel/synchronous_sgd.h"
#include "concord/supervised/classifier.h"
#include "concord/sync/sync_registry.h"
#include "machine_load.h"
#include "self_launch.h"

namespace {

namespace parallel = concord::parallel;
using concord::comm::Communicator;
using concord::comm::ReduceOp;
using concord::comm::Request;
using concord::data::LabelledData;

constexpr int64_t kQuickBatch = 16;       // strong scaling's global batch under --quick
constexpr int64_t kQuickWorkerBatch = 8;  // weak scaling's rows per worker under --quick
constexpr double kQuickTimeoutSeconds = 30.0;
constexpr double kTargetSpeedup = 1.8;  // issue 20: at W = 2, against the serial loop
constexpr double kSynkhronosSpeedup = 7.5;
constexpr int kSynkhronosGpus = 8;
constexpr char kResultMarker[] = "concord-data-parallel:";

struct Options {
  std::string dataset = "fashion_mnist";
  std::string model = "resnet20";
  std::string data_dir;
  int64_t batch = 256;
  int64_t worker_batch = 128;
  int64_t steps = 20;
  int64_t warmup = 3;
  int allreduce_repeats = 10;
  std::vector<int> workers = {1, 2};
  std::vector<std::string> transports = {"threads", "processes"};
  std::vector<std::string> scalings = {"strong", "weak"};
  int extrapolate_to = 8;
  double timeout_seconds = 300.0;
  bool quick = false;
  int64_t rank_batch = 0;  // as a rank process: the global batch to train (0: --batch)

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000.0));
  }
};

bool is_strong(const std::string& scaling) { return scaling == "strong"; }

int64_t global_batch(const Options& options, const std::string& scaling, int workers) {
  return is_strong(scaling) ? options.batch : workers * options.worker_batch;
}

// Rows on the slowest worker: slices of an uneven batch differ by at most one row.
int64_t rows_per_worker(int64_t batch, int workers) { return (batch + workers - 1) / workers; }

double process_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

torch::nn::Sequential seeded_model(const std::string& name) {
  torch::manual_seed(1);
  return concord::supervised::make_classifier(name);
}

torch::Tensor batch_indices(int64_t step, int64_t batch, int64_t rows) {
  return torch::arange(step * batch, (step + 1) * batch, torch::kInt64).remainder(rows);
}

// What one configuration measured, in seconds per timed step.
struct Measurement {
  double step = 0.0;             // wall time of a step on rank 0's clock
  double compute = 0.0;          // step minus time inside communicator operations, slowest worker
  double in_ops = 0.0;           // time inside communicator operations, mean over workers
  double allreduce_alone = 0.0;  // median blocking allreduce of the flat gradient's size, rank 0
  double cpu = 0.0;              // CPU seconds of all workers

  double communication() const { return step - compute; }
  double cores_busy() const { return step > 0.0 ? cpu / step : 0.0; }
};

// Forwards every operation to the communicator it wraps and adds up the wall time spent inside
// them, starting an operation and waiting for it alike: what a worker spends communicating,
// waits for slower workers included. ThreadGroup's collectives complete inside the call (also
// the bucket allreduces launched from backward's hooks); Gloo's complete in wait().
class TimedCommunicator : public Communicator {
 public:
  explicit TimedCommunicator(Communicator& inner) : inner_(inner) {}
  double seconds() const { return seconds_; }

  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  std::string backend() const override { return inner_.backend(); }
  std::chrono::milliseconds timeout() const override { return inner_.timeout(); }

  std::unique_ptr<Request> allreduce_async(const torch::Tensor& tensor, ReduceOp op) override {
    count_bytes(tensor);
    return timed([&] { return inner_.allreduce_async(tensor, op); });
  }
  std::unique_ptr<Request> broadcast_async(const torch::Tensor& tensor, int root) override {
    count_bytes(tensor);
    return timed([&] { return inner_.broadcast_async(tensor, root); });
  }
  std::unique_ptr<Request> send_async(const torch::Tensor& tensor, int destination, int tag) override {
    count_bytes(tensor);
    return timed([&] { return inner_.send_async(tensor, destination, tag); });
  }
  std::unique_ptr<Request> recv_async(const torch::Tensor& tensor, int source, int tag) override {
    return timed([&] { return inner_.recv_async(tensor, source, tag); });
  }
  std::vector<torch::Tensor> allgather(const torch::Tensor& tensor) override {
    count_bytes(tensor);
    const concord::core::Stopwatch clock;
    std::vector<torch::Tensor> result = inner_.allgather(tensor);
    seconds_ += clock.elapsed_seconds();
    return result;
  }
  void reduce_scatter(const torch::Tensor& output, const std::vector<torch::Tensor>& inputs, ReduceOp op) override {
    const concord::core::Stopwatch clock;
    inner_.reduce_scatter(output, inputs, op);
    seconds_ += clock.elapsed_seconds();
  }
  void barrier() override {
    const concord::core::Stopwatch clock;
    inner_.barrier();
    seconds_ += clock.elapsed_seconds();
  }

 private:
  class TimedRequest : public Request {
   public:
    TimedRequest(std::unique_ptr<Request> inner, double& seconds) : inner_(std::move(inner)), seconds_(seconds) {}
    void wait() override {
      const concord::core::Stopwatch clock;
      inner_->wait();
      seconds_ += clock.elapsed_seconds();
    }
    void abort() override { inner_->abort(); }

   private:
    std::unique_ptr<Request> inner_;
    double& seconds_;
  };

  template <typename Start>
  std::unique_ptr<Request> timed(const Start& start) {
    const concord::core::Stopwatch clock;
    std::unique_ptr<Request> request = start();
    seconds_ += clock.elapsed_seconds();
    return std::make_unique<TimedRequest>(std::move(request), seconds_);
  }

  Communicator& inner_;
  double seconds_ = 0.0;
};

// The baseline: select the rows, forward, loss, backward and an SGD step on one thread.
Measurement measure_serial(const Options& options, const LabelledData& train, int64_t batch) {
  auto model = seeded_model(options.model);
  concord::nn::FlatParameters parameters(*model);
  torch::optim::SGD optimizer({parameters.values()}, 0.05);
  concord::core::Stopwatch clock;
  double cpu_start = process_cpu_seconds();
  for (int64_t step = 0; step < options.warmup + options.steps; ++step) {
    if (step == options.warmup) {
      clock.restart();
      cpu_start = process_cpu_seconds();
    }
    const auto rows = train.select(batch_indices(step, batch, train.size()));
    parameters.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(rows.images), rows.labels).backward();
    optimizer.step();
  }
  Measurement result;
  result.step = clock.elapsed_seconds() / static_cast<double>(options.steps);
  result.compute = result.step;
  result.cpu = (process_cpu_seconds() - cpu_start) / static_cast<double>(options.steps);
  return result;
}

// One worker's part of a configuration (a collective: every rank calls it). Rank 0 feeds index
// batches of `batch` rows. `counts_process_cpu`: this worker adds its process's CPU time (one
// worker per process, or rank 0 alone when the workers are threads of one process).
Measurement train_as_worker(Communicator& communicator, torch::nn::Sequential model, const LabelledData& train,
                            const Options& options, int64_t batch, bool counts_process_cpu) {
  TimedCommunicator timed(communicator);
  concord::core::ConfigSchema schema;
  concord::sync::declare_sync_keys(schema);
  const concord::core::Config config(schema);
  concord::nn::FlatParameters parameters(*model);
  torch::optim::SGD optimizer({parameters.values()}, 0.05);
  auto strategy = concord::sync::make_sync_strategy("allreduce", config, timed);
  parallel::SynchronousSgd sgd(timed, *model, parameters, optimizer, *strategy,
                               [&](const std::vector<torch::Tensor>& slice) {
                                 return torch::nn::functional::cross_entropy(model->forward(slice[0]), slice[1]);
                               },
                               {parallel::InputKind::kIndexed, parallel::InputKind::kIndexed});
  sgd.set_resident(0, train.images);
  sgd.set_resident(1, train.labels);
  const bool feeds = communicator.rank() == 0;

  concord::core::Stopwatch clock;
  double cpu_start = process_cpu_seconds();
  double step_seconds = 0.0;
  double comm_seconds = 0.0;
  for (int64_t step = 0; step < options.warmup + options.steps; ++step) {
    if (step == options.warmup) {
      clock.restart();
      cpu_start = process_cpu_seconds();
    }
    const double comm_before = timed.seconds();
    const concord::core::Stopwatch step_clock;
    if (feeds) {
      const torch::Tensor indices = batch_indices(step, batch, train.size());
      sgd.step({indices, indices});
    } else {
      sgd.step({});
    }
    if (step >= options.warmup) {
      step_seconds += step_clock.elapsed_seconds();
      comm_seconds += timed.seconds() - comm_before;
    }
  }
  const double wall = clock.elapsed_seconds();
  const double cpu = counts_process_cpu ? process_cpu_seconds() - cpu_start : 0.0;

  // The communication cost alone: blocking allreduces of the flat gradient's size.
  const torch::Tensor flat = torch::zeros({parameters.numel()});
  std::vector<double> allreduce_times;
  communicator.barrier();
  for (int repeat = 0; repeat < options.allreduce_repeats; ++repeat) {
    const concord::core::Stopwatch allreduce_clock;
    communicator.allreduce(flat);
    allreduce_times.push_back(allreduce_clock.elapsed_seconds());
  }

  // Every worker's figures reach rank 0: the slowest compute, mean time in operations, CPU.
  const torch::Tensor slowest = torch::tensor({step_seconds - comm_seconds}, torch::kFloat64);
  communicator.allreduce(slowest, ReduceOp::kMax);
  const torch::Tensor sums = torch::tensor({comm_seconds, cpu}, torch::kFloat64);
  communicator.allreduce(sums, ReduceOp::kSum);

  const auto steps = static_cast<double>(options.steps);
  Measurement result;
  result.step = wall / steps;
  result.compute = slowest.item<double>() / steps;
  result.in_ops = sums[0].item<double>() / communicator.world_size() / steps;
  result.cpu = sums[1].item<double>() / steps;
  result.allreduce_alone = median(allreduce_times);
  return result;
}

Measurement measure_threads(const Options& options, const LabelledData& train, int workers, int64_t batch) {
  concord::comm::ThreadGroup group(workers, options.timeout());
  std::vector<torch::nn::Sequential> models;
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (int rank = 0; rank < workers; ++rank) {
    models.push_back(seeded_model(options.model));
    communicators.push_back(group.communicator(rank));
  }
  Measurement result;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  std::vector<bool> timed_out(static_cast<size_t>(workers), false);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < workers; ++rank) {
    threads.emplace_back([&, rank] {
      const auto index = static_cast<size_t>(rank);
      try {
        const Measurement mine = train_as_worker(*communicators[index], models[index], train, options, batch,
                                                 /*counts_process_cpu=*/rank == 0);
        if (rank == 0) result = mine;
      } catch (const concord::comm::CommTimeout&) {
        errors[index] = std::current_exception();
        timed_out[index] = true;
      } catch (...) {
        errors[index] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  // The cause rather than the timeouts of the workers left waiting for it.
  for (size_t rank = 0; rank < errors.size(); ++rank) {
    if (errors[rank] && !timed_out[rank]) std::rethrow_exception(errors[rank]);
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return result;
}

// The arguments a rank process of a processes run gets.
std::vector<std::string> rank_arguments(const Options& options, int64_t batch) {
  std::vector<std::string> arguments = {"--dataset",
                                        options.dataset,
                                        "--model",
                                        options.model,
                                        "--steps",
                                        std::to_string(options.steps),
                                        "--warmup",
                                        std::to_string(options.warmup),
                                        "--allreduce-repeats",
                                        std::to_string(options.allreduce_repeats),
                                        "--timeout",
                                        std::to_string(options.timeout_seconds),
                                        "--rank-batch",
                                        std::to_string(batch)};
  if (!options.data_dir.empty()) {
    arguments.push_back("--data-dir");
    arguments.push_back(options.data_dir);
  }
  return arguments;
}

Measurement measure_processes(const Options& options, int workers, int64_t batch) {
  const auto deadline = std::chrono::seconds(static_cast<int64_t>(2.0 * options.timeout_seconds) + 1);
  const std::vector<concord::bench::RankOutcome> outcomes =
      concord::bench::run_self_as_ranks(workers, rank_arguments(options, batch), /*echo_rank0=*/false, deadline);
  if (!concord::bench::report_rank_failures(outcomes)) {
    throw std::runtime_error("the run of " + std::to_string(workers) +
                             " rank processes failed (their output is above)");
  }
  std::istringstream lines(outcomes[0].output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kResultMarker, 0) != 0) continue;
    std::istringstream fields(line.substr(sizeof(kResultMarker) - 1));
    Measurement result;
    if (fields >> result.step >> result.compute >> result.in_ops >> result.allreduce_alone >> result.cpu) {
      return result;
    }
  }
  std::fprintf(stderr, "rank 0's output:\n%s", outcomes[0].output.c_str());
  throw std::runtime_error("rank 0 of " + std::to_string(workers) + " rank processes printed no measurement line");
}

// This process is one rank of a processes run: train and, on rank 0, print the measurement line.
int run_rank(const Options& options) {
  torch::set_num_threads(1);
  const auto launch = concord::comm::LaunchEnvironment::from_environment();
  const LabelledData train = concord::data::load_dataset(options.dataset, options.data_dir).train;
  concord::comm::ConnectOptions connect_options;
  connect_options.timeout = options.timeout();
  const std::unique_ptr<Communicator> communicator = concord::comm::connect(launch, connect_options);
  const int64_t batch = options.rank_batch > 0 ? options.rank_batch : options.batch;
  const Measurement result = train_as_worker(*communicator, seeded_model(options.model), train, options, batch,
                                             /*counts_process_cpu=*/true);
  if (communicator->rank() == 0) {
    std::printf("%s %.9g %.9g %.9g %.9g %.9g\n", kResultMarker, result.step, result.compute, result.in_ops,
                result.allreduce_alone, result.cpu);
    std::fflush(stdout);
  }
  return 0;
}

// y = intercept + slope x, least squares; `fitted` is false when fewer than two distinct x.
struct Line {
  double intercept = 0.0;
  double slope = 0.0;
  bool fitted = false;
  double at(double x) const { return intercept + slope * x; }
};

Line least_squares(const std::vector<std::pair<double, double>>& points) {
  Line line;
  if (points.empty()) return line;
  double mean_x = 0.0, mean_y = 0.0;
  for (const auto& [x, y] : points) {
    mean_x += x;
    mean_y += y;
  }
  mean_x /= static_cast<double>(points.size());
  mean_y /= static_cast<double>(points.size());
  double sxx = 0.0, sxy = 0.0;
  for (const auto& [x, y] : points) {
    sxx += (x - mean_x) * (x - mean_x);
    sxy += (x - mean_x) * (y - mean_y);
  }
  if (sxx <= 1e-12 * std::max(1.0, mean_x * mean_x)) return line;
  line.slope = sxy / sxx;
  line.intercept = mean_y - line.slope * mean_x;
  line.fitted = true;
  return line;
}

std::string ratio_text(double ratio) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2fx", ratio);
  return text;
}

struct Row {
  std::string transport;
  std::string scaling;
  int workers = 1;
  int64_t batch = 0;
  Measurement measured;
};

void print_table_header() {
  std::printf("%-10s %3s %8s %6s %10s %9s %7s %8s | %9s %9s %8s %8s %10s %6s\n", "transport", "W", "global", "rows/w",
              "samples/s", "vs serial", "vs W=1", "1.8x@W=2", "step ms", "compute", "comm", "in ops", "allreduce",
              "cores");
}

// `one_worker_rate`: samples/s of the same transport and scaling at W = 1 (0: none).
void print_row(const std::string& transport, int workers, int64_t batch, const Measurement& m, double serial_step,
               double one_worker_rate) {
  const double rate = static_cast<double>(batch) / m.step;
  const double vs_serial = serial_step / m.step;
  const std::string vs_one = one_worker_rate > 0.0 ? ratio_text(rate / one_worker_rate) : "-";
  const bool serial = transport == "serial";
  const std::string target = serial || workers != 2 ? "-" : (vs_serial >= kTargetSpeedup ? "met" : "NOT met");
  char comm[32] = "-", in_ops[32] = "-", alone[32] = "-";
  if (!serial) {
    std::snprintf(comm, sizeof(comm), "%.2f", m.communication() * 1e3);
    std::snprintf(in_ops, sizeof(in_ops), "%.2f", m.in_ops * 1e3);
    std::snprintf(alone, sizeof(alone), "%.3f", m.allreduce_alone * 1e3);
  }
  std::printf("%-10s %3d %8lld %6lld %10.0f %9s %7s %8s | %9.2f %9.2f %8s %8s %10s %6.2f\n", transport.c_str(), workers,
              static_cast<long long>(batch), static_cast<long long>(rows_per_worker(batch, workers)), rate,
              ratio_text(vs_serial).c_str(), vs_one.c_str(), target.c_str(), m.step * 1e3, m.compute * 1e3, comm,
              in_ops, alone, m.cores_busy());
  std::fflush(stdout);
}

// The serial loop's time per step on `batch` rows: measured, or else `batch` times the time per
// row at the largest measured batch (the extrapolation's global batch under weak scaling).
double serial_step_at(const std::map<int64_t, Measurement>& serial, int64_t batch) {
  const auto measured = serial.find(batch);
  if (measured != serial.end()) return measured->second.step;
  const auto& [largest, m] = *serial.rbegin();
  return m.step * static_cast<double>(batch) / static_cast<double>(largest);
}

double ring_factor(int workers) { return 2.0 * (workers - 1) / workers; }

void print_extrapolation(const Options& options, const std::vector<Row>& rows,
                         const std::map<int64_t, Measurement>& serial, int64_t gradient_bytes) {
  const int target = options.extrapolate_to;
  const double megabytes = static_cast<double>(gradient_bytes) / 1e6;
  std::printf("\nExtrapolation to W = %d: a MODEL fitted to the measurements above, not a measurement.\n", target);
  std::printf(
      "  speed-up(W) = serial(G) / (k x serial(n) + comm(W)), G = %lld (strong) or W x %lld (weak), n = ceil(G / W)\n"
      "  serial(x)   = the serial loop's measured time per step on x rows (measured at every n and G used; for a\n"
      "                G beyond them, G x its time per row at the largest measured batch): serial(n) is the\n"
      "                compute time of a 1/W slice (forward, backward, optimiser step)\n"
      "  comm(W)     = L + 2(W-1)/W x S / bw: ring allreduce of the S = %.3f MB flat gradient (each worker sends\n"
      "                and receives 2(W-1)/W x S) plus a per-step latency L; L and bw: least squares over the\n"
      "                measured comm (step - compute) per step at the measured W (the ring term is 0 at W = 1)\n"
      "  k           = 1: every worker has a core of its own, as every GPU is its own device; or k measured: the\n"
      "                compute of a slice while the most workers measured run at once / serial(n), the slowdown\n"
      "                workers sharing this machine cause each other\n"
      "  Synkhronos (Stooke & Abbeel 2017) reports %.1fx on %d GPUs.\n",
      static_cast<long long>(options.batch), static_cast<long long>(options.worker_batch), megabytes,
      kSynkhronosSpeedup, kSynkhronosGpus);
  for (const std::string& transport : options.transports) {
    std::vector<std::pair<double, double>> comm_points;
    int most_workers = 0;
    for (const Row& row : rows) {
      if (row.transport != transport) continue;
      comm_points.emplace_back(ring_factor(row.workers), row.measured.communication());
      most_workers = std::max(most_workers, row.workers);
    }
    Line comm = least_squares(comm_points);
    if (!comm.fitted) {
      std::printf("\n%s: cannot fit comm(W): it needs measurements at two worker counts (e.g. --workers 1,2)\n",
                  transport.c_str());
      continue;
    }
    double contention = 0.0;
    int contention_rows = 0;
    for (const Row& row : rows) {
      if (row.transport != transport || row.workers != most_workers) continue;
      contention += row.measured.compute / serial_step_at(serial, rows_per_worker(row.batch, row.workers));
      ++contention_rows;
    }
    contention /= contention_rows;
    const bool bandwidth_resolved = comm.slope > 0.0;
    const bool latency_clamped = comm.intercept < 0.0;
    comm.slope = std::max(comm.slope, 0.0);
    comm.intercept = std::max(comm.intercept, 0.0);
    const auto comm_at = [&](int workers) { return comm.at(ring_factor(workers)); };
    const auto speedup = [&](int64_t batch, int workers, double k) {
      return serial_step_at(serial, batch) /
             (k * serial_step_at(serial, rows_per_worker(batch, workers)) + comm_at(workers));
    };

    char bandwidth[96];
    if (bandwidth_resolved) {
      std::snprintf(bandwidth, sizeof(bandwidth), "%.1f MB/s", megabytes / comm.slope);
    } else {
      std::snprintf(bandwidth, sizeof(bandwidth), "unresolved (comm did not grow with W; ring term taken as 0)");
    }
    std::printf("\n%s: L = %.3f ms%s, bw = %s; k measured at W = %d: %.2f\n", transport.c_str(), comm.intercept * 1e3,
                latency_clamped ? " (fit < 0, taken as 0)" : "", bandwidth, most_workers, contention);
    const std::string own = "W=" + std::to_string(target) + " k=1";
    const std::string shared = "W=" + std::to_string(target) + " k=" + ratio_text(contention).substr(0, 4);
    const std::string check = "W=2 model/measured (k=" + ratio_text(contention).substr(0, 4) + ")";
    std::printf("  %-7s %6s %6s %10s %10s %9s %10s %10s %28s %18s\n", "scaling", "G", "rows/w", "serial(G)",
                "serial(n)", "comm(W)", own.c_str(), shared.c_str(), check.c_str(), "Synkhronos 8 GPUs");
    for (const std::string& scaling : options.scalings) {
      const int64_t batch = global_batch(options, scaling, target);
      const int64_t slice = rows_per_worker(batch, target);
      std::string measured_check = "-";
      for (const Row& row : rows) {
        if (row.transport != transport || row.scaling != scaling || row.workers != 2) continue;
        measured_check = ratio_text(speedup(row.batch, 2, contention)) + " / " +
                         ratio_text(serial_step_at(serial, row.batch) / row.measured.step);
      }
      std::printf("  %-7s %6lld %6lld %10.2f %10.2f %9.3f %10s %10s %28s %18s\n", scaling.c_str(),
                  static_cast<long long>(batch), static_cast<long long>(slice), serial_step_at(serial, batch) * 1e3,
                  serial_step_at(serial, slice) * 1e3, comm_at(target) * 1e3,
                  ratio_text(speedup(batch, target, 1.0)).c_str(),
                  ratio_text(speedup(batch, target, contention)).c_str(), measured_check.c_str(),
                  (ratio_text(kSynkhronosSpeedup) + " (reported)").c_str());
    }
  }
  std::printf("  (serial(G), serial(n), comm(W) in ms per step)\n");
  std::fflush(stdout);
}

std::string command_line(int argc, char** argv) {
  std::string text;
  for (int i = 0; i < argc; ++i) text += (i > 0 ? " " : "") + std::string(argv[i]);
  return text;
}

int run(const Options& options, const std::string& command) {
  torch::set_num_threads(1);
  const std::string load_at_start = concord::bench::load_average();
  const LabelledData train = concord::data::load_dataset(options.dataset, options.data_dir).train;
  int64_t parameter_count = 0;
  {
    auto model = seeded_model(options.model);
    parameter_count = concord::nn::FlatParameters(*model).numel();
  }
  const int64_t gradient_bytes = parameter_count * static_cast<int64_t>(sizeof(float));

  std::printf(
      "data_parallel: %s (%lld parameters, %.3f MB of float32 gradient) on %s (%lld training images), synchronous "
      "SGD (parallel::SynchronousSgd, bucketed `allreduce`, indexed input), 1 LibTorch thread per worker\n",
      options.model.c_str(), static_cast<long long>(parameter_count), static_cast<double>(gradient_bytes) / 1e6,
      options.dataset.c_str(), static_cast<long long>(train.size()));
  std::printf("command: %s\n", command.c_str());
  std::printf("hardware threads: %u; load average (1, 5, 15 min) at start: %s\n", std::thread::hardware_concurrency(),
              load_at_start.c_str());
  std::printf(
      "%lld timed steps after %lld warm-up per configuration; times are per step; strong scaling: global batch %lld; "
      "weak scaling: %lld rows per worker%s\n",
      static_cast<long long>(options.steps), static_cast<long long>(options.warmup),
      static_cast<long long>(options.batch), static_cast<long long>(options.worker_batch),
      options.quick ? "\n--quick: a smoke run; its figures measure nothing" : "");
  std::printf(
      "columns: vs serial = serial loop's time per step at the same global batch / this one's; compute = step minus "
      "time in communicator operations on the slowest worker; comm = step - compute; in ops = time in communicator "
      "operations, mean over workers; allreduce = median blocking allreduce of the flat gradient alone (ms); cores = "
      "CPU seconds of all workers per wall second\n");
  std::fflush(stdout);

  // The serial loop at every global batch and every slice a configuration or the extrapolation
  // uses, first (the extrapolation's global batch under weak scaling excepted: see serial_step_at).
  std::vector<int64_t> serial_batches;
  for (const std::string& scaling : options.scalings) {
    for (const int workers : options.workers) {
      const int64_t batch = global_batch(options, scaling, workers);
      serial_batches.push_back(batch);
      serial_batches.push_back(rows_per_worker(batch, workers));
    }
    const int64_t batch = global_batch(options, scaling, options.extrapolate_to);
    serial_batches.push_back(rows_per_worker(batch, options.extrapolate_to));
    if (is_strong(scaling)) serial_batches.push_back(batch);
  }
  std::map<int64_t, Measurement> serial;
  for (const int64_t batch : serial_batches) {
    if (serial.count(batch) == 0) serial[batch] = measure_serial(options, train, batch);
  }

  std::printf("\nserial loop (the baseline), at every global batch and slice used\n");
  std::printf("%8s %10s %9s %6s\n", "rows", "samples/s", "step ms", "cores");
  for (const auto& [batch, m] : serial) {
    std::printf("%8lld %10.0f %9.2f %6.2f\n", static_cast<long long>(batch), static_cast<double>(batch) / m.step,
                m.step * 1e3, m.cores_busy());
  }
  std::fflush(stdout);

  std::vector<Row> rows;
  for (const std::string& scaling : options.scalings) {
    if (is_strong(scaling)) {
      std::printf("\nstrong scaling: global batch %lld split over W workers\n", static_cast<long long>(options.batch));
    } else {
      std::printf("\nweak scaling: %lld rows per worker, global batch W x %lld\n",
                  static_cast<long long>(options.worker_batch), static_cast<long long>(options.worker_batch));
    }
    print_table_header();
    std::vector<int64_t> printed;
    for (const int workers : options.workers) {
      const int64_t batch = global_batch(options, scaling, workers);
      if (std::find(printed.begin(), printed.end(), batch) != printed.end()) continue;
      printed.push_back(batch);
      print_row("serial", 1, batch, serial.at(batch), serial.at(batch).step, 0.0);
    }
    for (const std::string& transport : options.transports) {
      double one_worker_rate = 0.0;
      for (const int workers : options.workers) {
        const int64_t batch = global_batch(options, scaling, workers);
        Row row{transport, scaling, workers, batch, {}};
        row.measured = transport == "threads" ? measure_threads(options, train, workers, batch)
                                              : measure_processes(options, workers, batch);
        rows.push_back(row);
        print_row(transport, workers, batch, row.measured, serial.at(batch).step, one_worker_rate);
        if (workers == 1) one_worker_rate = static_cast<double>(batch) / row.measured.step;
      }
    }
  }
  print_extrapolation(options, rows, serial, gradient_bytes);
  std::printf("\nload average (1, 5, 15 min) at end: %s\n", concord::bench::load_average().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "data_parallel: samples/s of synchronous SGD (Synkhronos-style) over threads and processes, strong and weak "
      "scaling, against a serial loop, with a compute / communication breakdown and a model extrapolated to 8 "
      "workers"};
  Options options;
  app.add_option("--dataset", options.dataset, "Data set: mnist or fashion_mnist")->capture_default_str();
  app.add_option("--model", options.model, "Classifier: mlp, cnn, fedavg_cnn or resnet20")->capture_default_str();
  app.add_option("--data-dir", options.data_dir, "Where downloaded data and caches are (default: the build's)");
  app.add_option("--batch", options.batch, "Strong scaling: global batch, rows per step over all workers")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--worker-batch", options.worker_batch, "Weak scaling: rows per worker per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--steps", options.steps, "Timed steps per configuration")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--warmup", options.warmup, "Untimed steps first, per configuration")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--workers", options.workers, "Worker counts, e.g. 1,2,4")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--transport", options.transports, "threads, processes or both (threads,processes)")
      ->delimiter(',')
      ->check(CLI::IsMember({"threads", "processes"}))
      ->capture_default_str();
  app.add_option("--scaling", options.scalings, "strong, weak or both (strong,weak)")
      ->delimiter(',')
      ->check(CLI::IsMember({"strong", "weak"}))
      ->capture_default_str();
  app.add_option("--extrapolate-to", options.extrapolate_to, "Worker count the model predicts the speed-up at")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--allreduce-repeats", options.allreduce_repeats,
                 "Blocking allreduces of the flat gradient timed after each configuration (median)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--timeout", options.timeout_seconds,
                 "Seconds any communication operation (and rendezvous) may take; a run of rank processes is killed "
                 "after twice that (default 300, 30 with --quick)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quick", options.quick,
               "Smoke run: global batch 16, 8 rows per worker, 2 steps after 1 warm-up, 3 allreduces, timeout 30 s "
               "(options given explicitly win)");
  app.add_option("--rank-batch", options.rank_batch, "As a rank process: the global batch to train")
      ->group("");  // set by the launching process for its ranks
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help
    std::fprintf(stderr, "data_parallel: error: %s (see --help)\n", error.what());
    return 1;
  }
  if (options.quick) {
    if (app.count("--batch") == 0) options.batch = kQuickBatch;
    if (app.count("--worker-batch") == 0) options.worker_batch = kQuickWorkerBatch;
    if (app.count("--steps") == 0) options.steps = 2;
    if (app.count("--warmup") == 0) options.warmup = 1;
    if (app.count("--allreduce-repeats") == 0) options.allreduce_repeats = 3;
    if (app.count("--timeout") == 0) options.timeout_seconds = kQuickTimeoutSeconds;
  }

  try {
    if (options.workers.empty() || options.transports.empty() || options.scalings.empty()) {
      throw std::invalid_argument("--workers, --transport and --scaling each need at least one value");
    }
    if (concord::bench::started_as_rank()) return run_rank(options);
    const bool strong = std::find(options.scalings.begin(), options.scalings.end(), "strong") != options.scalings.end();
    const int most_workers = *std::max_element(options.workers.begin(), options.workers.end());
    if (strong && options.batch < most_workers) {
      throw std::invalid_argument("--batch " + std::to_string(options.batch) + " cannot feed " +
                                  std::to_string(most_workers) + " workers (at least one row each)");
    }
    return run(options, command_line(argc, argv));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "data_parallel: error: %s\n", error.what());
    return 1;
  }
}
