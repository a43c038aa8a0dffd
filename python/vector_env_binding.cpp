// concord.VectorEnv: the engine's VectorEnv behind Gymnasium 1.x's vector API (sync) and EnvPool's
// send/recv (async). Arrays cross the boundary as copies (see the module docstring for why).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/registry.h"
#include "concord/envs/rendering.h"
#include "concord/envs/vector_env.h"
#include "shape_text.h"

namespace concord::python {
namespace {

using python::shape_text;  // shape_text.h's, beside the overload for arrays below

std::string shape_text(const py::array& array) {
  return shape_text(std::vector<int64_t>(array.shape(), array.shape() + array.ndim()));
}

std::string where_text(const char* where) { return std::string(where) + ": "; }

// Python's int (or anything with __index__, e.g. numpy.int64) in [0, 2**64); None for none.
std::optional<uint64_t> to_seed(const py::handle& seed, const char* where) {
  if (seed.is_none()) return std::nullopt;
  const std::string refused = where_text(where) + "seed must be None or an int in [0, 2**64), got " +
                              std::string(py::repr(seed)) +
                              " (per-env seed lists are not supported: env i is seeded from (seed, i))";
  if (py::isinstance<py::bool_>(seed) || !PyIndex_Check(seed.ptr())) throw py::value_error(refused);
  const auto value = py::reinterpret_steal<py::object>(PyNumber_Index(seed.ptr()));
  if (!value) throw py::error_already_set();
  const unsigned long long result = PyLong_AsUnsignedLongLong(value.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error(refused);
  }
  return static_cast<uint64_t>(result);
}

bool is_integer_kind(const py::array& array) { return array.dtype().kind() == 'i' || array.dtype().kind() == 'u'; }

class VectorEnv {
 public:
  VectorEnv(envs::VectorEnvConfig config, const py::object& render_mode)
      : env_(make_engine(std::move(config), made_envs_)),
        config_(env_->config()),
        spec_(env_->spec()),
        async_(env_->is_async()),
        batch_size_(env_->batch_size()) {
    for (const envs::Env* made : made_envs_) {
      if (const auto* mujoco_env = dynamic_cast<const envs::mujoco::MujocoEnv*>(made))
        locomotion_envs_.push_back(mujoco_env);
    }
    if (locomotion_envs_.size() != made_envs_.size()) locomotion_envs_.clear();
    if (!locomotion_envs_.empty()) {
      info_terms_ = locomotion_envs_.front()->info_terms();
      array_info_terms_ = locomotion_envs_.front()->array_info_terms();
    }
    if (info_terms_.empty() && array_info_terms_.empty()) locomotion_envs_.clear();
    if (!locomotion_envs_.empty()) reset_pending_.assign(locomotion_envs_.size(), 0);
    if (render_mode.is_none()) return;
    if (!py::isinstance<py::str>(render_mode) || render_mode.cast<std::string>() != "rgb_array") {
      throw py::value_error("make(): render_mode must be None or 'rgb_array', got " +
                            std::string(py::repr(render_mode)));
    }
    if (made_envs_.size() != static_cast<size_t>(config_.num_envs)) {
      throw std::logic_error("make(): the binding lost track of the envs it made");
    }
    renderer_ = envs::make_env_renderer(*made_envs_.front());
    if (!renderer_) {
      throw py::value_error("make(): " + spec_.id + " cannot be rendered (render_mode='rgb_array' draws " +
                            envs::renderable_envs() + ")");
    }
    shown_.assign(static_cast<size_t>(config_.num_envs), {});
  }

  py::tuple reset(const py::object& seed, const py::object& options) {
    if (!options.is_none() && py::len(options) > 0) {
      throw py::value_error("reset(): options are not supported by Concord's envs, got " +
                            std::string(py::repr(options)));
    }
    const std::optional<uint64_t> env_seed = to_seed(seed, "reset()");
    Use use(*this, "reset()");
    envs::Batch batch;
    {
      py::gil_scoped_release release;
      if (async_) {
        use.env().async_reset(env_seed);
        std::fill(reset_pending_.begin(), reset_pending_.end(), 1);
        batch = use.env().recv();
      } else {
        batch = use.env().reset(env_seed);
      }
    }
    remember(batch);
    py::dict info;
    if (async_) info["env_id"] = py::array_t<int32_t>(batch.size, batch.env_ids);
    if (!locomotion_envs_.empty()) add_info_terms(info, batch, /*all_reset=*/true);
    return py::make_tuple(observations(batch.observations, batch.size), info);
  }

  py::tuple step(const py::handle& actions, const py::object& env_id) {
    if (async_) {
      send(actions, env_id);
      return recv();
    }
    if (!env_id.is_none()) {
      throw py::value_error(
          "step(): env_id is for async mode (make(..., batch_size < num_envs)); this VectorEnv "
          "steps all num_envs=" +
          std::to_string(config_.num_envs) + " envs at once");
    }
    Use use(*this, "step()");
    const py::array converted = action_array(actions, config_.num_envs, "step()");
    envs::Batch batch;
    {
      py::gil_scoped_release release;
      batch = spec_.action_space.is_discrete() ? use.env().step(static_cast<const int64_t*>(converted.data()))
                                               : use.env().step(static_cast<const float*>(converted.data()));
    }
    return results(batch);
  }

  void async_reset(const py::object& seed) {
    require_async("async_reset()");
    const std::optional<uint64_t> env_seed = to_seed(seed, "async_reset()");
    Use use(*this, "async_reset()");
    {
      py::gil_scoped_release release;
      use.env().async_reset(env_seed);
    }
    std::fill(reset_pending_.begin(), reset_pending_.end(), 1);
  }

  void send(const py::handle& actions, const py::object& env_id) {
    require_async("send()");
    Use use(*this, "send()");
    const py::array given = py::array::ensure(actions);
    if (!given || given.ndim() == 0) {
      throw py::value_error("send(): actions must be an array with one row per env in env_id, got " +
                            std::string(py::repr(actions)));
    }
    const std::vector<int32_t> ids = env_ids(env_id, given.shape(0));
    const auto count = static_cast<int64_t>(ids.size());
    const py::array converted = action_array(given, count, "send()");
    py::gil_scoped_release release;
    if (spec_.action_space.is_discrete()) {
      use.env().send(static_cast<const int64_t*>(converted.data()), ids.data(), count);
    } else {
      use.env().send(static_cast<const float*>(converted.data()), ids.data(), count);
    }
  }

  py::tuple recv() {
    require_async("recv()");
    Use use(*this, "recv()");
    // Only this thread sends, so fewer envs in flight than a batch can never fill one: say so now
    // rather than after the engine's recv_timeout.
    if (use.env().num_in_flight() < batch_size_) {
      throw std::runtime_error("recv(): only " + std::to_string(use.env().num_in_flight()) +
                               " envs are in flight, fewer than batch_size=" + std::to_string(batch_size_) +
                               "; send() actions for more envs (or async_reset()) first");
    }
    envs::Batch batch;
    {
      py::gil_scoped_release release;
      batch = use.env().recv();
    }
    return results(batch);
  }

  // One frame per env (Gymnasium's SyncVectorEnv.render() with render_mode "rgb_array"): each
  // env drawn as its latest reset or step left it, a uint8 array [height, width, 3]; in async
  // mode as of the latest result recv() returned for it (black before its first).
  py::tuple render() const {
    if (!env_) throw std::runtime_error("render(): this VectorEnv is closed");
    if (!renderer_) {
      throw std::runtime_error("render(): make the env with render_mode='rgb_array' to render it");
    }
    if (!rendered_once_) throw std::runtime_error("render(): call reset() first");
    py::tuple frames(config_.num_envs);
    envs::RgbFrame frame;
    for (int64_t i = 0; i < config_.num_envs; ++i) {
      const std::vector<uint8_t>& shown = shown_[static_cast<size_t>(i)];
      py::array_t<uint8_t> picture({renderer_->height(), renderer_->width(), 3});
      if (shown.empty()) {
        std::memset(picture.mutable_data(), 0, static_cast<size_t>(picture.size()));
      } else {
        renderer_->render(shown.data(), frame);
        std::memcpy(picture.mutable_data(), frame.pixels.data(), frame.pixels.size());
      }
      frames[static_cast<size_t>(i)] = std::move(picture);
    }
    return frames;
  }

  py::object render_mode() const { return renderer_ ? py::object(py::str("rgb_array")) : py::object(py::none()); }

  void close() {
    if (!env_) return;
    if (busy_) throw std::runtime_error("close(): this VectorEnv is in use by another thread");
    std::unique_ptr<envs::VectorEnv> env = std::move(env_);
    locomotion_envs_.clear();
    made_envs_.clear();
    py::gil_scoped_release release;  // joins the pool's threads
    env.reset();
  }

  py::object space(bool batched, bool observation) {
    py::object& slot = observation ? (batched ? observation_space_ : single_observation_space_)
                                   : (batched ? action_space_ : single_action_space_);
    if (!slot) {
      slot = make_space(observation ? spec_.observation_space : spec_.action_space, batched ? config_.num_envs : 0);
    }
    return slot;
  }

  py::dict metadata() const {
    py::dict metadata;
    py::list modes;
    if (renderer_) {
      modes.append("rgb_array");
      metadata["render_fps"] = renderer_->frames_per_second();
    }
    metadata["render_modes"] = modes;
    // Gymnasium's enum where Gymnasium is installed, its value otherwise.
    try {
      metadata["autoreset_mode"] = py::module_::import("gymnasium.vector").attr("AutoresetMode").attr("SAME_STEP");
    } catch (const py::error_already_set&) {
      metadata["autoreset_mode"] = "SameStep";
    }
    return metadata;
  }

  std::string repr() const {
    std::string text = "VectorEnv('" + config_.env_id + "', num_envs=" + std::to_string(config_.num_envs) +
                       ", num_threads=" + std::to_string(config_.num_threads);
    if (async_) text += ", batch_size=" + std::to_string(batch_size_);
    return text + (env_ ? ")" : ", closed)");
  }

  const envs::VectorEnvConfig& config() const { return config_; }
  const envs::EnvSpec& spec() const { return spec_; }
  int64_t batch_size() const { return batch_size_; }
  bool is_async() const { return async_; }
  bool closed() const { return env_ == nullptr; }
  int64_t num_in_flight() const { return env_ ? env_->num_in_flight() : 0; }

 private:
  // The engine hands out no env, so that stepping one stays the engine's own business: the envs
  // are made through a registry of this binding's that keeps each env's address (env i at [i]),
  // from which a MuJoCo task's step info and a renderer's picture are read between calls, while
  // no thread steps that env.
  static std::unique_ptr<envs::VectorEnv> make_engine(envs::VectorEnvConfig config,
                                                      std::vector<const envs::Env*>& made) {
    envs::Registry remembering;
    remembering.add_configurable(config.env_id, [&made, id = config.env_id](const envs::EnvOptions& options) {
      std::unique_ptr<envs::Env> env = envs::Registry::global().make(id, options);
      made.push_back(env.get());
      return env;
    });
    // Making a thousand envs and starting the pool's threads needs no Python.
    py::gil_scoped_release release;
    auto engine = std::make_unique<envs::VectorEnv>(std::move(config), remembering);
    if (made.size() != static_cast<size_t>(engine->num_envs())) made.clear();
    return engine;
  }

  // A MuJoCo task's terms under Gymnasium v5's info keys, laid out as its SyncVectorEnv lays
  // them out in SAME_STEP mode: info[key] (float64 [rows], or [rows, n] for an array term: the
  // tendons) and info["_" + key] (bool, the rows that have it) for each key some row has. A row
  // that a reset gave has what the reset's info holds (the positions, the tendons); an env whose
  // episode ended this step was reset, so its row is such a row and info["final_info"] holds the
  // ended step's terms. The batch's envs are idle (sync: the step is over; async: not sent again
  // yet).
  void add_info_terms(py::dict& info, const envs::Batch& batch, bool all_reset) {
    // Per row: whether a reset gave it, and whether it ended an episode this step (then reset).
    std::vector<uint8_t> reset_row(static_cast<size_t>(batch.size), all_reset ? 1 : 0);
    std::vector<uint8_t> ended_row(static_cast<size_t>(batch.size), 0);
    bool any_final = false;
    for (int64_t row = 0; row < batch.size; ++row) {
      const auto r = static_cast<size_t>(row);
      auto& pending = reset_pending_[static_cast<size_t>(env_of(batch, row))];
      if (pending) reset_row[r] = 1;
      pending = 0;
      ended_row[r] = !reset_row[r] && batch.has_final[row] != 0;
      any_final = any_final || ended_row[r];
    }
    py::dict final_info;
    const TermRows rows{batch, reset_row, ended_row, any_final};
    for (const envs::mujoco::InfoTerm& term : info_terms_) {
      add_info_term(info, final_info, rows, term.name, term.at_reset, {},
                    [&term](const envs::mujoco::MujocoEnv& env, bool ended, double* out) {
                      *out = (ended ? env.ended_reward() : env.last_reward()).*term.value;
                    });
    }
    for (size_t k = 0; k < array_info_terms_.size(); ++k) {
      const envs::mujoco::ArrayInfoTerm& term = array_info_terms_[k];
      add_info_term(info, final_info, rows, term.name, term.at_reset, {term.size},
                    [k, &term](const envs::mujoco::MujocoEnv& env, bool ended, double* out) {
                      const double* values = ended ? env.ended_array_values(k) : env.array_values(k);
                      std::copy(values, values + term.size, out);
                    });
    }
    if (any_final) info["final_info"] = final_info;
  }

  // add_info_terms's rows: whether a reset gave each, and whether it ended an episode this step.
  struct TermRows {
    const envs::Batch& batch;
    const std::vector<uint8_t>& reset;
    const std::vector<uint8_t>& ended;
    bool any_final;
  };

  // One term as SyncVectorEnv's _add_info lays out a value of `shape` (empty: a number): info[name]
  // float64 [rows, *shape], zeros in the rows without it, with its mask; the same in final_info
  // when some row ended. read(env, ended, out) writes a row's values, the ended step's if `ended`.
  template <typename Read>
  void add_info_term(py::dict& info, py::dict& final_info, const TermRows& rows, const char* name, bool at_reset,
                     const std::vector<py::ssize_t>& shape, Read read) {
    const int64_t count = rows.batch.size;
    std::vector<py::ssize_t> full{count};
    full.insert(full.end(), shape.begin(), shape.end());
    int64_t width = 1;
    for (py::ssize_t extent : shape) width *= extent;
    py::array_t<double> values(full), final_values(full);
    py::array_t<bool> given(count), final_given(count);
    double* value = values.mutable_data();
    double* final_value = final_values.mutable_data();
    bool* has = given.mutable_data();
    bool* final_has = final_given.mutable_data();
    bool any = false;
    for (int64_t row = 0; row < count; ++row) {
      const auto r = static_cast<size_t>(row);
      const envs::mujoco::MujocoEnv& env = *locomotion_envs_[static_cast<size_t>(env_of(rows.batch, row))];
      const bool ended = rows.ended[r] != 0;
      has[row] = (!ended && !rows.reset[r]) || at_reset;
      any = any || has[row];
      final_has[row] = ended;
      double* out = value + row * width;
      double* final_out = final_value + row * width;
      if (has[row]) {
        read(env, false, out);
      } else {
        std::fill(out, out + width, 0.0);
      }
      if (ended) {
        read(env, true, final_out);
      } else {
        std::fill(final_out, final_out + width, 0.0);
      }
    }
    const std::string mask = "_" + std::string(name);
    if (any) {
      info[name] = values;
      info[mask.c_str()] = given;
    }
    if (rows.any_final) {
      final_info[name] = final_values;
      final_info[mask.c_str()] = final_given;
    }
  }

  int64_t env_of(const envs::Batch& batch, int64_t row) const { return async_ ? batch.env_ids[row] : row; }

  // One call into the engine. The engine serves one owner thread; with the GIL released during a
  // step, a second Python thread could enter, so it is refused instead (busy_ is only touched
  // with the GIL held).
  class Use {
   public:
    Use(VectorEnv& self, const char* where) : self_(self) {
      if (!self.env_) throw std::runtime_error(where_text(where) + "this VectorEnv is closed");
      if (self.busy_) throw std::runtime_error(where_text(where) + "this VectorEnv is in use by another thread");
      self.busy_ = true;
    }
    ~Use() { self_.busy_ = false; }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    envs::VectorEnv& env() { return *self_.env_; }

   private:
    VectorEnv& self_;
  };

  void require_async(const char* where) const {
    if (!env_) throw std::runtime_error(where_text(where) + "this VectorEnv is closed");
    if (!async_) {
      throw std::runtime_error(where_text(where) + "needs async mode (make(..., batch_size=B) with B < num_envs=" +
                               std::to_string(config_.num_envs) + "); use reset()/step()");
    }
  }

  // `actions` as a C-contiguous int64 [count] (Discrete) or float32 [count, *shape] (Box) array,
  // or ValueError naming what was expected.
  py::array action_array(const py::handle& actions, int64_t count, const char* where) const {
    const envs::Space& space = spec_.action_space;
    std::vector<int64_t> expected{count};
    expected.insert(expected.end(), space.shape().begin(), space.shape().end());
    const std::string what =
        std::to_string(count) + (count == 1 ? " env" : " envs") + " with action space " + space.to_string();
    const py::array given = py::array::ensure(actions);
    if (!given) {
      throw py::value_error(where_text(where) + "actions must be an array of shape " + shape_text(expected) + " for " +
                            what + ", got " + std::string(py::repr(actions)));
    }
    const bool dtype_ok = space.is_discrete() ? is_integer_kind(given) : given.dtype().kind() == 'f';
    if (!dtype_ok) {
      throw py::value_error(where_text(where) + "actions for " + what + " must be " +
                            (space.is_discrete() ? "integers" : "floats") + ", got dtype " +
                            std::string(py::str(py::handle(given.dtype()))));
    }
    bool shape_ok = given.ndim() == static_cast<py::ssize_t>(expected.size());
    for (size_t d = 0; shape_ok && d < expected.size(); ++d) {
      shape_ok = given.shape(static_cast<py::ssize_t>(d)) == expected[d];
    }
    if (!shape_ok) {
      throw py::value_error(where_text(where) + "actions must have shape " + shape_text(expected) + " for " + what +
                            ", got " + shape_text(given));
    }
    if (space.is_discrete()) return py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(given);
    return py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(given);
  }

  // send()'s env ids: the given int array, or 0..count-1 when None.
  std::vector<int32_t> env_ids(const py::object& env_id, int64_t count) const {
    std::vector<int32_t> ids;
    if (env_id.is_none()) {
      for (int64_t i = 0; i < count; ++i) ids.push_back(static_cast<int32_t>(i));
      return ids;
    }
    const py::array given = py::array::ensure(env_id);
    if (!given || given.ndim() != 1 || !is_integer_kind(given)) {
      throw py::value_error("send(): env_id must be a 1-d integer array, got " + std::string(py::repr(env_id)));
    }
    const auto values = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(given);
    for (py::ssize_t k = 0; k < values.shape(0); ++k) {
      const int64_t id = values.data()[k];
      // Checked here as well as by the engine: an id beyond int32 would wrap into a valid one.
      if (id < 0 || id >= config_.num_envs) {
        throw py::value_error("send(): env id " + std::to_string(id) + " is outside [0, " +
                              std::to_string(config_.num_envs) + ")");
      }
      ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
  }

  // Rows of observations copied into a new array [rows, *shape]; rows whose `keep` is 0 are zeroed.
  py::array observations(const void* rows, int64_t count, const uint8_t* keep = nullptr) const {
    std::vector<py::ssize_t> shape{count};
    shape.insert(shape.end(), spec_.observation_space.shape().begin(), spec_.observation_space.shape().end());
    py::array out(numpy_dtype(spec_.observation_space.dtype()), shape);
    const auto row_bytes = static_cast<size_t>(spec_.observation_space.byte_size());
    auto* target = static_cast<unsigned char*>(out.mutable_data());
    const auto* source = static_cast<const unsigned char*>(rows);
    if (keep == nullptr) {
      std::memcpy(target, source, row_bytes * static_cast<size_t>(count));
      return out;
    }
    for (int64_t row = 0; row < count; ++row) {
      if (keep[row]) {
        std::memcpy(target + row * row_bytes, source + row * row_bytes, row_bytes);
      } else {
        std::memset(target + row * row_bytes, 0, row_bytes);
      }
    }
    return out;
  }

  static py::array_t<bool> bools(const uint8_t* values, int64_t count) {
    py::array_t<bool> out(count);
    std::memcpy(out.mutable_data(), values, static_cast<size_t>(count));  // 0/1 bytes, numpy's bool
    return out;
  }

  // Keeps what each env of the batch shows now for render(), when it renders: the batch's envs
  // are idle until the next step is sent.
  void remember(const envs::Batch& batch) {
    if (!renderer_) return;
    const auto row_bytes = static_cast<size_t>(spec_.observation_space.byte_size());
    const auto* source = static_cast<const uint8_t*>(batch.observations);
    for (int64_t row = 0; row < batch.size; ++row) {
      const auto env = static_cast<size_t>(async_ ? batch.env_ids[row] : row);
      renderer_->capture(*made_envs_[env], source + static_cast<size_t>(row) * row_bytes, shown_[env]);
    }
    rendered_once_ = true;
  }

  py::tuple results(const envs::Batch& batch) {
    remember(batch);
    py::dict info;
    if (async_) info["env_id"] = py::array_t<int32_t>(batch.size, batch.env_ids);
    if (std::any_of(batch.has_final, batch.has_final + batch.size, [](uint8_t ended) { return ended != 0; })) {
      info["final_obs"] = observations(batch.final_observations, batch.size, batch.has_final);
      info["_final_obs"] = bools(batch.has_final, batch.size);
      info["final_info"] = py::dict();
      info["_final_info"] = bools(batch.has_final, batch.size);
      py::dict episode;
      episode["r"] = py::array_t<float>(batch.size, batch.episode_returns);
      episode["l"] = py::array_t<int32_t>(batch.size, batch.episode_lengths);
      info["episode"] = episode;
      info["_episode"] = bools(batch.has_final, batch.size);
    }
    if (!locomotion_envs_.empty()) add_info_terms(info, batch, /*all_reset=*/false);
    return py::make_tuple(observations(batch.observations, batch.size), py::array_t<float>(batch.size, batch.rewards),
                          bools(batch.terminated, batch.size), bools(batch.truncated, batch.size), info);
  }

  // Declared before env_, which make_engine fills it beside: every env, in env order (empty if
  // the engine made them otherwise); then a MuJoCo task's envs and the info terms they report,
  // empty for every other env (and SparseHalfCheetah).
  std::vector<const envs::Env*> made_envs_;
  std::vector<const envs::mujoco::MujocoEnv*> locomotion_envs_;
  std::vector<envs::mujoco::InfoTerm> info_terms_;
  std::vector<envs::mujoco::ArrayInfoTerm> array_info_terms_;
  std::vector<uint8_t> reset_pending_;  // async: envs whose reset recv() has not returned yet
  std::unique_ptr<envs::VectorEnv> env_;
  envs::VectorEnvConfig config_;
  envs::EnvSpec spec_;
  bool async_ = false;
  int64_t batch_size_ = 0;
  bool busy_ = false;
  // render_mode 'rgb_array': the renderer and what each env showed after its latest reset or step.
  std::unique_ptr<envs::EnvRenderer> renderer_;
  std::vector<std::vector<uint8_t>> shown_;
  bool rendered_once_ = false;
  py::object observation_space_, action_space_, single_observation_space_, single_action_space_;
};

const std::vector<std::string> kEnvOptionNames{"sticky_action_probability",
                                               "difficulty_ramping",
                                               "model_file",
                                               "frame_skip",
                                               "forward_reward_weight",
                                               "ctrl_cost_weight",
                                               "healthy_reward",
                                               "reset_noise_scale",
                                               "healthy_z_range",
                                               "healthy_angle_range",
                                               "exclude_current_positions_from_observation",
                                               "terminate_when_unhealthy",
                                               "forward_body",
                                               "contact_cost_weight",
                                               "reward_dist_weight",
                                               "reward_control_weight",
                                               "contact_force_range",
                                               "contact_cost_range",
                                               "include_cfrc_ext_in_observation",
                                               "include_cinert_in_observation",
                                               "include_cvel_in_observation",
                                               "include_qfrc_actuator_in_observation",
                                               "uph_cost_weight",
                                               "impact_cost_weight",
                                               "impact_cost_range",
                                               "observe_sensors",
                                               "step_timeout_seconds"};

std::string known_env_options() {
  std::string known;
  for (const std::string& name : kEnvOptionNames) known += (known.empty() ? "" : ", ") + name;
  return known;
}

bool as_bool(const std::string& name, const py::handle& value) {
  if (!py::isinstance<py::bool_>(value)) {
    throw py::value_error("make(): " + name + " must be a bool, got " + std::string(py::repr(value)));
  }
  return value.cast<bool>();
}

double as_number(const std::string& name, const py::handle& value) {
  if (py::isinstance<py::bool_>(value) || !PyNumber_Check(value.ptr())) {
    throw py::value_error("make(): " + name + " must be a number, got " + std::string(py::repr(value)));
  }
  return value.cast<double>();
}

// A (low, high) pair of numbers, as Gymnasium's healthy_z_range.
std::pair<double, double> as_range(const std::string& name, const py::handle& value) {
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value) || py::len(value) != 2) {
    throw py::value_error("make(): " + name + " must be a pair (low, high), got " + std::string(py::repr(value)));
  }
  const py::sequence pair = py::reinterpret_borrow<py::sequence>(value);
  return {as_number(name, pair[0]), as_number(name, pair[1])};
}

envs::EnvOptions to_env_options(const py::kwargs& kwargs) {
  envs::EnvOptions options;
  for (const auto& [key, value] : kwargs) {
    const auto name = key.cast<std::string>();
    if (std::find(kEnvOptionNames.begin(), kEnvOptionNames.end(), name) == kEnvOptionNames.end()) {
      throw py::value_error("make(): unknown env option '" + name + "' (known: " + known_env_options() + ")");
    }
    if (value.is_none()) continue;  // the env's default
    if (name == "difficulty_ramping") {
      options.difficulty_ramping = as_bool(name, value);
    } else if (name == "sticky_action_probability") {
      options.sticky_action_probability = as_number(name, value);
    } else if (name == "step_timeout_seconds") {
      options.step_timeout_seconds = as_number(name, value);
    } else if (name == "model_file") {
      if (!py::isinstance<py::str>(value)) {
        throw py::value_error("make(): model_file must be a str, got " + std::string(py::repr(value)));
      }
      options.model_file = value.cast<std::string>();
    } else if (name == "frame_skip") {
      if (py::isinstance<py::bool_>(value) || !py::isinstance<py::int_>(value) || value.cast<int64_t>() < 1 ||
          value.cast<int64_t>() > 1'000'000) {
        throw py::value_error("make(): frame_skip must be an int in [1, 1000000], got " + std::string(py::repr(value)));
      }
      options.frame_skip = value.cast<int>();
    } else if (name == "forward_reward_weight") {
      options.forward_reward_weight = as_number(name, value);
    } else if (name == "ctrl_cost_weight") {
      options.ctrl_cost_weight = as_number(name, value);
    } else if (name == "healthy_reward") {
      options.healthy_reward = as_number(name, value);
    } else if (name == "reset_noise_scale") {
      options.reset_noise_scale = as_number(name, value);
    } else if (name == "healthy_z_range") {
      options.healthy_z_range = as_range(name, value);
    } else if (name == "healthy_angle_range") {
      options.healthy_angle_range = as_range(name, value);
    } else if (name == "forward_body") {
      if (!py::isinstance<py::str>(value)) {
        throw py::value_error("make(): forward_body must be a str, got " + std::string(py::repr(value)));
      }
      options.forward_body = value.cast<std::string>();
    } else if (name == "contact_cost_weight") {
      options.contact_cost_weight = as_number(name, value);
    } else if (name == "reward_dist_weight") {
      options.reward_dist_weight = as_number(name, value);
    } else if (name == "reward_control_weight") {
      options.reward_control_weight = as_number(name, value);
    } else if (name == "contact_force_range") {
      options.contact_force_range = as_range(name, value);
    } else if (name == "contact_cost_range") {
      options.contact_cost_range = as_range(name, value);
    } else if (name == "observe_sensors") {
      options.observe_sensors = as_bool(name, value);
    } else if (name == "include_cfrc_ext_in_observation") {
      options.include_cfrc_ext_in_observation = as_bool(name, value);
    } else if (name == "include_cinert_in_observation") {
      options.include_cinert_in_observation = as_bool(name, value);
    } else if (name == "include_cvel_in_observation") {
      options.include_cvel_in_observation = as_bool(name, value);
    } else if (name == "include_qfrc_actuator_in_observation") {
      options.include_qfrc_actuator_in_observation = as_bool(name, value);
    } else if (name == "uph_cost_weight") {
      options.uph_cost_weight = as_number(name, value);
    } else if (name == "impact_cost_weight") {
      options.impact_cost_weight = as_number(name, value);
    } else if (name == "impact_cost_range") {
      options.impact_cost_range = as_range(name, value);
    } else if (name == "exclude_current_positions_from_observation") {
      options.exclude_current_positions_from_observation = as_bool(name, value);
    } else {
      options.terminate_when_unhealthy = as_bool(name, value);
    }
  }
  return options;
}

}  // namespace

void bind_vector_env(py::module_& module) {
  py::class_<VectorEnv>(module, "VectorEnv",
                        "num_envs copies of one Concord environment stepped as a batch (see the module docstring).")
      .def("reset", &VectorEnv::reset, py::arg("seed") = py::none(), py::arg("options") = py::none(),
           "-> (observations, info). Async mode: async_reset() then recv()'s first batch_size results.")
      .def("step", &VectorEnv::step, py::arg("actions"), py::arg("env_id") = py::none(),
           "-> (observations, rewards, terminated, truncated, info). Async mode: send() then recv().")
      .def("async_reset", &VectorEnv::async_reset, py::arg("seed") = py::none(),
           "Async mode: queues a reset of every env; recv() returns them.")
      .def("send", &VectorEnv::send, py::arg("actions"), py::arg("env_id") = py::none(),
           "Async mode: queues one step of each env in env_id (default 0..len(actions)-1).")
      .def("recv", &VectorEnv::recv,
           "Async mode: the next batch_size results, as step() returns them, with info['env_id'].")
      .def("render", &VectorEnv::render,
           "render_mode 'rgb_array': a tuple of one uint8 [height, width, 3] frame per env, drawn from its latest "
           "observation.")
      .def("close", &VectorEnv::close, "Stops the threads and frees the envs; later calls raise RuntimeError.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](VectorEnv& self, const py::args&) { self.close(); })
      .def("__repr__", &VectorEnv::repr)
      .def_property_readonly("num_envs", [](const VectorEnv& self) { return self.config().num_envs; })
      .def_property_readonly("num_threads", [](const VectorEnv& self) { return self.config().num_threads; })
      .def_property_readonly("batch_size", &VectorEnv::batch_size)
      .def_property_readonly("is_async", &VectorEnv::is_async)
      .def_property_readonly("num_in_flight", &VectorEnv::num_in_flight)
      .def_property_readonly("closed", &VectorEnv::closed)
      .def_property_readonly("env_id", [](const VectorEnv& self) { return self.config().env_id; })
      .def_property_readonly("max_episode_steps", [](const VectorEnv& self) { return self.spec().max_episode_steps; })
      .def_property_readonly("reward_threshold", [](const VectorEnv& self) { return self.spec().reward_threshold; })
      .def_property_readonly("metadata", &VectorEnv::metadata)
      .def_property_readonly("render_mode", &VectorEnv::render_mode)
      .def_property_readonly("unwrapped", [](py::object self) { return self; })
      .def_property_readonly("observation_space", [](VectorEnv& self) { return self.space(true, true); })
      .def_property_readonly("action_space", [](VectorEnv& self) { return self.space(true, false); })
      .def_property_readonly("single_observation_space", [](VectorEnv& self) { return self.space(false, true); })
      .def_property_readonly("single_action_space", [](VectorEnv& self) { return self.space(false, false); });

  module.def(
      "make",
      [](const std::string& env_id, int num_envs, int num_threads, const py::object& seed,
         const std::optional<int>& batch_size, const py::object& render_mode, const py::kwargs& env_options) {
        envs::VectorEnvConfig config;
        config.env_id = env_id;
        config.num_envs = num_envs;
        config.num_threads = num_threads;
        config.seed = to_seed(seed, "make()").value_or(0);
        config.batch_size = batch_size.value_or(0);
        config.options = to_env_options(env_options);
        return std::make_unique<VectorEnv>(std::move(config), render_mode);
      },
      py::arg("env_id"), py::arg("num_envs") = 1, py::arg("num_threads") = 1, py::arg("seed") = 0,
      py::arg("batch_size") = py::none(), py::arg("render_mode") = py::none(),
      "A VectorEnv of num_envs copies of env_id (see list_envs()). batch_size < num_envs selects async mode; "
      "render_mode='rgb_array' lets render() draw the envs. "
      "Keyword env options: sticky_action_probability, difficulty_ramping (MinAtar only); model_file, frame_skip, "
      "forward_reward_weight, ctrl_cost_weight, healthy_reward, reset_noise_scale, healthy_z_range, "
      "healthy_angle_range, exclude_current_positions_from_observation, terminate_when_unhealthy, forward_body, "
      "contact_cost_weight, reward_dist_weight, reward_control_weight, contact_force_range, contact_cost_range, "
      "include_cfrc_ext_in_observation, include_cinert_in_observation, include_cvel_in_observation, "
      "include_qfrc_actuator_in_observation, uph_cost_weight, impact_cost_weight, impact_cost_range, "
      "observe_sensors (MuJoCo tasks).");
  module.def(
      "list_envs", [] { return envs::Registry::global().ids(); }, "The registered environment ids.");
}

}  // namespace concord::python
