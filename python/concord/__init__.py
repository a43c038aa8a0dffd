"""Concord from Python: its vector environments, Python environments, training and trained agents.

The environments live in the extension module concord._envs (no LibTorch: importing is fast);
training, load() and evaluate() in concord._train, loaded on first use. Both run the same C++ as
the `concord` command: train() is `concord train`, evaluate() is `concord eval`.
"""

import os as _os
import threading as _threading
import warnings as _warnings

from concord import _envs
from concord._envs import Box, Discrete, MultiDiscrete, VectorEnv, list_envs

__all__ = [
    "Box",
    "Discrete",
    "MultiDiscrete",
    "VectorEnv",
    "make",
    "list_envs",
    "register_env",
    "train",
    "Run",
    "load",
    "evaluate",
    "Evaluation",
]

_TRAINING_DOC = """
Python environments: register_env(id, factory, max_episode_steps=None, reward_threshold=None)
registers a callable (a class) that returns an object with Gymnasium's Env API: reset(seed=None)
-> (obs, info), step(action) -> (obs, reward, terminated, truncated, info), observation_space
and action_space (Box of float32 or uint8, or Discrete: Gymnasium's, concord.Box /
concord.Discrete, or any object with their attributes). make(id) and train(env=id) then use it.
Every call into it holds the GIL, so only the policies "single" and "sync_vector" train it; the
others refuse it at start-up. A reset() or step() that takes longer than the key
env.step_timeout_seconds (default 60) ends the run with RuntimeError naming the env; Ctrl-C while
one runs raises KeyboardInterrupt at once.

Training: train(config=None, overrides=None, *, env=None, algo=None, policy=None,
total_timesteps=None, seed=None, num_envs=None, num_threads=None, run_root=None, progress=None,
resume=None, callback=None) is `concord train --config ... --set key=value --env ...`: the same
keys, defaults, errors (ValueError with the CLI's message) and run directory. callback(record)
gets a dict after every update (metrics, global_step, updates, recent_mean_return), with
LibTorch's autograd off (as under torch.no_grad(), if torch is imported); returning False stops
the run early. The GIL is released while training. Ctrl-C (SIGINT) stops the run,
writes its checkpoint and raises KeyboardInterrupt.

Trained agents: load(run_dir_or_checkpoint).act(obs, deterministic=True) -> actions for a numpy
batch; evaluate(run_dir_or_checkpoint, episodes=None, seed=None, stochastic=False,
max_episode_steps=None) returns `concord eval`'s numbers.
"""

_GYMNASIUM_DOC = """
Gymnasium: where Gymnasium 1.1 or later is importable, make() returns a gymnasium.vector.VectorEnv
(concord._gymnasium.GymnasiumVectorEnv) over the same engine that behaves as
gymnasium.vector.SyncVectorEnv(..., autoreset_mode=AutoresetMode.SAME_STEP): spaces are
gymnasium.spaces.Box / Discrete (batched by gymnasium.vector.utils.batch_space),
metadata["autoreset_mode"] is AutoresetMode.SAME_STEP, rewards are float64, info["final_obs"] is
Gymnasium's object array (None where the mask is False), and info has no "episode": wrap the env
in gymnasium.wrappers.vector.RecordEpisodeStatistics, as for SyncVectorEnv. Gymnasium's vector
observation wrappers (NormalizeObservation, FlattenObservation, ...) accept only NEXT_STEP
autoreset, so they refuse this env as they refuse SyncVectorEnv in SAME_STEP mode. make(...,
gymnasium=False) returns Concord's own VectorEnv regardless; gymnasium=True requires Gymnasium.
"""

__doc__ = _envs.__doc__ + _GYMNASIUM_DOC + _TRAINING_DOC


def make(env_id, num_envs=1, num_threads=1, seed=0, batch_size=None, *, gymnasium=None, render_mode=None,
         **env_options):
    """A vector environment of `num_envs` copies of the registered environment `env_id`.

    Args:
        env_id: a registered id, e.g. "CartPole-v1", "MinAtar/Breakout-v1" or
            "MuJoCo/HalfCheetah-v5" (see list_envs();
            register_env() adds Python environments).
        num_envs: the number of environments stepped as one batch.
        num_threads: the engine's threads that step them (the GIL is released meanwhile); a
            trajectory does not depend on it.
        seed: the seed of the first reset() without one (an int in [0, 2**64); None means 0).
        batch_size: B < num_envs selects EnvPool-style async mode (async_reset / send / recv,
            batches of B with info["env_id"]); None or num_envs steps all envs together.
        gymnasium: None (default) returns a gymnasium.vector.VectorEnv where Gymnasium 1.1 or
            later is importable and Concord's own VectorEnv where it is not; False always
            Concord's own; True always Gymnasium's (ImportError without Gymnasium).
        render_mode: None, or "rgb_array": render() then returns a tuple of one uint8 frame
            [height, width, 3] per env, drawn from its latest observation as Gymnasium draws
            classic control (MinAtar: each cell in its channel's colour); MuJoCo/* cannot be
            rendered (ValueError).
        **env_options: sticky_action_probability (float) and difficulty_ramping (bool), MinAtar
            only; model_file (str), frame_skip (int), forward_reward_weight, ctrl_cost_weight,
            healthy_reward, reset_noise_scale (floats), healthy_z_range, healthy_angle_range
            ((low, high)), exclude_current_positions_from_observation and
            terminate_when_unhealthy (bools), the MuJoCo/* tasks' (each takes Gymnasium v5's
            subset); None keeps the environment's default.

    Returns:
        gymnasium.vector.VectorEnv (concord._gymnasium.GymnasiumVectorEnv) or concord.VectorEnv,
        both with Gymnasium 1.x's vector API and same-step autoreset:
        reset(seed=None, options=None) -> (obs, info); step(actions) -> (obs, rewards,
        terminations, truncations, info); close(); num_envs, single_observation_space,
        single_action_space, observation_space, action_space, metadata["autoreset_mode"],
        render_mode and render().
        help(concord) describes how the two differ (spaces' classes, reward dtype,
        info["final_obs"], info["episode"]).

    Raises:
        ValueError: an unknown env_id or env option, or a bad count, seed or batch_size.

    Example:
        envs = concord.make("CartPole-v1", num_envs=8, seed=0)
        obs, info = envs.reset(seed=42)
        obs, rewards, terminations, truncations, info = envs.step(envs.action_space.sample())
    """
    if gymnasium not in (None, True, False):
        raise ValueError(f"make(): gymnasium must be None, True or False, got {gymnasium!r}")
    envs = _envs.make(env_id, num_envs, num_threads, seed, batch_size, render_mode, **env_options)
    adapter = _gymnasium_adapter(required=gymnasium is True) if gymnasium is not False else None
    if adapter is None:
        return envs
    make_kwargs = {"num_envs": num_envs, "num_threads": num_threads, "seed": seed}
    if batch_size is not None:
        make_kwargs["batch_size"] = batch_size
    if render_mode is not None:
        make_kwargs["render_mode"] = render_mode
    make_kwargs.update(env_options)
    return adapter.GymnasiumVectorEnv(envs, make_kwargs)


_gymnasium_warned = False
# Threads may make envs at once; a failed import seen half-way by another thread would look like a
# broken Gymnasium rather than a missing one.
_gymnasium_lock = _threading.Lock()


def _gymnasium_adapter(required):
    """concord._gymnasium where Gymnasium (>= 1.1) imports, else None (or ImportError if required).

    A missing Gymnasium is the ordinary case and passes silently; one that is installed but does
    not import, or is too old, is named in a warning once."""
    global _gymnasium_warned
    with _gymnasium_lock:
        try:
            from concord import _gymnasium
        except ImportError as error:
            if required:
                raise ImportError(f"make(gymnasium=True): {error}") from error
            missing = isinstance(error, ModuleNotFoundError) and error.name == "gymnasium"
            if not missing and not _gymnasium_warned:
                _gymnasium_warned = True
                _warnings.warn(
                    f"concord.make() returns Concord's own VectorEnv, not Gymnasium's: {error}",
                    RuntimeWarning,
                    stacklevel=3,
                )
            return None
    return _gymnasium

# Python envs, replayed into concord._train's registry when it loads: each extension module holds
# its own copy of the C++ registry.
_python_envs = {}
_train_module = None


def _training():
    global _train_module
    if _train_module is None:
        from concord import _train

        for env_id, (factory, max_episode_steps, reward_threshold) in _python_envs.items():
            _train._register_env(env_id, factory, max_episode_steps, reward_threshold, False)
        _train_module = _train
    return _train_module


def register_env(id, factory, max_episode_steps=None, reward_threshold=None):
    """Registers a Python environment under `id` for make() and train(); see help(concord).

    `factory()` (e.g. the env class) is called once here to check its spaces, and once per env
    made. max_episode_steps truncates episodes as Gymnasium's TimeLimit does.
    """
    if not isinstance(id, str) or not id:
        raise ValueError(f"register_env(): id must be a non-empty str, got {id!r}")
    steps = 0 if max_episode_steps is None else max_episode_steps
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise ValueError(f"register_env('{id}'): max_episode_steps must be an int or None, got {max_episode_steps!r}")
    threshold = None if reward_threshold is None else float(reward_threshold)
    _envs._register_env(id, factory, steps, threshold, True)
    _python_envs[id] = (factory, steps, threshold)
    if _train_module is not None:
        _train_module._register_env(id, factory, steps, threshold, False)


def _override_text(key, value):
    """A Python value as the text of `--set key=value` (TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"overrides['{key}'] must be a bool, int, float or str, got {type(value).__name__}")


def _count(name, value, low, high, default):
    """A shorthand count checked as the CLI checks its flag; `default` when None."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    return value


class Run:
    """A finished concord.train(): its run directory, checkpoint and counters."""

    def __init__(self, record):
        self.run_dir = record["run_dir"]
        self.checkpoint = record["checkpoint"]
        self.algo = record["algo"]
        self.env_id = record["env_id"]
        self.global_step = record["global_step"]
        self.updates = record["updates"]
        self.wall_seconds = record["wall_seconds"]
        self.stopped_early = record["stopped_early"]  # the callback returned False

    def load(self):
        """The trained policy (concord.load(self.run_dir))."""
        return load(self.run_dir)

    def evaluate(self, episodes=None, seed=None, stochastic=False, max_episode_steps=None):
        """concord.evaluate(self.run_dir, ...)."""
        return evaluate(self.run_dir, episodes=episodes, seed=seed, stochastic=stochastic,
                        max_episode_steps=max_episode_steps)

    def __repr__(self):
        return (
            f"Run('{self.run_dir}', {self.algo} on {self.env_id}, {self.global_step} steps, "
            f"{self.updates} updates, {self.wall_seconds:.1f} s)"
        )


def train(
    config=None,
    overrides=None,
    *,
    env=None,
    algo=None,
    policy=None,
    total_timesteps=None,
    seed=None,
    num_envs=None,
    num_threads=None,
    run_root=None,
    progress=None,
    resume=None,
    callback=None,
):
    """Trains as `concord train` does and returns the Run; see help(concord).

    config: a TOML file, a shipped preset's name ("ppo_cartpole"), or a list of them (--config); overrides: {"algo.ppo.learning_rate": 3e-4}
    (--set key=value); the keywords are the CLI's shorthands (--env, --algo, --policy,
    --total-timesteps, --seed, --num-envs, --threads, --run-root, --progress, --resume), applied
    last. progress: True ("auto"), False ("off"), or "auto" | "bar" | "plain" | "off".
    """
    if config is None:
        config_files = []
    elif isinstance(config, (str, _os.PathLike)):
        config_files = [_os.fspath(config)]
    else:
        config_files = [_os.fspath(path) for path in config]
    # A file is read from the caller's working directory; anything else is a preset's name
    # ("ppo_cartpole", or "configs/ppo_cartpole.toml" from outside the repository), which the C++
    # resolves as `--config` does (ValueError naming the closest presets when there is none).
    config_files = [_os.path.abspath(path) if _os.path.isfile(path) else path for path in config_files]
    override_list = []
    for key, value in (overrides or {}).items():
        override_list.append(f"{key}={_override_text(key, value)}")
    if progress is True:
        progress = "auto"
    elif progress is False:
        progress = "off"
    elif progress is not None and progress not in ("auto", "bar", "plain", "off"):
        raise ValueError(f"progress must be True, False, 'auto', 'bar', 'plain' or 'off', got {progress!r}")
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable, got {callback!r}")
    record = _training().train(
        config_files,
        override_list,
        env or "",
        _count("seed", seed, 0, 1 << 62, -1),
        _count("num_envs", num_envs, 1, 1 << 20, 0),
        _count("num_threads", num_threads, 1, 1 << 20, 0),
        _os.fspath(run_root) if run_root is not None else "",
        progress or "",
        algo or "",
        policy or "",
        _count("total_timesteps", total_timesteps, 1, 1 << 50, 0),
        _os.fspath(resume) if resume is not None else "",
        callback,
    )
    return Run(record)


def load(path):
    """The policy in a run directory or checkpoint file, as a TrainedPolicy:
    act(obs, deterministic=True) maps a numpy batch [B, *obs_shape] (float32, or uint8 for
    uint8 spaces) to actions: int64 [B] for Discrete, float32 [B, *shape] clipped for Box."""
    return _training().TrainedPolicy(_os.fspath(path))


class Evaluation:
    """evaluate()'s result: `concord eval`'s numbers; str() is the line it prints."""

    def __init__(self, record):
        self.algo = record["algo"]
        self.env_id = record["env_id"]
        self.global_step = record["global_step"]
        self.episodes = record["episodes"]
        self.seed = record["seed"]
        self.stochastic = record["stochastic"]
        self.returns = record["returns"]
        self.mean = record["mean"]
        self.std = record["std"]
        self.cut_at_limit = record["cut_at_limit"]
        self.step_limit = record["step_limit"]

    def __str__(self):
        mode = "stochastic" if self.stochastic else "deterministic"
        line = (
            f"{self.algo} {self.env_id} after {self.global_step} steps: return {self.mean:.2f} +- "
            f"{self.std:.2f} over {self.episodes} episodes ({mode})"
        )
        if self.cut_at_limit > 0:
            line += (
                f"; {self.cut_at_limit} of them cut at {self.step_limit} steps, the env having no time "
                "limit (--max-episode-steps)"
            )
        return line

    def __repr__(self):
        return f"Evaluation({self})"


def evaluate(path, episodes=None, seed=None, stochastic=False, max_episode_steps=None):
    """`concord eval PATH [--episodes N] [--seed S] [--stochastic] [--max-episode-steps M]`: the mean
    and standard deviation of the return over `episodes` (default eval.episodes) in envs seeded
    `seed` (default run.seed + 1000); an env without a time limit is cut at M steps (108,000)."""
    episodes = _count("episodes", episodes, 1, 10000, None)
    seed = _count("seed", seed, 0, 1 << 62, None)
    max_episode_steps = _count("max_episode_steps", max_episode_steps, 1, 10**9, None)
    return Evaluation(
        _training().evaluate(_os.fspath(path), episodes, seed, bool(stochastic), max_episode_steps)
    )
