// gap: GAP (Im et al. 2016) against the same number of independent GANs at equal compute.
//
// Both arms train G MLP (or conv) GAN pairs on MNIST for the same number of updates, from the
// same seeds (so pair i starts from the same weights, minibatches and noise in both), along
// `concord fit --task gan`'s own path (supervised::train_gans_with_threads); the only difference
// is gan.swap. One MNIST classifier, trained once, judges both: the inception-style score
// exp(E KL(p(y|x) || p(y))) (10 is the most, for confident, evenly spread digits) and the classes
// covered (share at least half of uniform), each the mean over the pairs. The test digits
// themselves give the judge's ceiling.
//
//   gap                                   4 pairs, 3000 updates, swap every 50
//   gap --gans 2 --steps 1000 --swap-every 20 --model conv
//   gap --quick                           a smoke run of a few seconds

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "concord/data/mnist.h"
#include "concord/supervised/gan_config.h"
#include "concord/supervised/gan_training.h"
#include "concord/supervised/sample_quality.h"
#include "machine_load.h"

namespace {

namespace supervised = concord::supervised;

struct Options {
  std::string model = "mlp";
  int gans = 4;
  int64_t steps = 3000;
  int64_t swap_every = 50;
  int64_t score_samples = 2000;
  int64_t classifier_steps = 1000;
  int64_t seed = 1;
  bool quick = false;
};

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
  std::printf("%-27s %9.3f %15s %14.1f %9.3f %13s %8.1f\n", label, s.score_mean,
              (std::to_string(s.score_min).substr(0, 5) + "-" + std::to_string(s.score_max).substr(0, 5)).c_str(),
              s.coverage_mean, s.discriminator_loss,
              (std::to_string(s.sample_mean).substr(0, 5) + "/" + std::to_string(s.sample_std).substr(0, 5)).c_str(),
              s.seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GAP (swapped discriminators) against independent GANs on MNIST"};
  Options options;
  app.add_option("--model", options.model, "mlp or conv");
  app.add_option("--gans", options.gans, "Pairs G in each arm");
  app.add_option("--steps", options.steps, "Updates of each pair");
  app.add_option("--swap-every", options.swap_every, "GAP's S: updates between swaps");
  app.add_option("--score-samples", options.score_samples, "Samples per pair the judge scores");
  app.add_option("--classifier-steps", options.classifier_steps, "SGD steps of the judging classifier");
  app.add_option("--seed", options.seed, "run.seed of both arms");
  app.add_flag("--quick", options.quick, "Smoke run: 2 pairs, a few updates");
  CLI11_PARSE(app, argc, argv);
  if (options.quick) {
    options.gans = 2;
    options.steps = 30;
    options.swap_every = 10;
    options.score_samples = 200;
    options.classifier_steps = 100;
  }
  try {
    torch::set_num_threads(1);
    const auto data = concord::data::load_mnist(concord::data::default_data_dir());
    std::printf("gap: MNIST (%lld train digits), %u hardware threads, load average %s\n",
                static_cast<long long>(data.train.size()), std::thread::hardware_concurrency(),
                concord::bench::load_average().c_str());
    const supervised::DigitJudge judge(data, options.classifier_steps, static_cast<uint64_t>(options.seed));
    const supervised::SampleQuality ceiling = judge.score(data.test.images);
    std::printf("judge: mlp classifier, %lld SGD steps, test accuracy %.4f\n\n",
                static_cast<long long>(options.classifier_steps), judge.test_accuracy());

    supervised::GanConfig gan;
    gan.model = options.model;
    gan.pairs = options.gans;
    gan.steps = options.steps;
    gan.swap_every = options.swap_every;
    gan.eval_interval = std::min<int64_t>(100, options.steps);
    gan.sample_interval = 0;
    gan.score_samples = options.score_samples;
    gan.seed = static_cast<uint64_t>(options.seed);
    std::printf(
        "%s GANs, G = %d pairs (threads), %lld updates each, batch %lld, Adam lr %.g beta1 %.2g, seed %lld, "
        "%lld samples per pair scored\n\n",
        gan.model.c_str(), gan.pairs, static_cast<long long>(gan.steps), static_cast<long long>(gan.batch_size),
        gan.learning_rate, gan.beta1, static_cast<long long>(options.seed), static_cast<long long>(gan.score_samples));
    std::printf("%-27s %9s %15s %14s %9s %13s %8s\n", "arm", "IS (mean)", "IS (min-max)", "classes (mean)", "D loss",
                "pixel mean/sd", "wall s");
    std::printf("%-27s %9.3f %15s %14lld %9s %13s %8s\n", "MNIST test digits (ceiling)", ceiling.inception_score, "-",
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
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gap: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
