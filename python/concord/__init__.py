"""Concord from Python: its vector environments, Python environments, training and trained agents.

The environments live in the extension module concord._envs (no LibTorch: importing is fast);
training, load() and evaluate() in concord._train, loaded on first use. Both run the same C++ as
the `concord` command: train() is `concord train`, evaluate() is `concord eval`.
"""

import os as _os

from concord import _envs
from concord._envs import Box, Discrete, MultiDiscrete, VectorEnv, list_envs, make

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
others refuse it at start-up.

Training: train(config=None, overrides=None, *, env=None, algo=None, policy=None,
total_timesteps=None, seed=None, num_envs=None, num_threads=None, run_root=None, progress=None,
resume=None, callback=None) is `concord train --config ... --set key=value --env ...`: the same
keys, defaults, errors (ValueError with the CLI's message) and run directory. callback(record)
gets a dict after every update (metrics, global_step, updates, recent_mean_return), with
LibTorch's autograd off (as under torch.no_grad(), if torch is imported); returning False stops
the run early. The GIL is released while training. Ctrl-C (SIGINT) stops the run,
writes its checkpoint and raises KeyboardInterrupt.

Trained agents: load(run_dir_or_checkpoint).act(obs, deterministic=True) -> actions for a numpy
batch; evaluate(run_dir_or_checkpoint, episodes=None, seed=None, stochastic=False) returns
`concord eval`'s numbers.
"""

__doc__ = _envs.__doc__ + _TRAINING_DOC

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

    def evaluate(self, episodes=None, seed=None, stochastic=False):
        """concord.evaluate(self.run_dir, ...)."""
        return evaluate(self.run_dir, episodes=episodes, seed=seed, stochastic=stochastic)

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

    config: a TOML file or a list of them (--config); overrides: {"algo.ppo.learning_rate": 3e-4}
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
    for path in config_files:
        if not _os.path.isfile(path):
            raise FileNotFoundError(f"config file '{path}' does not exist")
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

    def __str__(self):
        mode = "stochastic" if self.stochastic else "deterministic"
        return (
            f"{self.algo} {self.env_id} after {self.global_step} steps: return {self.mean:.2f} +- "
            f"{self.std:.2f} over {self.episodes} episodes ({mode})"
        )

    def __repr__(self):
        return f"Evaluation({self})"


def evaluate(path, episodes=None, seed=None, stochastic=False):
    """`concord eval PATH [--episodes N] [--seed S] [--stochastic]`: the mean and standard deviation
    of the return over `episodes` (default eval.episodes) in envs seeded `seed` (default run.seed +
    1000)."""
    episodes = _count("episodes", episodes, 1, 10000, None)
    seed = _count("seed", seed, 0, 1 << 62, None)
    return Evaluation(_training().evaluate(_os.fspath(path), episodes, seed, bool(stochastic)))
