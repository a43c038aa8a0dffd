// MuJoCo steps whose physics diverges, end to end: `concord rollout` and `concord train` go on,
// write env/unstable_physics_steps into metrics.csv and say at the end how often it happened.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/concord_process.h"

namespace {

using concord::test::CommandResult;
using concord::test::fresh_dir;
using concord::test::run_concord;
using concord::test::run_directories;

// A cart pushed with 3e15 N from any control above 0: MuJoCo resets the state and warns on most
// steps where random actions push it.
std::string exploding_pendulum(const std::filesystem::path& dir) {
  const auto path = dir / "exploding.xml";
  std::ofstream(path)
      << "<mujoco><worldbody><body><joint name='slider' type='slide' axis='1 0 0'/><geom size='0.1'/><body>"
         "<joint name='hinge' type='hinge' axis='0 1 0'/><geom type='capsule' size='0.05' fromto='0 0 0 0 0 0.6'/>"
         "</body></body></worldbody><actuator><motor joint='slider' gear='1e15' ctrllimited='true' "
         "ctrlrange='-3 3'/></actuator></mujoco>";
  return path.string();
}

// The last value of `column` in metrics.csv, or -1 when the column is missing.
double last_value(const std::filesystem::path& run_dir, const std::string& column) {
  std::ifstream csv(run_dir / "metrics.csv");
  std::string line, last;
  std::getline(csv, line);
  std::vector<std::string> names;
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) names.push_back(name);
  while (std::getline(csv, line)) last = line;
  std::stringstream row(last);
  std::string cell;
  for (const std::string& name : names) {
    std::getline(row, cell, ',');
    if (name == column) return cell.empty() ? -1.0 : std::stod(cell);
  }
  return -1.0;
}

TEST(UnstablePhysicsTest, RolloutAndTrainingCountDivergedStepsInTheirMetrics) {
  const auto root = fresh_dir("unstable_physics", "runs");
  const std::string model = exploding_pendulum(root);
  const CommandResult rollout = run_concord(
      "rollout --env MuJoCo/InvertedPendulum-v5 --num-envs 2 --steps 400 --progress off --set env.model_file=" + model +
      " --run-root " + (root / "rollout").string());
  ASSERT_EQ(rollout.exit_code, 0) << rollout.output;
  EXPECT_THAT(rollout.output, ::testing::HasSubstr("the physics diverged on"));
  EXPECT_GT(last_value(run_directories(root / "rollout").at(0), "env/unstable_physics_steps"), 10.0);

  const CommandResult train = run_concord(
      "train --env MuJoCo/InvertedPendulum-v5 --algo ppo --num-envs 2 --total-timesteps 512 --progress off "
      "--set env.model_file=" +
      model + " --run-root " + (root / "train").string());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_THAT(train.output, ::testing::HasSubstr("the physics diverged on"));
  EXPECT_GT(last_value(run_directories(root / "train").at(0), "env/unstable_physics_steps"), 10.0);

  // A task whose physics holds writes the column as 0 and says nothing.
  const CommandResult calm = run_concord(
      "rollout --env MuJoCo/InvertedPendulum-v5 --num-envs 2 --steps 200 --progress off "
      "--run-root " +
      (root / "calm").string());
  ASSERT_EQ(calm.exit_code, 0) << calm.output;
  EXPECT_THAT(calm.output, ::testing::Not(::testing::HasSubstr("diverged")));
  EXPECT_EQ(last_value(run_directories(root / "calm").at(0), "env/unstable_physics_steps"), 0.0);
}

}  // namespace
