#!/usr/bin/env python3
"""What a Python-defined environment costs per step under Concord, against a bare Python loop.

The env is CartPole-v1 written in Python (Gymnasium's dynamics, pure Python floats). Measured,
in microseconds per environment step:

  bare loop        env.step(action) in a Python for-loop, random actions, reset on episode end
  concord.make     the same env behind concord.make(num_envs=8): the engine calls Python
  train (python)   concord.train(env="PyCartPole-v1", policy=...), wall time / steps, PPO with
                   configs/ppo_cartpole.toml (learning included: 20 epochs per 256 steps), and
                   rollout-bound (the same with 1 epoch of 1 minibatch per 8 x 128 steps)
  train (C++)      the same runs on the built-in CartPole-v1: the difference is the Python env's cost

    PYTHONPATH=build/python /usr/bin/python3 bench/python_env_training.py [--steps 20000] [--step-timeout 0]
"""

import argparse
import math
import pathlib
import random
import tempfile
import time

import numpy as np

import concord

CONFIG = str(pathlib.Path(__file__).resolve().parents[1] / "configs" / "ppo_cartpole.toml")


class PyCartPole:
    """Gymnasium's CartPole-v1 dynamics (Euler integration), termination and reward."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_limit, x_limit = 12 * 2 * math.pi / 360, 2.4

    def __init__(self):
        high = np.array([self.x_limit * 2, np.inf, self.theta_limit * 2, np.inf], dtype=np.float32)
        self.observation_space = concord.Box(-high, high, dtype=np.float32)
        self.action_space = concord.Discrete(2)
        self._rng = random.Random()
        self._state = [0.0, 0.0, 0.0, 0.0]

    def reset(self, seed=None):
        if seed is not None:
            self._rng = random.Random(seed)
        self._state = [self._rng.uniform(-0.05, 0.05) for _ in range(4)]
        return np.array(self._state, dtype=np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self._state
        force = self.force_mag if action == 1 else -self.force_mag
        total_mass = self.masscart + self.masspole
        polemass_length = self.masspole * self.length
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + polemass_length * theta_dot * theta_dot * sin) / total_mass
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * cos * cos / total_mass)
        )
        x_acc = temp - polemass_length * theta_acc * cos / total_mass
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        self._state = [x, x_dot, theta, theta_dot]
        terminated = abs(x) > self.x_limit or abs(theta) > self.theta_limit
        return np.array(self._state, dtype=np.float32), 1.0, terminated, False, {}


def bare_loop(steps):
    env = PyCartPole()
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, size=steps).tolist()
    elapsed_steps = 0
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, _, _ = env.step(action)
        elapsed_steps += 1
        if terminated or elapsed_steps >= 500:
            env.reset()
            elapsed_steps = 0
    return (time.perf_counter() - start) / steps * 1e6


def through_make(steps, num_envs, num_threads, step_timeout=None):
    envs = concord.make("PyCartPole-v1", num_envs=num_envs, num_threads=num_threads, seed=0,
                        step_timeout_seconds=step_timeout)
    actions = np.random.default_rng(0).integers(0, 2, size=(64, num_envs))
    envs.reset()
    iterations = steps // num_envs
    start = time.perf_counter()
    for i in range(iterations):
        envs.step(actions[i % 64])
    elapsed = time.perf_counter() - start
    envs.close()
    return elapsed / (iterations * num_envs) * 1e6


ROLLOUT_BOUND = {"algo.ppo.update_epochs": 1, "algo.ppo.num_minibatches": 1, "algo.ppo.num_steps": 128}


def through_train(env_id, steps, policy, num_threads, root, overrides=None):
    run = concord.train(
        config=CONFIG,
        env=env_id,
        policy=policy,
        num_threads=num_threads,
        total_timesteps=steps,
        seed=1,
        progress=False,
        run_root=root,
        overrides={"run.log_level": "warn", "log.tensorboard": False, **(overrides or {})},
    )
    return run.wall_seconds / run.global_step * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20000, help="environment steps per measurement")
    parser.add_argument("--step-timeout", type=float, default=None,
                        help="env.step_timeout_seconds for the Python env (0: no bound, no watch; "
                             "default: the key's default)")
    args = parser.parse_args()
    bound = {} if args.step_timeout is None else {"env.step_timeout_seconds": args.step_timeout}
    concord.register_env("PyCartPole-v1", PyCartPole, max_episode_steps=500, reward_threshold=475.0)

    rows = [("bare Python loop", bare_loop(args.steps))]
    rows.append(("concord.make, 8 envs, 1 thread", through_make(args.steps, 8, 1, args.step_timeout)))
    rows.append(("concord.make, 8 envs, 2 threads", through_make(args.steps, 8, 2, args.step_timeout)))
    with tempfile.TemporaryDirectory() as root:
        for mode, overrides in (("configured", None), ("rollout-bound", ROLLOUT_BOUND)):
            for env_id, label in (("PyCartPole-v1", "python"), ("CartPole-v1", "C++")):
                extra = bound if env_id == "PyCartPole-v1" else {}
                micros = through_train(env_id, args.steps, "single", 1, root, {**(overrides or {}), **extra})
                rows.append((f"train {mode} ({label} env), single", micros))
            micros = through_train("PyCartPole-v1", args.steps, "sync_vector", 2, root, {**(overrides or {}), **bound})
            rows.append((f"train {mode} (python env), sync_vector x2", micros))
    print(f"{'measurement':<48}{'us/step':>10}")
    for label, micros in rows:
        print(f"{label:<48}{micros:>10.2f}")


if __name__ == "__main__":
    main()
