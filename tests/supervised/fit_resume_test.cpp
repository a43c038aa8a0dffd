// A fit stopped at an evaluation step and resumed from its checkpoint ends exactly where the
// uninterrupted fit ends: every rank's parameters, momentum, strategy and sampler state, bit for
// bit, on a slice of MNIST small enough for a few dozen steps in well under a second.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/core/checkpoint.h"
#include "concord/data/dataset_registry.h"
#include "concord/data/mnist.h"
#include "concord/supervised/fit.h"
#include "concord/sync/sync_registry.h"

namespace concord::supervised {
namespace {

const data::TrainTestSplit& tiny_mnist() {
  static const data::TrainTestSplit split = [] {
    const data::TrainTestSplit full = data::load_mnist(data::default_data_dir());
    return data::TrainTestSplit{
        data::LabelledData{full.train.images.slice(0, 0, 256), full.train.labels.slice(0, 0, 256)},
        data::LabelledData{full.test.images.slice(0, 0, 64), full.test.labels.slice(0, 0, 64)}};
  }();
  return split;
}

struct ResumeCase {
  std::string name;
  std::vector<std::string> overrides;
  int64_t stop_at = 0;  // the evaluation step (round) the interrupted fit stops at
};

void PrintTo(const ResumeCase& test_case, std::ostream* out) { *out << test_case.name; }

core::Config resume_config(const ResumeCase& test_case) {
  core::ConfigSchema schema;
  schema.declare("run.seed", int64_t{7}, "seed");
  declare_fit_keys(schema);
  sync::declare_sync_keys(schema);
  core::Config config(schema);
  config.apply_override("fit.batch_size=16", "test");
  config.apply_override("fit.eval_interval=2", "test");
  for (const std::string& override : test_case.overrides) config.apply_override(override, "test");
  return config;
}

// A fit to its end, stopping at `stop_at` (0: never) or resuming from `resume_from`; returns its
// last checkpoint, and the steps (rounds) it took in `steps`.
core::Checkpoint fit_to_end(const core::Config& config, int64_t stop_at, const core::Checkpoint* resume_from,
                            std::vector<int64_t>* steps = nullptr) {
  std::optional<core::Checkpoint> last;
  int64_t evaluated = 0;
  FitCallbacks callbacks;
  callbacks.on_step = [&](int64_t step) {
    if (steps != nullptr) steps->push_back(step);
  };
  callbacks.on_evaluation = [&](const FitRecord& record) { evaluated = record.step; };
  callbacks.should_stop = [&] { return stop_at > 0 && evaluated >= stop_at; };
  callbacks.on_checkpoint = [&](int64_t, const core::Checkpoint& state) { last = state; };
  fit_with_threads(fit_config_from(config), config, tiny_mnist(), callbacks, resume_from);
  EXPECT_TRUE(last.has_value());
  return last ? *last : core::Checkpoint{};
}

class FitResume : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(FitResume, EndsBitForBitWhereTheUninterruptedFitEnds) {
  torch::set_num_threads(1);
  const core::Config config = resume_config(GetParam());
  const core::Checkpoint uninterrupted = fit_to_end(config, 0, nullptr);
  const core::Checkpoint stopped = fit_to_end(config, GetParam().stop_at, nullptr);
  const std::string step_key = fit_config_from(config).federated() ? "round" : "step";
  ASSERT_EQ(stopped.metadata.at("ranks").at(0).at("loop").at(step_key), GetParam().stop_at);
  std::vector<int64_t> steps;
  const core::Checkpoint resumed = fit_to_end(config, 0, &stopped, &steps);
  // It went on from the stop rather than starting over.
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.front(), GetParam().stop_at + 1);
  EXPECT_EQ(steps.back(), uninterrupted.metadata.at("ranks").at(0).at("loop").at(step_key));
  EXPECT_EQ(static_cast<int64_t>(steps.size()), steps.back() - GetParam().stop_at);

  const auto& ranks = uninterrupted.metadata.at("ranks");
  ASSERT_EQ(resumed.metadata.at("ranks").size(), ranks.size());
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    for (const char* section : {"loop", "sync", "schedule", "sampler"}) {
      EXPECT_EQ(resumed.metadata.at("ranks").at(rank).value(section, nlohmann::json()),
                ranks.at(rank).value(section, nlohmann::json()))
          << "rank " << rank << " " << section;
    }
  }
  ASSERT_EQ(resumed.tensors.size(), uninterrupted.tensors.size());
  for (const auto& [name, tensor] : uninterrupted.tensors) {
    ASSERT_EQ(resumed.tensors.count(name), 1u) << name;
    EXPECT_TRUE(torch::equal(resumed.tensors.at(name), tensor)) << name;
  }
  // The stopped fit's own end is not the uninterrupted one's: the test compares something.
  EXPECT_FALSE(torch::equal(stopped.tensors.at("parameters"), uninterrupted.tensors.at("parameters")));
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, FitResume,
    ::testing::Values(
        ResumeCase{"allreduce", {"fit.steps=12", "fit.momentum=0.9"}, 6},
        ResumeCase{"local_sgd",
                   {"fit.strategy=local_sgd", "fit.steps=12", "fit.momentum=0.9", "sync.local_sgd.local_steps=4",
                    "sync.local_sgd.warmup_steps=2"},
                   6},
        ResumeCase{"easgd", {"fit.strategy=easgd", "fit.steps=12", "sync.easgd.tau=4", "sync.easgd.momentum=0.5"}, 6},
        ResumeCase{
            "easgd_asynchronous",
            {"fit.strategy=easgd", "fit.workers=3", "fit.steps=12", "sync.easgd.tau=3", "sync.easgd.asynchronous=true"},
            4},
        ResumeCase{
            "gossip", {"fit.strategy=gossip", "fit.workers=3", "fit.steps=12", "sync.gossip.probability=0.5"}, 6},
        // 256 rows / (2 x 16) = 8 steps an epoch, then 4 and 2 as the batch doubles: the stop
        // falls inside the second epoch, after a doubling.
        ResumeCase{"abs",
                   {"fit.schedule=abs", "fit.epochs=3", "fit.steps=100", "fit.abs.force_after_epochs=1",
                    "fit.abs.hessian_batch=32", "fit.abs.power_iterations=3"},
                   10},
        ResumeCase{"fedavg",
                   {"fit.strategy=fedavg", "fit.fedavg.rounds=6", "fit.eval_interval=1", "fit.fedavg.clients=4",
                    "fit.fedavg.client_fraction=0.5", "fit.fedavg.local_epochs=1", "fit.fedavg.local_batch=16"},
                   3}),
    [](const ::testing::TestParamInfo<ResumeCase>& test_case) { return test_case.param.name; });

// A stop asked between evaluations (Ctrl-C during a ResNet-20 fit, whose evaluations are a
// minute apart) ends the fit at the next stop poll, which is every step before the first
// evaluation: exactly the step asked, checkpointed there, and the resumed fit ends bit for bit
// where the uninterrupted one does.
TEST(FitResumeTest, AStopBetweenEvaluationsEndsAtThatStepAndResumes) {
  torch::set_num_threads(1);
  const core::Config config = resume_config(ResumeCase{"", {"fit.steps=12", "fit.eval_interval=1000"}, 0});
  const core::Checkpoint uninterrupted = fit_to_end(config, 0, nullptr);
  std::optional<core::Checkpoint> stopped;
  int64_t last_step = 0;
  FitCallbacks callbacks;
  callbacks.on_step = [&](int64_t step) { last_step = step; };
  callbacks.should_stop = [&] { return last_step >= 5; };
  callbacks.on_checkpoint = [&](int64_t, const core::Checkpoint& state) { stopped = state; };
  const FitResult result = fit_with_threads(fit_config_from(config), config, tiny_mnist(), callbacks, nullptr);
  EXPECT_EQ(last_step, 5);
  EXPECT_EQ(result.final.step, 5);  // that step is evaluated
  ASSERT_TRUE(stopped.has_value());
  ASSERT_EQ(stopped->metadata.at("ranks").at(0).at("loop").at("step"), 5);
  const core::Checkpoint resumed = fit_to_end(config, 0, &*stopped);
  EXPECT_TRUE(torch::equal(resumed.tensors.at("parameters"), uninterrupted.tensors.at("parameters")));
}

// A checkpoint of 2 replicas does not resume 3, and one from before fits could resume (rank 0's
// parameters alone) is refused rather than half restored.
TEST(FitResumeTest, RefusesACheckpointOfAnotherWorldOrWithoutReplicaStates) {
  torch::set_num_threads(1);
  core::Config config = resume_config(ResumeCase{"", {"fit.steps=2"}, 0});
  const core::Checkpoint two = fit_to_end(config, 0, nullptr);
  config.apply_override("fit.workers=3", "test");
  EXPECT_THROW(fit_with_threads(fit_config_from(config), config, tiny_mnist(), {}, &two), core::CheckpointError);
  core::Checkpoint old;
  old.tensors["parameters"] = two.tensors.at("parameters");
  EXPECT_THROW(fit_with_threads(fit_config_from(config), config, tiny_mnist(), {}, &old), core::CheckpointError);
}

}  // namespace
}  // namespace concord::supervised
