"""concord.make() as Gymnasium's own vector env, compared with gymnasium.vector.SyncVectorEnv.

Gymnasium is not a Debian package, so the tests that need it skip (saying why) unless it is
importable: installed, on PYTHONPATH, or in CONCORD_GYMNASIUM_PATH (folders joined by os.pathsep),
which ctest passes through. Its sources are enough (with python3-cloudpickle and
python3-typing-extensions installed), e.g. in the git-ignored third_party/python:

    git clone --depth 1 https://github.com/Farama-Foundation/Gymnasium /tmp/Gymnasium
    git clone --depth 1 https://github.com/Farama-Foundation/Farama-Notifications /tmp/Farama-Notifications
    mkdir -p third_party/python
    cp -r /tmp/Gymnasium/gymnasium /tmp/Farama-Notifications/farama_notifications third_party/python/
    CONCORD_GYMNASIUM_PATH=$PWD/third_party/python PYTHONPATH=build/python \\
        /usr/bin/python3 -m pytest -q -rs tests/python/test_gymnasium.py

The tests of make() without Gymnasium run everywhere.
"""

import os
import pydoc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import concord

for _path in reversed(os.environ.get("CONCORD_GYMNASIUM_PATH", "").split(os.pathsep)):
    if _path and os.path.abspath(_path) not in sys.path:
        sys.path.insert(0, os.path.abspath(_path))

NUM_ENVS = 4


def gymnasium_version(gym):
    return tuple(int(part) for part in gym.__version__.split(".")[:2])


@pytest.fixture(scope="module")
def gym():
    try:
        import gymnasium
    except ImportError as error:
        pytest.skip(
            f"Gymnasium is not importable ({error}); set CONCORD_GYMNASIUM_PATH to a folder holding its "
            "sources (tests/python/test_gymnasium.py says how)"
        )
    if gymnasium_version(gymnasium) < (1, 1):
        pytest.skip(f"Gymnasium {gymnasium.__version__} is older than 1.1, which make() needs")
    return gymnasium


def reference(gym, env_id="CartPole-v1", same_step=False, num_envs=NUM_ENVS):
    """Gymnasium's own: make_vec(..., vectorization_mode="sync"), optionally in same-step mode."""
    vector_kwargs = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP} if same_step else None
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync", vector_kwargs=vector_kwargs)


# --- Without Gymnasium (these run everywhere) ---------------------------------------------------


def run_without_gymnasium(code):
    """Runs `code` in a fresh interpreter in which `import gymnasium` fails (a RuntimeWarning,
    which make() gives for a Gymnasium that is there but does not import, is an error)."""
    prelude = "import sys\nsys.modules['gymnasium'] = None  # import gymnasium -> ModuleNotFoundError\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", prelude + textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_without_gymnasium_make_returns_concords_own_vector_env():
    run_without_gymnasium(
        """
        import numpy as np
        import concord
        envs = concord.make("CartPole-v1", num_envs=4)
        assert type(envs) is concord.VectorEnv
        assert isinstance(envs.single_observation_space, concord.Box)
        assert isinstance(envs.single_action_space, concord.Discrete)
        assert envs.metadata["autoreset_mode"] == "SameStep"
        envs.reset(seed=0)
        _, rewards, *_ = envs.step(np.zeros(4, dtype=np.int64))
        assert rewards.dtype == np.float32
        assert type(concord.make("CartPole-v1", gymnasium=None)) is concord.VectorEnv
        # Threads making envs at once see a missing Gymnasium too, not a half-failed import.
        import threading
        made, failed = [], []
        def make_one():
            try:
                made.append(type(concord.make("CartPole-v1")))
            except Exception as error:
                failed.append(error)
        threads = [threading.Thread(target=make_one) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failed and made == [concord.VectorEnv] * 8, failed
        try:
            concord.make("CartPole-v1", gymnasium=True)
            raise AssertionError("make(gymnasium=True) without Gymnasium did not raise")
        except ImportError as error:
            assert "make(gymnasium=True)" in str(error), error
        """
    )


def test_a_gymnasium_too_old_is_named_in_a_warning(tmp_path):
    """Gymnasium 1.0 and 0.x lack gymnasium.vector.AutoresetMode: make() warns once and returns
    Concord's own VectorEnv."""
    old = tmp_path / "gymnasium"
    (old / "vector").mkdir(parents=True)
    (old / "__init__.py").write_text("__version__ = '0.29.1'\n")
    (old / "vector" / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + [p for p in sys.path if p]))
    code = textwrap.dedent(
        """
        import warnings
        import concord
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = concord.make("CartPole-v1")
            second = concord.make("CartPole-v1")
        assert type(first) is type(second) is concord.VectorEnv
        assert len(caught) == 1 and caught[0].category is RuntimeWarning, [str(w.message) for w in caught]
        message = str(caught[0].message)
        assert "needs Gymnasium 1.1 or later" in message and "0.29.1" in message, message
        """
    )
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_help_documents_make():
    text = pydoc.render_doc(concord.make, renderer=pydoc.plaintext)
    assert "PyCapsule" not in text
    assert "make(env_id, num_envs=1, num_threads=1, seed=0, batch_size=None, *, gymnasium=None, render_mode=None, **env_options)" in text
    for word in ("num_threads:", "batch_size:", "gymnasium:", "Returns:", "gymnasium.vector.VectorEnv", "Raises:"):
        assert word in text
    assert "Gymnasium: where Gymnasium 1.1 or later is importable" in concord.__doc__


def test_bad_gymnasium_argument():
    with pytest.raises(ValueError, match="gymnasium must be None, True or False"):
        concord.make("CartPole-v1", gymnasium="yes")


# --- Gymnasium's VectorEnv ----------------------------------------------------------------------


def test_make_returns_gymnasiums_vector_env_with_gymnasiums_spaces(gym):
    envs = concord.make("CartPole-v1", num_envs=NUM_ENVS)
    ref = reference(gym)
    assert isinstance(envs, gym.vector.VectorEnv) and not isinstance(envs, gym.vector.SyncVectorEnv)
    assert envs.num_envs == ref.num_envs == NUM_ENVS
    for name in ("single_observation_space", "single_action_space", "observation_space", "action_space"):
        ours, theirs = getattr(envs, name), getattr(ref, name)
        assert type(ours) is type(theirs), name
        assert ours == theirs, (name, ours, theirs)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
    assert type(envs.single_observation_space) is gym.spaces.Box
    assert type(envs.single_action_space) is gym.spaces.Discrete
    assert type(envs.action_space) is gym.spaces.MultiDiscrete
    assert envs.metadata["autoreset_mode"] is gym.vector.AutoresetMode.SAME_STEP
    assert isinstance(ref.metadata["autoreset_mode"], gym.vector.AutoresetMode)
    assert envs.render_mode is None and envs.unwrapped is envs and not envs.closed
    assert envs.spec.id == "CartPole-v1" and envs.spec.kwargs["num_envs"] == NUM_ENVS
    assert envs.spec.max_episode_steps == ref.spec.max_episode_steps == 500
    assert envs.spec.reward_threshold == ref.spec.reward_threshold == 475.0
    assert repr(envs) == f"GymnasiumVectorEnv(CartPole-v1, num_envs={NUM_ENVS})"
    assert envs.num_threads == 1 and envs.env_id == "CartPole-v1" and not envs.is_async
    # Gymnasium's space methods work on them: seeding, sampling, membership.
    envs.action_space.seed(3)
    actions = envs.action_space.sample()
    assert actions.dtype == np.int64 and actions.shape == (NUM_ENVS,) and actions in envs.action_space
    envs.close()
    ref.close()


def test_gymnasium_keyword(gym):
    assert isinstance(concord.make("CartPole-v1", gymnasium=True), gym.vector.VectorEnv)
    native = concord.make("CartPole-v1", gymnasium=False)
    assert type(native) is concord.VectorEnv and isinstance(native.single_action_space, concord.Discrete)


def test_render_as_sync_vector_envs(gym):
    envs = concord.make("CartPole-v1", num_envs=2, render_mode="rgb_array")
    assert isinstance(envs, gym.vector.VectorEnv)
    assert envs.render_mode == "rgb_array" and envs.metadata["render_fps"] == 50
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 2 and frames[0].shape == (400, 600, 3) and frames[0].dtype == np.uint8


@pytest.mark.parametrize("same_step", [False, True])
def test_reset_and_step_have_sync_vector_envs_types(gym, same_step):
    envs = concord.make("CartPole-v1", num_envs=NUM_ENVS, seed=5)
    ref = reference(gym, same_step=same_step)
    for vec in (envs, ref):
        vec.action_space.seed(0)
    outputs = {}
    for name, vec in (("concord", envs), ("gymnasium", ref)):
        obs, info = vec.reset(seed=7)
        assert info == {}, name
        assert obs.shape == (NUM_ENVS, 4) and obs.dtype == np.float32 and obs in vec.observation_space, name
        for _ in range(30):
            obs, rewards, terminations, truncations, info = vec.step(vec.action_space.sample())
            outputs[name] = (obs, rewards, terminations, truncations)
        assert isinstance(info, dict)
    for ours, theirs in zip(outputs["concord"], outputs["gymnasium"]):
        assert type(ours) is type(theirs) and ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert outputs["concord"][1].dtype == np.float64  # rewards, as SyncVectorEnv gives them
    assert outputs["concord"][2].dtype == np.bool_ and outputs["concord"][3].dtype == np.bool_


def test_seeding(gym):
    envs = concord.make("CartPole-v1", num_envs=NUM_ENVS)
    first, _ = envs.reset(seed=3)
    assert envs.np_random_seed == 3
    again, _ = envs.reset(seed=np.int64(3))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, envs.reset(seed=4)[0])
    with pytest.raises(ValueError, match="per-env seed lists are not supported"):
        envs.reset(seed=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="options are not supported"):
        envs.reset(options={"reset_mask": np.ones(NUM_ENVS, dtype=bool)})


def cartpole_actions(obs, rng, controlled):
    """Envs in `controlled` balance the pole (their episodes reach the 500-step time limit);
    the others act at random (their episodes end early, terminated)."""
    balance = (obs[:, 2] * 10 + obs[:, 3] + obs[:, 0] * 0.1 + obs[:, 1] * 0.5 > 0).astype(np.int64)
    return np.where(controlled, balance, rng.integers(0, 2, size=len(obs)))


def test_lockstep_with_gymnasiums_same_step_cartpole(gym):
    """Same actions from the same states: Concord's env and Gymnasium's SyncVectorEnv (SAME_STEP,
    CartPole's double-precision physics) agree step by step on observations, rewards,
    terminations, truncations, the info layout, final_obs and RecordEpisodeStatistics. Gymnasium's
    envs are set to Concord's state (its float32 observation) before every step, since pole
    balancing amplifies a difference in the last bits to 1e-3 within a 500-step episode."""
    RecordEpisodeStatistics = gym.wrappers.vector.RecordEpisodeStatistics
    envs = RecordEpisodeStatistics(concord.make("CartPole-v1", num_envs=NUM_ENVS, seed=1))
    ref = RecordEpisodeStatistics(reference(gym, same_step=True))
    sync = ref.unwrapped
    controlled = np.array([True, True, False, False])
    rng = np.random.default_rng(0)

    def set_reference_states(obs):
        for i in range(NUM_ENVS):
            sync.envs[i].unwrapped.state = obs[i].astype(np.float64)

    obs, info = envs.reset(seed=2)
    ref_obs, ref_info = ref.reset(seed=2)
    assert info == ref_info == {}
    ends = {"terminated": 0, "truncated": 0}
    for step in range(1100):
        actions = cartpole_actions(obs, rng, controlled)
        set_reference_states(obs)
        obs, rewards, terminations, truncations, info = envs.step(actions)
        ref_obs, ref_rewards, ref_terminations, ref_truncations, ref_info = ref.step(actions)
        assert np.array_equal(terminations, ref_terminations), step
        assert np.array_equal(truncations, ref_truncations), step
        assert np.array_equal(rewards, ref_rewards) and rewards.dtype == ref_rewards.dtype, step
        assert list(info) == list(ref_info), (step, list(info), list(ref_info))
        done = terminations | truncations
        np.testing.assert_allclose(obs[~done], ref_obs[~done], rtol=1e-5, atol=1e-6)
        if done.any():
            for key in ("_final_obs", "_final_info", "_episode"):
                assert np.array_equal(info[key], done) and np.array_equal(ref_info[key], done), (step, key)
            assert info["final_obs"].dtype == ref_info["final_obs"].dtype == object
            assert info["final_info"] == ref_info["final_info"] == {}
            for i in range(NUM_ENVS):
                if done[i]:
                    assert info["final_obs"][i].dtype == ref_info["final_obs"][i].dtype == np.float32
                    np.testing.assert_allclose(info["final_obs"][i], ref_info["final_obs"][i], rtol=1e-5, atol=1e-6)
                else:
                    assert info["final_obs"][i] is None and ref_info["final_obs"][i] is None
            # Same-step autoreset: the returned rows of ended envs start new episodes.
            assert np.all(np.abs(obs[done]) <= 0.05) and np.all(np.abs(ref_obs[done]) <= 0.05)
            for key in ("r", "l"):
                assert np.array_equal(info["episode"][key][done], ref_info["episode"][key][done]), (step, key)
            ends["terminated"] += int(terminations.sum())
            ends["truncated"] += int(truncations.sum())
    assert ends["truncated"] >= 4 and ends["terminated"] >= 20, ends
    assert envs.episode_count == ref.episode_count
    assert list(envs.length_queue) == list(ref.length_queue)
    assert list(envs.return_queue) == list(ref.return_queue)
    if gymnasium_version(gym) >= (1, 4):
        # Gymnasium 1.4 fixed RecordEpisodeStatistics under SAME_STEP (Farama-Foundation/Gymnasium#1624).
        assert 500 in envs.length_queue and list(envs.return_queue) == list(map(float, envs.length_queue))


def cleanrl_style_rollouts(envs, gym, num_steps=128, num_iterations=6, seed=1):
    """A training loop's env handling as written for gymnasium.vector.SyncVectorEnv, after
    CleanRL's ppo.py (Gymnasium 1.x): RecordEpisodeStatistics, rollout buffers shaped by the
    spaces, done flags from terminations | truncations, episode logging from info["episode"], and
    DQN's real next observation, which depends on metadata["autoreset_mode"]."""
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    assert isinstance(envs.single_action_space, gym.spaces.Discrete), "only discrete action space is supported"
    same_step = envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    num_envs = envs.num_envs
    obs = np.zeros((num_steps, num_envs) + envs.single_observation_space.shape, dtype=np.float32)
    actions = np.zeros((num_steps, num_envs) + envs.single_action_space.shape, dtype=np.int64)
    rewards = np.zeros((num_steps, num_envs), dtype=np.float32)
    dones = np.zeros((num_steps, num_envs), dtype=np.float32)
    real_next_obs = np.zeros_like(obs)  # DQN's replay buffer: the observation each action led to
    terminated = np.zeros((num_steps, num_envs), dtype=bool)
    rng = np.random.default_rng(seed)
    logits_weight = rng.normal(size=(envs.single_observation_space.shape[0], int(envs.single_action_space.n)))
    episodes = []

    next_obs, _ = envs.reset(seed=seed)
    next_done = np.zeros(num_envs, dtype=np.float32)
    for iteration in range(num_iterations):
        for step in range(num_steps):
            obs[step] = next_obs
            dones[step] = next_done
            logits = next_obs @ logits_weight
            probs = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs /= probs.sum(axis=1, keepdims=True)
            action = (rng.random((num_envs, 1)) > np.cumsum(probs, axis=1)).sum(axis=1)
            actions[step] = action
            next_obs, reward, terminations, truncations, infos = envs.step(action)
            next_done = np.logical_or(terminations, truncations).astype(np.float32)
            rewards[step] = np.asarray(reward, dtype=np.float32).reshape(-1)
            terminated[step] = terminations
            real_next_obs[step] = next_obs
            if same_step and "final_obs" in infos:
                for idx in np.flatnonzero(infos["_final_obs"]):
                    real_next_obs[step, idx] = infos["final_obs"][idx]
            if "episode" in infos:
                for i in np.flatnonzero(infos["_episode"]):
                    episodes.append((float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i])))
        assert np.isfinite(obs).all()
    envs.close()
    return episodes, actions, rewards, dones, real_next_obs, terminated


def test_a_script_written_for_sync_vector_env_runs_unchanged(gym):
    results = {
        "concord": cleanrl_style_rollouts(concord.make("CartPole-v1", num_envs=NUM_ENVS), gym),
        "next_step": cleanrl_style_rollouts(reference(gym), gym),
        "same_step": cleanrl_style_rollouts(reference(gym, same_step=True), gym),
    }
    for name, (episodes, actions, rewards, dones, real_next_obs, terminated) in results.items():
        assert len(episodes) >= 20, name
        assert all(length >= 8 for _, length in episodes), (name, episodes)
        # CartPole pays 1 per step, so a return is its episode's length.
        assert all(ret == length for ret, length in episodes), (name, episodes)
        assert set(np.unique(actions)) == {0, 1} and set(np.unique(dones)) == {0.0, 1.0}, name
        # Where an action ended the episode, the observation it led to is the final one: the cart
        # or the pole beyond CartPole's limits (not the next episode's first observation).
        final = real_next_obs[terminated]
        assert len(final) >= 5 and np.all((np.abs(final[:, 0]) > 2.4) | (np.abs(final[:, 2]) > 0.2094)), name
        within = real_next_obs[~terminated]
        assert np.all((np.abs(within[:, 0]) <= 2.4) & (np.abs(within[:, 2]) <= 0.2095)), name
    assert np.all(results["concord"][2] == 1.0) and np.all(results["same_step"][2] == 1.0)  # no reset steps
    assert np.any(results["next_step"][2] == 0.0)  # NEXT_STEP's reset steps pay 0


def test_box_actions_and_vector_wrappers(gym):
    """Pendulum (Box actions) under the vector wrappers of a continuous-control script that
    Gymnasium allows in same-step mode (its observation wrappers refuse it: see below)."""
    wrappers = gym.wrappers.vector

    def wrap(vec):
        vec = wrappers.RescaleAction(vec, np.float32(-1), np.float32(1))
        vec = wrappers.ClipAction(vec)
        vec = wrappers.NormalizeReward(vec, gamma=0.99)
        return wrappers.TransformReward(vec, lambda r: np.clip(r, -10, 10))

    envs = concord.make("Pendulum-v1", num_envs=3, seed=0)
    ref = reference(gym, "Pendulum-v1", same_step=True, num_envs=3)
    for name in ("single_observation_space", "single_action_space", "observation_space", "action_space"):
        assert getattr(envs, name) == getattr(ref, name), name
    for name, vec in (("concord", envs), ("gymnasium", ref)):
        stats = wrappers.RecordEpisodeStatistics(vec)
        wrapped = wrap(stats)
        wrapped.reset(seed=1)
        wrapped.action_space.seed(1)
        truncated = 0
        for _ in range(450):
            obs, rewards, terminations, truncations, info = wrapped.step(wrapped.action_space.sample() * 3)
            assert obs.dtype == np.float32 and obs.shape == (3, 3) and rewards.dtype == np.float64, name
            assert not terminations.any(), name
            truncated += int(truncations.sum())
        assert truncated == 6 and stats.episode_count == 6, name  # Pendulum's 200-step limit, twice
        if gymnasium_version(gym) >= (1, 4):  # see test_lockstep_with_gymnasiums_same_step_cartpole
            assert list(stats.length_queue) == [200] * 6, name
        wrapped.close()
    assert envs.closed and ref.closed


def test_observation_wrappers_refuse_same_step_as_for_sync_vector_env(gym):
    """Gymnasium's vector observation wrappers accept only NEXT_STEP (or DISABLED) autoreset, for
    its own SyncVectorEnv(autoreset_mode=SAME_STEP) as for Concord's envs."""
    wrappers = gym.wrappers.vector
    for vec in (concord.make("CartPole-v1", num_envs=2), reference(gym, same_step=True, num_envs=2)):
        for wrapper in (wrappers.NormalizeObservation, wrappers.FlattenObservation):
            with pytest.raises((ValueError, AssertionError)):  # AssertionError before Gymnasium 1.4
                wrapper(vec)
        vec.close()


def test_minatar_observations_stay_uint8(gym):
    envs = concord.make("MinAtar/Breakout-v1", num_envs=2)
    space = envs.single_observation_space
    assert space == gym.spaces.Box(0, 1, (10, 10, 4), np.uint8)
    assert envs.observation_space == gym.spaces.Box(0, 1, (2, 10, 10, 4), np.uint8)
    obs, _ = envs.reset(seed=0)
    assert obs.dtype == np.uint8 and obs in envs.observation_space
    assert envs.single_action_space == gym.spaces.Discrete(3)


def test_async_mode(gym):
    envs = concord.make("CartPole-v1", num_envs=4, batch_size=2, seed=0)
    assert isinstance(envs, gym.vector.VectorEnv) and envs.is_async and envs.batch_size == 2
    obs, info = envs.reset()
    assert obs.shape == (2, 4) and info["env_id"].shape == (2,)
    ends = 0
    for _ in range(100):
        obs, rewards, terminations, truncations, info = envs.step(np.zeros(2, dtype=np.int64), env_id=info["env_id"])
        assert obs.shape == (2, 4) and rewards.dtype == np.float64
        if "final_obs" in info:
            assert "episode" not in info and info["final_obs"].dtype == object
            ends += int(info["_final_obs"].sum())
    assert ends > 0
    envs.send(np.zeros(2, dtype=np.int64), info["env_id"])
    obs, *_, info = envs.recv()
    assert obs.shape == (2, 4) and envs.num_in_flight == 2


def test_close(gym):
    with concord.make("CartPole-v1", num_envs=2) as envs:
        envs.reset(seed=0)
    assert envs.closed
    envs.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        envs.step(np.zeros(2, dtype=np.int64))


def test_python_env_with_gymnasiums_spaces(gym):
    """Gymnasium's own CartPole class registered as a Concord env, made as Gymnasium's vector env."""
    from gymnasium.envs.classic_control import CartPoleEnv

    concord.register_env("test/GymnasiumCartPole-v1", CartPoleEnv, max_episode_steps=500, reward_threshold=475.0)
    envs = concord.make("test/GymnasiumCartPole-v1", num_envs=3)
    assert envs.single_observation_space == CartPoleEnv().observation_space
    assert envs.spec.max_episode_steps == 500
    obs, _ = envs.reset(seed=0)
    for _ in range(60):
        obs, rewards, terminations, truncations, info = envs.step(envs.action_space.sample())
    assert obs in envs.observation_space
    envs.close()
