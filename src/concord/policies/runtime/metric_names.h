#pragma once

// The names of the metrics the policies report beside their learner's (CleanRL's "charts/" and
// "time/" prefixes), in one place, so that every policy reports one quantity under one name (two
// copies once drifted to time/learnerwait_seconds and time/learner_wait_seconds).
namespace concord::policies::runtime::metric {

inline constexpr const char* kStepsPerSecond = "charts/SPS";
inline constexpr const char* kEpisodicReturn = "charts/episodic_return";  // the last 100 episodes'
inline constexpr const char* kEpisodicLength = "charts/episodic_length";
inline constexpr const char* kPolicyLag = "charts/policy_lag";  // updates between acting and learning
inline constexpr const char* kUpdatesPerEnvStep = "charts/updates_per_env_step";
inline constexpr const char* kWorker = "charts/worker";  // hogwild: whose update
inline constexpr const char* kRolloutSeconds = "time/rollout_seconds";
inline constexpr const char* kUpdateSeconds = "time/update_seconds";
inline constexpr const char* kLearnerWaitSeconds = "time/learner_wait_seconds";
inline constexpr const char* kReceiveSeconds = "time/receive_seconds";

// GA3C's (central_inference).
inline constexpr const char* kPredictionsPerSecond = "charts/PPS";
inline constexpr const char* kTrainingsPerSecond = "charts/TPS";
inline constexpr const char* kPredictionBatchSize = "charts/prediction_batch_size";
inline constexpr const char* kPredictionQueueLength = "charts/prediction_queue_length";
inline constexpr const char* kTrainingQueueLength = "charts/training_queue_length";
inline constexpr const char* kActiveAgents = "charts/active_agents";
inline constexpr const char* kActivePredictors = "charts/active_predictors";
inline constexpr const char* kActiveTrainers = "charts/active_trainers";
inline constexpr const char* kAdjustments = "charts/adjustments";

// Exploration bonuses (exploration_bonus.h).
inline constexpr const char* kEnvRewardMean = "charts/env_reward_mean";
inline constexpr const char* kBonusMean = "charts/bonus_mean";

}  // namespace concord::policies::runtime::metric
