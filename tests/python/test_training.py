"""concord.register_env, train, load and evaluate: Python envs under the C++ trainer."""

import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import concord

ROOT = pathlib.Path(__file__).resolve().parents[2]
CARTPOLE_CONFIG = str(ROOT / "configs" / "ppo_cartpole.toml")
# ctest names the CLI binary, so that errors and eval lines can be compared with it.
CONCORD_EXECUTABLE = os.environ.get("CONCORD_EXECUTABLE")
EPISODE_STEPS = 10


class SignEnv:
    """Each step shows +1 or -1; action 1 for +1 and 0 for -1 earns 1. A random policy averages
    EPISODE_STEPS / 2 per episode, a trained one EPISODE_STEPS."""

    def __init__(self):
        self.observation_space = concord.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = concord.Discrete(2)
        self._rng = random.Random()
        self._sign = 1.0

    def _observe(self):
        self._sign = 1.0 if self._rng.random() < 0.5 else -1.0
        return np.array([self._sign], dtype=np.float32)

    def reset(self, seed=None):
        if seed is not None:
            self._rng = random.Random(seed)
        return self._observe(), {}

    def step(self, action):
        reward = 1.0 if (int(action) == 1) == (self._sign > 0) else 0.0
        return self._observe(), reward, False, False, {}


class GridEnv:
    """uint8 observations and a Box action space: the other space kinds a Python env may have."""

    def __init__(self):
        self.observation_space = concord.Box(0, 255, shape=(3, 3, 2), dtype=np.uint8)
        self.action_space = concord.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._t = 0

    def reset(self, seed=None):
        self._t = 0
        return np.full((3, 3, 2), 7, dtype=np.uint8), {}

    def step(self, action):
        assert action.shape == (2,) and action.dtype == np.float32
        self._t += 1
        reward = float(-np.abs(action - 0.5).sum())
        return np.full((3, 3, 2), self._t % 255, dtype=np.uint8), reward, self._t >= 5, False, {}


class FailingEnv(SignEnv):
    def step(self, action):
        raise ZeroDivisionError("no luck")


@pytest.fixture(scope="module", autouse=True)
def python_envs():
    # Registered when the tests run, not when the module is collected: test_vector_env.py's
    # parametrisation over list_envs() must not pick these up.
    for env_id, factory, steps in (
        ("test/Sign-v0", SignEnv, EPISODE_STEPS),
        ("test/Grid-v0", GridEnv, None),
        ("test/Failing-v0", FailingEnv, None),
    ):
        if env_id not in concord.list_envs():
            concord.register_env(env_id, factory, max_episode_steps=steps)


def train_sign(tmp_path, **keywords):
    options = dict(
        config=CARTPOLE_CONFIG,
        env="test/Sign-v0",
        total_timesteps=8192,
        seed=1,
        progress=False,
        run_root=tmp_path,
        overrides={"run.log_level": "warn"},
    )
    options.update(keywords)
    return concord.train(**options)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    started = time.perf_counter()
    run = train_sign(root, policy="single")
    return run, time.perf_counter() - started


def test_python_env_is_a_vector_env():
    assert "test/Sign-v0" in concord.list_envs()
    for threads in (1, 2):
        envs = concord.make("test/Sign-v0", num_envs=4, num_threads=threads, gymnasium=False)
        obs, _ = envs.reset(seed=3)
        assert obs.shape == (4, 1) and obs.dtype == np.float32
        assert set(np.abs(obs).ravel()) == {1.0}
        total = np.zeros(4)
        for _ in range(EPISODE_STEPS):
            obs, rewards, terminated, truncated, info = envs.step((obs[:, 0] > 0).astype(np.int64))
            total += rewards
        assert truncated.all() and not terminated.any()  # max_episode_steps is Gymnasium's TimeLimit
        assert (info["episode"]["r"] == EPISODE_STEPS).all()
        envs.close()


def test_python_env_seeding_is_reproducible():
    def first_obs():
        envs = concord.make("test/Sign-v0", num_envs=8)
        obs, _ = envs.reset(seed=11)
        envs.close()
        return obs

    np.testing.assert_array_equal(first_obs(), first_obs())


def test_training_beats_random_policy(trained):
    run, seconds = trained
    assert run.global_step >= 8192 and run.updates > 0
    assert os.path.isfile(run.checkpoint) and os.path.isfile(os.path.join(run.run_dir, "config.toml"))
    result = concord.evaluate(run.run_dir, episodes=20)
    # A random policy earns EPISODE_STEPS / 2 on average.
    assert result.mean >= 0.9 * EPISODE_STEPS, str(result)
    assert seconds < 60


def test_sync_vector_steps_python_envs_on_threads(tmp_path):
    run = train_sign(tmp_path, policy="sync_vector", num_threads=2, total_timesteps=2048)
    assert run.global_step >= 2048


def test_load_and_act(trained):
    run, _ = trained
    policy = concord.load(run.run_dir)
    assert policy.env_id == "test/Sign-v0" and policy.global_step == run.global_step
    obs = np.array([[1.0], [-1.0], [1.0], [-1.0]], dtype=np.float32)
    actions = policy.act(obs)
    assert actions.shape == (4,) and actions.dtype == np.int64
    np.testing.assert_array_equal(actions, [1, 0, 1, 0])
    np.testing.assert_array_equal(policy.act(obs, deterministic=True), actions)
    assert policy.act(np.array([1.0], dtype=np.float32)).shape == ()
    assert concord.load(run.checkpoint).act(obs).tolist() == actions.tolist()
    with pytest.raises(ValueError, match=r"act\(\): observations must be shaped"):
        policy.act(np.zeros((4, 3), dtype=np.float32))


def test_uint8_observations_and_box_actions(tmp_path):
    run = concord.train(
        env="test/Grid-v0",
        total_timesteps=256,
        overrides={"algo.ppo.num_steps": 32, "run.log_level": "warn"},
        num_envs=4,
        progress=False,
        run_root=tmp_path,
    )
    policy = run.load()
    actions = policy.act(np.zeros((5, 3, 3, 2), dtype=np.uint8))
    assert actions.shape == (5, 2) and actions.dtype == np.float32
    assert (actions >= -1).all() and (actions <= 1).all()


def test_evaluate_is_deterministic(trained):
    run, _ = trained
    first = run.evaluate(episodes=5, seed=4)
    second = concord.evaluate(run.run_dir, episodes=5, seed=4)
    assert first.returns == second.returns and first.episodes == 5 and first.seed == 4
    assert str(first).startswith("ppo test/Sign-v0 after ")
    assert first.cut_at_limit == 0  # the env has a time limit of its own
    with pytest.raises(ValueError, match="max_episode_steps must be an int in"):
        concord.evaluate(run.run_dir, max_episode_steps=0)


def test_training_leaves_the_interpreters_denormals_alone(trained):
    # Training and evaluation flush denormals to zero on the calling thread (run.flush_denormals);
    # Python's own arithmetic on that thread must get them back afterwards.
    run, _ = trained
    run.evaluate(episodes=1, seed=4)
    denormal = np.float32(1e-40)
    assert denormal * np.float32(1.0) == denormal != 0


@pytest.mark.skipif(CONCORD_EXECUTABLE is None, reason="CONCORD_EXECUTABLE names the CLI (set by ctest)")
def test_evaluate_prints_what_concord_eval_prints(tmp_path):
    run = concord.train(
        config=CARTPOLE_CONFIG, total_timesteps=512, progress=False, run_root=tmp_path,
        overrides={"run.log_level": "warn"},
    )
    cli = subprocess.run(
        [CONCORD_EXECUTABLE, "eval", run.run_dir, "--episodes", "3", "--seed", "5"],
        capture_output=True, text=True, check=True,
    )
    assert cli.stdout.strip() == str(concord.evaluate(run.run_dir, episodes=3, seed=5))


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"algo.ppo.no_such_key": 1}, "algo.ppo.no_such_key"),
        ({"env.num_envs": "many"}, "env.num_envs"),
        # A value the algorithm's own validation refuses: named by its key, not by a C++ struct.
        ({"algo.ppo.num_steps": -5}, "algo.ppo.num_steps"),
    ],
)
def test_config_errors_are_value_errors_naming_the_key(tmp_path, overrides, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")) as error:
        concord.train(overrides=overrides, run_root=tmp_path, progress=False)
    assert not any(tmp_path.iterdir())  # rejected before the run directory exists
    if CONCORD_EXECUTABLE is not None:
        assignment = concord._override_text(key, next(iter(overrides.values())))
        cli = subprocess.run(
            [CONCORD_EXECUTABLE, "train", "--set", f"{key}={assignment}", "--run-root", str(tmp_path)],
            capture_output=True, text=True,
        )
        assert cli.stderr.strip() == f"concord: error: {error.value}"


def test_policies_that_cannot_call_python_refuse_python_envs(tmp_path):
    for policy in ("hogwild", "central_inference", "multi_learner"):
        with pytest.raises(ValueError) as error:
            train_sign(tmp_path, policy=policy)
        message = str(error.value)
        assert "\n" not in message
        assert f"policy '{policy}' cannot train test/Sign-v0" in message
        assert "single or sync_vector" in message


def test_python_errors_in_envs_are_one_line(tmp_path):
    with pytest.raises(RuntimeError, match=r"environment 'test/Failing-v0': step\(\) raised ZeroDivisionError: no luck"):
        concord.train(env="test/Failing-v0", total_timesteps=256, progress=False, run_root=tmp_path,
                      overrides={"run.log_level": "warn"})


def test_register_env_refuses_bad_envs():
    with pytest.raises(ValueError, match="already registered"):
        concord.register_env("test/Sign-v0", SignEnv)
    with pytest.raises(ValueError, match="callable"):
        concord.register_env("test/NotCallable-v0", 3)

    class TextSpace(SignEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = "text"

    with pytest.raises(ValueError, match="observation_space of 'test/Text-v0' must be a Box or a Discrete"):
        concord.register_env("test/Text-v0", TextSpace)
    assert "test/Text-v0" not in concord.list_envs()


def test_callback_sees_metrics_and_can_stop(tmp_path):
    records = []

    def callback(record):
        records.append(record)
        return len(records) < 3

    run = train_sign(tmp_path, callback=callback)
    assert len(records) == 3 and run.stopped_early
    assert records[-1]["global_step"] == run.global_step < 8192
    assert "losses/value_loss" in records[0] and records[0]["updates"] == 1
    assert os.path.isfile(run.checkpoint)


def test_callback_exception_is_raised_after_the_checkpoint(tmp_path):
    def callback(record):
        raise LookupError("from the callback")

    with pytest.raises(LookupError, match="from the callback"):
        train_sign(tmp_path, callback=callback)
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "checkpoint.ckpt").is_file()


def test_sigint_checkpoints_and_raises_keyboard_interrupt(tmp_path):
    def callback(record):
        if record["updates"] == 2:
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt, match="checkpoint saved"):
        train_sign(tmp_path, callback=callback)
    assert signal.getsignal(signal.SIGINT) is previous  # Python's handler is back
    (run_dir,) = tmp_path.iterdir()
    policy = concord.load(run_dir)
    assert 0 < policy.global_step < 8192


def test_resume_continues_the_run(tmp_path):
    run = train_sign(tmp_path, total_timesteps=1024)
    resumed = concord.train(resume=run.run_dir, total_timesteps=2048, progress=False)
    assert resumed.run_dir == run.run_dir
    assert resumed.global_step >= 2048 > run.global_step


def test_spaces_for_python_envs():
    box = concord.Box(-1.0, [1.0, 2.0])
    assert box.shape == (2,) and box.dtype == np.float32 and box.high.tolist() == [1.0, 2.0]
    assert concord.Box(0, 255, shape=(2, 2), dtype=np.uint8).dtype == np.uint8
    with pytest.raises(ValueError, match="float32 or uint8"):
        concord.Box(0, 1, shape=(2,), dtype=np.int64)
    with pytest.raises(ValueError, match="n >= 1"):
        concord.Discrete(0)


def test_env_registered_after_training_started_is_trainable(trained, tmp_path):
    # concord._train is loaded by now (the fixture trained): registration must reach it too.
    concord.register_env("test/SignLate-v0", SignEnv, max_episode_steps=EPISODE_STEPS)
    run = train_sign(tmp_path, env="test/SignLate-v0", total_timesteps=512)
    assert run.env_id == "test/SignLate-v0" and run.global_step >= 512


def test_an_algorithms_refusal_names_the_key_written(tmp_path):
    # (a value within the config's bounds, cli/config_bounds.h, that only the algorithm refuses)
    with pytest.raises(ValueError, match=r"^algo\.ppo\.gamma=1\.5 must be in \[0, 1\]$"):
        concord.train(overrides={"algo.ppo.gamma": 1.5}, run_root=tmp_path, progress=False)


def test_config_takes_a_preset_name_and_paths_from_the_callers_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = concord.train(config="ppo_cartpole", total_timesteps=64, run_root="runs", progress=False)
    assert run.env_id == "CartPole-v1" and run.algo == "ppo"
    # The README's relative path, written outside the repository, finds the preset too.
    assert concord.train(config="configs/ppo_cartpole.toml", total_timesteps=64, run_root="runs", progress=False)
    # A file of the caller's folder, given relative to it.
    (tmp_path / "mine.toml").write_text('[env]\nid = "Acrobot-v1"\n')
    assert concord.train(config="mine.toml", total_timesteps=64, run_root="runs", progress=False).env_id == "Acrobot-v1"
    with pytest.raises(ValueError, match="no file 'ppo_cartpol' and no preset of that name; did you mean ppo_cartpole"):
        concord.train(config="ppo_cartpol", run_root="runs", progress=False)


# A Python env whose step hangs on its 200th call (after the first update, so a checkpoint exists),
# in a process of its own: `time.sleep` blocks in C, a busy loop runs Python code, both on Python's
# main thread (policy single); "worker-sleep" sleeps on an engine thread of sync_vector (its first
# step from the 200th on that runs there; each step takes 2 ms, so that the engine spreads them).
# It prints "hanging" just before, so that the test times from there.
HANGING_RUN = r"""
import sys, threading, time
import numpy as np
import concord

how, limit, run_root = sys.argv[1], float(sys.argv[2]), sys.argv[3]
on_worker = how == "worker-sleep"


class HangingEnv:
    def __init__(self):
        self.observation_space = concord.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = concord.Discrete(2)
        self.steps = 0

    def reset(self, seed=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.steps += 1
        if on_worker:
            time.sleep(0.002)
        if self.steps == 200 if not on_worker else (self.steps >= 200 and
                                                     threading.current_thread() is not threading.main_thread()):
            print("hanging", flush=True)
            if how != "busy":
                time.sleep(3600)
            while True:
                pass
        return np.zeros(1, np.float32), 0.0, False, False, {}


concord.register_env("test/Hanging-v0", HangingEnv)
concord.train(env="test/Hanging-v0", num_envs=2, total_timesteps=100000, progress=False, run_root=run_root,
              policy="sync_vector" if on_worker else "single", num_threads=2 if on_worker else 1,
              overrides={"run.log_level": "warn", "algo.ppo.num_steps": 64, "env.step_timeout_seconds": limit})
"""


class HangingRun:
    """The run in a process of its own; each line of its stderr with the time it came."""

    def __init__(self, tmp_path, how, limit):
        self.process = subprocess.Popen([sys.executable, "-c", HANGING_RUN, how, str(limit), str(tmp_path)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read)
        self.reader.start()
        line = self.process.stdout.readline()
        self.hung_at = time.monotonic()
        assert line == "hanging\n", self.finish()

    def _read(self):
        for line in self.process.stderr:
            self.lines.append((time.monotonic(), line))

    def finish(self):
        self.process.wait(timeout=60)
        self.reader.join()
        return "".join(line for _, line in self.lines)

    def seconds_until(self, text, since):
        """When the line holding `text` came, `since` then; None if none did."""
        return next((at - since for at, line in self.lines if text in line), None)


# The acceptance of issue 70: the run ends (its error line comes) within the limit plus a second
# of the hang, and within a second of a SIGINT during it, after the checkpoint of its last update.
@pytest.mark.parametrize("how", ["sleep", "busy"])
def test_a_hung_python_env_ends_the_run_after_its_limit(tmp_path, how):
    run = HangingRun(tmp_path, how, limit=1.0)
    errors = run.finish()
    message = "RuntimeError: environment 'test/Hanging-v0': step() did not return within env.step_timeout_seconds = 1 s"
    assert run.process.returncode == 1 and message in errors, errors
    waited = run.seconds_until(message, since=run.hung_at)
    assert waited < 1.0 + 1.0, f"the run ended {waited:.2f} s after the env hung"
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "checkpoint.ckpt").is_file()


@pytest.mark.parametrize("how", ["sleep", "busy"])
def test_sigint_during_a_hung_python_env_ends_the_run_at_once(tmp_path, how):
    run = HangingRun(tmp_path, how, limit=600.0)
    time.sleep(0.2)
    run.process.send_signal(signal.SIGINT)
    sent_at = time.monotonic()
    errors = run.finish()
    message = ("KeyboardInterrupt: training stopped: environment 'test/Hanging-v0': step() had not returned when "
               "SIGINT arrived")
    assert message in errors, errors
    waited = run.seconds_until(message, since=sent_at)
    assert waited < 1.0, f"the run ended {waited:.2f} s after SIGINT"
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "checkpoint.ckpt").is_file()


# A call that the exception raised in it does not end (time.sleep on a thread other than Python's
# main one retries after EINTR) ends the process: within the limit, the watchdog's period and its
# 0.4 s of grace, after the checkpoint of the last update, in one line that says which step it holds.
@pytest.mark.parametrize("signalled", [False, True])
def test_a_call_that_cannot_be_interrupted_ends_the_process_after_the_checkpoint(tmp_path, signalled):
    run = HangingRun(tmp_path, "worker-sleep", limit=600.0 if signalled else 1.0)
    since = run.hung_at
    if signalled:
        time.sleep(0.2)
        run.process.send_signal(signal.SIGINT)
        since = time.monotonic()
    errors = run.finish()
    said = ("had not returned when SIGINT arrived, nor within 400 ms of the KeyboardInterrupt" if signalled else
            "did not return within env.step_timeout_seconds = 1 s, nor within 400 ms of the TimeoutError")
    message = f"concord: error: environment 'test/Hanging-v0': step() {said} raised in it"
    assert run.process.returncode == (128 + signal.SIGINT if signalled else 1) and message in errors, errors
    waited = run.seconds_until(message, since=since)
    assert waited < (1.0 if signalled else 2.0), f"the process ended {waited:.2f} s after the env hung"
    (run_dir,) = tmp_path.iterdir()
    line = next(line for _, line in run.lines if message in line)
    step = int(re.search(r"the checkpoint .*checkpoint\.ckpt holds step (\d+) \(update \d+\)$", line).group(1))
    last_update = int((run_dir / "metrics.csv").read_text().splitlines()[-1].split(",")[0])
    assert step == last_update >= 128 and (run_dir / "checkpoint.ckpt").is_file()


def test_step_timeout_zero_calls_python_on_the_engines_thread_and_other_envs_refuse_the_key(tmp_path):
    run = train_sign(tmp_path, total_timesteps=512, overrides={"run.log_level": "warn", "env.step_timeout_seconds": 0})
    assert run.global_step >= 512
    with pytest.raises(ValueError, match="env.step_timeout_seconds is set, but CartPole-v1 has no such setting"):
        concord.train(env="CartPole-v1", total_timesteps=256, progress=False, run_root=tmp_path,
                      overrides={"env.step_timeout_seconds": 5})
    with pytest.raises(ValueError, match=r"env.step_timeout_seconds must be at least 0, got -1"):
        train_sign(tmp_path, overrides={"env.step_timeout_seconds": -1})
