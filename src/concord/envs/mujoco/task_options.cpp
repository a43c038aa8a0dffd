#include "concord/envs/mujoco/task_options.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace concord::envs::mujoco {
namespace {

void check_finite(const std::string& id, const char* key, double value, bool non_negative) {
  if (!std::isfinite(value) || (non_negative && value < 0.0)) {
    std::ostringstream message;
    message << id << ": env." << key << " = " << value << " must be a finite number" << (non_negative ? " >= 0" : "");
    throw std::invalid_argument(message.str());
  }
}

void check_range(const std::string& id, const char* key, const std::pair<double, double>& range) {
  if (std::isnan(range.first) || std::isnan(range.second) || range.first > range.second) {
    std::ostringstream message;
    message << id << ": env." << key << " = [" << range.first << ", " << range.second
            << "] must have its low end at or below its high end";
    throw std::invalid_argument(message.str());
  }
}

}  // namespace

std::pair<double, double> parse_range(const std::string& text, const std::string& key) {
  const auto number = [&](const std::string& part, double& value) {
    std::string word;
    for (char c : part) {
      if (c != ' ') word += c;
    }
    if (word == "inf" || word == "+inf") {
      value = std::numeric_limits<double>::infinity();
      return true;
    }
    if (word == "-inf") {
      value = -std::numeric_limits<double>::infinity();
      return true;
    }
    char* end = nullptr;
    value = std::strtod(word.c_str(), &end);
    return !word.empty() && end == word.c_str() + word.size() && std::isfinite(value);
  };
  const size_t comma = text.find(',');
  std::pair<double, double> range;
  if (comma == std::string::npos || !number(text.substr(0, comma), range.first) ||
      !number(text.substr(comma + 1), range.second)) {
    throw std::invalid_argument(key + " = '" + text + "' must be two numbers \"low,high\" (inf allowed)");
  }
  return range;
}

TaskOptions resolve_options(const std::string& id, const EnvOptions& options, TaskOptions defaults,
                            const std::vector<std::string>& accepted) {
  std::vector<std::string> names = accepted;
  names.emplace_back("model_file");
  names.emplace_back("frame_skip");
  options.refuse_others(id, names);

  TaskOptions out = std::move(defaults);
  if (options.model_file) {
    if (options.model_file->empty()) throw std::invalid_argument(id + ": env.model_file is empty");
    out.model_file = *options.model_file;
  }
  if (options.forward_body) {
    if (options.forward_body->empty()) throw std::invalid_argument(id + ": env.forward_body is empty");
    out.forward_body = *options.forward_body;
  }
  if (options.frame_skip) {
    if (*options.frame_skip < 1) {
      throw std::invalid_argument(id + ": env.frame_skip = " + std::to_string(*options.frame_skip) + " must be >= 1");
    }
    out.frame_skip = *options.frame_skip;
  }
  if (options.forward_reward_weight) {
    check_finite(id, "forward_reward_weight", *options.forward_reward_weight, false);
    out.forward_reward_weight = *options.forward_reward_weight;
  }
  if (options.ctrl_cost_weight) {
    check_finite(id, "ctrl_cost_weight", *options.ctrl_cost_weight, true);
    out.ctrl_cost_weight = *options.ctrl_cost_weight;
  }
  if (options.contact_cost_weight) {
    check_finite(id, "contact_cost_weight", *options.contact_cost_weight, true);
    out.contact_cost_weight = *options.contact_cost_weight;
  }
  if (options.healthy_reward) {
    check_finite(id, "healthy_reward", *options.healthy_reward, false);
    out.healthy_reward = *options.healthy_reward;
  }
  if (options.reset_noise_scale) {
    check_finite(id, "reset_noise_scale", *options.reset_noise_scale, true);
    out.reset_noise_scale = *options.reset_noise_scale;
  }
  if (options.reward_dist_weight) {
    check_finite(id, "reward_dist_weight", *options.reward_dist_weight, true);
    out.reward_dist_weight = *options.reward_dist_weight;
  }
  if (options.reward_control_weight) {
    check_finite(id, "reward_control_weight", *options.reward_control_weight, true);
    out.reward_control_weight = *options.reward_control_weight;
  }
  if (options.contact_force_range) {
    check_range(id, "contact_force_range", *options.contact_force_range);
    out.contact_force_range = *options.contact_force_range;
  }
  if (options.contact_cost_range) {
    check_range(id, "contact_cost_range", *options.contact_cost_range);
    out.contact_cost_range = *options.contact_cost_range;
  }
  if (options.include_cfrc_ext_in_observation) {
    out.include_cfrc_ext_in_observation = *options.include_cfrc_ext_in_observation;
  }
  if (options.include_cinert_in_observation) out.include_cinert_in_observation = *options.include_cinert_in_observation;
  if (options.include_cvel_in_observation) out.include_cvel_in_observation = *options.include_cvel_in_observation;
  if (options.include_qfrc_actuator_in_observation) {
    out.include_qfrc_actuator_in_observation = *options.include_qfrc_actuator_in_observation;
  }
  if (options.uph_cost_weight) {
    check_finite(id, "uph_cost_weight", *options.uph_cost_weight, false);
    out.uph_cost_weight = *options.uph_cost_weight;
  }
  if (options.impact_cost_weight) {
    check_finite(id, "impact_cost_weight", *options.impact_cost_weight, true);
    out.impact_cost_weight = *options.impact_cost_weight;
  }
  if (options.impact_cost_range) {
    check_range(id, "impact_cost_range", *options.impact_cost_range);
    out.impact_cost_range = *options.impact_cost_range;
  }
  if (options.observe_sensors) out.observe_sensors = *options.observe_sensors;
  if (options.healthy_z_range) {
    check_range(id, "healthy_z_range", *options.healthy_z_range);
    out.healthy_z_range = *options.healthy_z_range;
  }
  if (options.healthy_angle_range) {
    check_range(id, "healthy_angle_range", *options.healthy_angle_range);
    out.healthy_angle_range = *options.healthy_angle_range;
  }
  if (options.exclude_current_positions_from_observation) {
    out.exclude_current_positions_from_observation = *options.exclude_current_positions_from_observation;
  }
  if (options.terminate_when_unhealthy) out.terminate_when_unhealthy = *options.terminate_when_unhealthy;
  return out;
}

}  // namespace concord::envs::mujoco
