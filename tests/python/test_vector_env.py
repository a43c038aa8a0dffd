"""The Python module `concord`: Gymnasium 1.x vector semantics over Concord's engine.

Run with the module on PYTHONPATH (ctest `python_vector_env` sets it), e.g.
    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python
"""

import threading

import numpy as np
import pytest

import concord

# MuJoCo/Custom-v0 has no model of its own (env.model_file is required): test_mujoco.py makes it with one.
ALL_ENVS = [env_id for env_id in concord.list_envs() if env_id != "MuJoCo/Custom-v0"]
MINATAR_ENVS = [env_id for env_id in ALL_ENVS if env_id.startswith("MinAtar/")]


def make(*args, **kwargs):
    """concord.make() returning Concord's own VectorEnv, the subject of these tests, also where
    Gymnasium is importable (make() then returns Gymnasium's: test_gymnasium.py)."""
    return concord.make(*args, gymnasium=False, **kwargs)


def random_actions(envs, rng):
    space = envs.single_action_space
    if isinstance(space, concord.Discrete):
        return rng.integers(0, int(space.n), size=envs.num_envs)
    return rng.uniform(space.low, space.high, size=(envs.num_envs,) + space.shape).astype(np.float32)


def rollout(envs, steps, seed, actions_rng_seed=0):
    rng = np.random.default_rng(actions_rng_seed)
    observations = [envs.reset(seed=seed)[0]]
    for _ in range(steps):
        observations.append(envs.step(random_actions(envs, rng))[0])
    return np.stack(observations)


# --- Registry and spaces -----------------------------------------------------------------------


def test_list_envs_includes_classic_control_and_minatar():
    assert "CartPole-v1" in ALL_ENVS
    assert "MinAtar/Breakout-v1" in ALL_ENVS
    assert len(MINATAR_ENVS) == 10
    assert len(set(ALL_ENVS)) == len(ALL_ENVS)


@pytest.mark.parametrize("env_id", ALL_ENVS)
def test_shapes_and_dtypes(env_id):
    with make(env_id, num_envs=3, seed=1) as envs:
        single_obs = envs.single_observation_space
        assert isinstance(single_obs, concord.Box)
        assert envs.observation_space.shape == (3,) + single_obs.shape
        assert envs.observation_space.dtype == single_obs.dtype
        if isinstance(envs.single_action_space, concord.Discrete):
            assert isinstance(envs.action_space, concord.MultiDiscrete)
            assert list(envs.action_space.nvec) == [int(envs.single_action_space.n)] * 3
        else:
            assert envs.action_space.shape == (3,) + envs.single_action_space.shape

        obs, info = envs.reset()
        assert obs.shape == (3,) + single_obs.shape and obs.dtype == single_obs.dtype
        # A MuJoCo task's reset info holds its positions (Humanoid's: and tendons), as Gymnasium
        # v5's (test_mujoco.py).
        positions = {"x_position", "y_position", "distance_from_origin", "z_distance_from_origin", "tendon_length",
                     "tendon_velocity"}
        assert set(info) <= positions | {"_" + key for key in positions}
        assert envs.observation_space.contains(obs)
        for _ in range(5):
            obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())
            assert obs.shape == (3,) + single_obs.shape and obs.dtype == single_obs.dtype
            assert rewards.shape == (3,) and rewards.dtype == np.float32
            assert terminated.shape == (3,) and terminated.dtype == np.bool_
            assert truncated.shape == (3,) and truncated.dtype == np.bool_
            assert all(single_obs.contains(row) for row in obs)


@pytest.mark.parametrize("env_id", MINATAR_ENVS)
def test_minatar_observations_stay_uint8(env_id):
    envs = make(env_id, num_envs=2)
    assert envs.single_observation_space.dtype == np.uint8
    obs, _ = envs.reset(seed=0)
    assert obs.dtype == np.uint8 and set(np.unique(obs)) <= {0, 1}
    obs, *_ = envs.step(np.zeros(2, dtype=np.int64))
    assert obs.dtype == np.uint8
    assert repr(envs.single_observation_space).endswith("uint8)")
    envs.close()


def test_space_objects():
    envs = make("CartPole-v1", num_envs=4)
    assert repr(envs.single_action_space) == "Discrete(2)"
    assert envs.single_action_space.dtype == np.int64 and envs.single_action_space.shape == ()
    assert repr(envs.action_space) == "MultiDiscrete([2 2 2 2])"
    assert envs.action_space.dtype == np.int64 and envs.action_space.shape == (4,)
    assert repr(envs.single_observation_space).startswith("Box([-4.8")
    low, high = envs.single_observation_space.low, envs.single_observation_space.high
    assert low.dtype == np.float32 and low.shape == (4,) and np.isinf(high[1])
    assert envs.observation_space.low.shape == (4, 4)
    assert envs.single_action_space == make("CartPoleSwingUp-v0").single_action_space
    assert envs.single_action_space != make("Acrobot-v1").single_action_space  # Discrete(2) vs (3)
    assert 1 in envs.single_action_space and 2 not in envs.single_action_space
    envs.action_space.seed(7)
    first = envs.action_space.sample()
    envs.action_space.seed(7)
    assert np.array_equal(first, envs.action_space.sample())
    assert envs.action_space.contains(first)

    pendulum = make("Pendulum-v1", num_envs=2)
    assert repr(pendulum.single_action_space) == "Box(-2.0, 2.0, (1,), float32)"
    sample = pendulum.action_space.sample()
    assert sample.shape == (2, 1) and sample.dtype == np.float32 and np.all(np.abs(sample) <= 2)

    breakout = make("MinAtar/Breakout-v1")
    assert repr(breakout.single_observation_space) == "Box(0, 1, (10, 10, 4), uint8)"
    assert breakout.single_observation_space.low.dtype == np.uint8
    assert breakout.single_observation_space.sample().dtype == np.uint8


def test_metadata_and_attributes():
    envs = make("CartPole-v1", num_envs=2, num_threads=2)
    assert str(envs.metadata["autoreset_mode"]) in ("SameStep", "AutoresetMode.SAME_STEP")
    assert envs.num_envs == 2 and envs.num_threads == 2 and not envs.is_async
    assert envs.max_episode_steps == 500 and envs.env_id == "CartPole-v1"
    assert repr(envs) == "VectorEnv('CartPole-v1', num_envs=2, num_threads=2)"
    assert envs.unwrapped is envs and envs.render_mode is None
    envs.close()
    assert envs.closed


# --- Seeding -----------------------------------------------------------------------------------


def test_same_seed_same_trajectory_other_seed_other_trajectory():
    a = rollout(make("CartPole-v1", num_envs=4), 60, seed=3)
    b = rollout(make("CartPole-v1", num_envs=4), 60, seed=3)
    c = rollout(make("CartPole-v1", num_envs=4), 60, seed=4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a[0], c[0])
    # Envs within one batch get different streams.
    assert not np.array_equal(a[0][0], a[0][1])


def test_reset_seed_repeats_and_make_seed_is_the_first_reset():
    envs = make("CartPole-v1", num_envs=3, seed=11)
    first, _ = envs.reset()
    again, _ = envs.reset(seed=11)
    assert np.array_equal(first, again)
    unseeded, _ = envs.reset()  # continues each env's stream
    assert not np.array_equal(unseeded, first)
    assert np.array_equal(envs.reset(seed=np.int64(11))[0], first)


def test_trajectory_does_not_depend_on_num_threads():
    one = rollout(make("MinAtar/Breakout-v1", num_envs=16, num_threads=1), 80, seed=5)
    two = rollout(make("MinAtar/Breakout-v1", num_envs=16, num_threads=2), 80, seed=5)
    assert np.array_equal(one, two)


# --- Autoreset, termination and truncation ----------------------------------------------------


def test_termination_final_observation_and_episode_statistics():
    envs = make("CartPole-v1", num_envs=2, seed=0)
    envs.reset()
    for step in range(1, 100):
        obs, rewards, terminated, truncated, info = envs.step(np.zeros(2, dtype=np.int64))
        if terminated.any():
            break
        assert "final_obs" not in info and "episode" not in info
    assert not truncated.any()
    done = terminated
    assert np.array_equal(info["_final_obs"], done) and np.array_equal(info["_episode"], done)
    assert np.array_equal(info["_final_info"], done) and info["final_info"] == {}
    final = info["final_obs"]
    assert final.shape == obs.shape and final.dtype == np.float32
    for i in np.flatnonzero(done):
        # CartPole ends when the pole passes 12 degrees or the cart leaves [-2.4, 2.4].
        assert abs(final[i][2]) > 0.2094 or abs(final[i][0]) > 2.4
        # Same-step autoreset: the returned observation already starts the next episode.
        assert np.all(np.abs(obs[i]) <= 0.05)
        assert info["episode"]["l"][i] == step and info["episode"]["r"][i] == pytest.approx(step)
        assert rewards[i] == 1.0
    for i in np.flatnonzero(~done):
        assert np.all(final[i] == 0) and info["episode"]["l"][i] == 0
    assert info["episode"]["r"].dtype == np.float32 and info["episode"]["l"].dtype == np.int32


def test_truncation_at_the_time_limit():
    envs = make("MountainCar-v0", num_envs=3, seed=0)
    envs.reset()
    noop = np.ones(3, dtype=np.int64)  # MountainCar's "don't accelerate" never reaches the flag
    for step in range(1, 201):
        obs, rewards, terminated, truncated, info = envs.step(noop)
        if step < 200:
            assert not truncated.any() and "final_obs" not in info
    assert truncated.all() and not terminated.any()
    assert info["_final_obs"].all()
    assert np.array_equal(info["episode"]["l"], [200, 200, 200])
    assert np.allclose(info["episode"]["r"], -200.0)
    # The next episode started: one more step is its first.
    _, _, _, truncated, info = envs.step(noop)
    assert not truncated.any() and "final_obs" not in info


def test_box_actions_truncate_pendulum():
    envs = make("Pendulum-v1", num_envs=2)
    envs.reset(seed=1)
    for _ in range(200):
        _, rewards, terminated, truncated, info = envs.step(np.zeros((2, 1), dtype=np.float64))
    assert truncated.all() and not terminated.any() and rewards.dtype == np.float32


def test_returned_arrays_are_copies():
    envs = make("CartPole-v1", num_envs=2)
    first, _ = envs.reset(seed=0)
    kept = first.copy()
    envs.step(np.zeros(2, dtype=np.int64))
    assert np.array_equal(first, kept)
    first[:] = 99  # writable and ours
    second, *_ = envs.step(np.zeros(2, dtype=np.int64))
    assert not np.any(second == 99)


# --- Env options -------------------------------------------------------------------------------


def test_minatar_options_are_accepted():
    sticky = rollout(make("MinAtar/Breakout-v1", num_envs=4, sticky_action_probability=0.0), 50, seed=2)
    default = rollout(make("MinAtar/Breakout-v1", num_envs=4), 50, seed=2)
    assert sticky.shape == default.shape
    envs = make("MinAtar/Breakout-v1", difficulty_ramping=False, sticky_action_probability=None)
    envs.reset()


def test_env_options_refused_with_the_engines_message():
    with pytest.raises(ValueError, match="env.sticky_action_probability is set, but CartPole-v1 has no such setting"):
        make("CartPole-v1", sticky_action_probability=0.1)
    with pytest.raises(ValueError, match="must lie in"):
        make("MinAtar/Breakout-v1", sticky_action_probability=1.5)
    with pytest.raises(ValueError, match="unknown env option 'frameskip'"):
        make("MinAtar/Breakout-v1", frameskip=4)
    with pytest.raises(ValueError, match="difficulty_ramping must be a bool"):
        make("MinAtar/Breakout-v1", difficulty_ramping="yes")


# --- Bad input ---------------------------------------------------------------------------------


@pytest.fixture
def cartpole():
    envs = make("CartPole-v1", num_envs=3)
    envs.reset(seed=0)
    yield envs
    envs.close()


def test_unknown_env_id():
    with pytest.raises(ValueError, match=r"unknown environment 'Nope-v0' \(known: CartPole-v1, "):
        make("Nope-v0")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_envs": 0}, "num_envs must be >= 1"),
        ({"num_threads": 0}, "num_threads must be >= 1"),
        ({"num_envs": 2, "batch_size": 3}, "batch_size must be in"),
        ({"seed": -1}, "seed must be None or an int"),
    ],
)
def test_bad_config(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make("CartPole-v1", **kwargs)


def test_actions_of_the_wrong_shape(cartpole):
    with pytest.raises(ValueError, match=r"actions must have shape \(3,\) for 3 envs with action space Discrete\(2\), got \(2,\)"):
        cartpole.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match=r"got \(3, 1\)"):
        cartpole.step(np.zeros((3, 1), dtype=np.int64))
    with pytest.raises(ValueError, match=r"got \(\)"):
        cartpole.step(0)


def test_actions_of_the_wrong_dtype(cartpole):
    with pytest.raises(ValueError, match="must be integers, got dtype float32"):
        cartpole.step(np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="must be integers"):
        cartpole.step(["a", "b", "c"])
    pendulum = make("Pendulum-v1", num_envs=2)
    pendulum.reset()
    with pytest.raises(ValueError, match="must be floats, got dtype int64"):
        pendulum.step(np.zeros((2, 1), dtype=np.int64))
    with pytest.raises(ValueError, match=r"shape \(2, 1\)"):
        pendulum.step(np.zeros(2, dtype=np.float32))


def test_actions_out_of_range(cartpole):
    with pytest.raises(ValueError, match=r"action 5 for env 1 is outside Discrete\(2\)"):
        cartpole.step(np.array([0, 5, 0]))
    with pytest.raises(ValueError, match=r"action -1 for env 0"):
        cartpole.step([-1, 0, 0])
    # Refused before any env stepped: the envs go on as if nothing happened.
    obs, *_ = cartpole.step([0, 1, 0])
    assert obs.shape == (3, 4)


def test_lists_of_ints_are_actions(cartpole):
    obs, rewards, *_ = cartpole.step([1, 1, 0])
    assert rewards.shape == (3,)


def test_step_before_reset():
    envs = make("CartPole-v1", num_envs=2)
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        envs.step(np.zeros(2, dtype=np.int64))


def test_calls_after_close(cartpole):
    cartpole.close()
    cartpole.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        cartpole.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(RuntimeError, match="closed"):
        cartpole.reset()
    assert cartpole.single_observation_space.shape == (4,)  # spaces stay readable


def test_bad_reset_arguments(cartpole):
    with pytest.raises(ValueError, match="per-env seed lists are not supported"):
        cartpole.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="seed must be None or an int"):
        cartpole.reset(seed=2**64)
    with pytest.raises(ValueError, match="options are not supported"):
        cartpole.reset(options={"reset_mask": np.ones(3, dtype=bool)})
    cartpole.reset(options={})


def test_async_calls_in_sync_mode(cartpole):
    with pytest.raises(RuntimeError, match="needs async mode"):
        cartpole.send(np.zeros(3, dtype=np.int64))
    with pytest.raises(RuntimeError, match="needs async mode"):
        cartpole.recv()
    with pytest.raises(ValueError, match="env_id is for async mode"):
        cartpole.step(np.zeros(3, dtype=np.int64), env_id=np.arange(3))


def test_threads_can_step_their_own_envs_concurrently():
    results = {}

    def run(name):
        results[name] = rollout(make("MinAtar/Breakout-v1", num_envs=64), 100, seed=9)

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert np.array_equal(results["a"], results["b"])


# --- Async (EnvPool-style send/recv) -----------------------------------------------------------


def policy(env, t, n):
    """A deterministic action for env `env`'s t-th step, so sync and async runs can be compared."""
    return (env * 7 + t * 3 + (t // 5)) % n


@pytest.mark.parametrize("num_threads", [1, 2])
def test_async_matches_sync_per_env(num_threads):
    num_envs, batch_size, steps = 8, 3, 40
    env_id = "MinAtar/Breakout-v1"
    n = 3

    sync = make(env_id, num_envs=num_envs, seed=4)
    obs, _ = sync.reset()
    expected = {env: [obs[env]] for env in range(num_envs)}
    for t in range(steps):
        obs, *_ = sync.step(np.array([policy(env, t, n) for env in range(num_envs)]))
        for env in range(num_envs):
            expected[env].append(obs[env])

    envs = make(env_id, num_envs=num_envs, seed=4, batch_size=batch_size, num_threads=num_threads)
    assert envs.is_async and envs.batch_size == batch_size
    assert repr(envs).endswith(f"batch_size={batch_size})")
    # Each env's observations in the order they arrive: its reset, then one per step it was sent.
    seen = {env: [] for env in range(num_envs)}
    obs, info = envs.reset()
    ids = info["env_id"]
    assert obs.shape == (batch_size, 10, 10, 4) and obs.dtype == np.uint8 and ids.dtype == np.int32
    for row, env in enumerate(ids):
        seen[env].append(obs[row])
    while min(len(v) for v in seen.values()) <= steps:
        envs.send(np.array([policy(env, len(seen[env]) - 1, n) for env in ids]), ids)
        obs, rewards, terminated, truncated, info = envs.recv()
        ids = info["env_id"]
        assert len(ids) == batch_size and len(set(ids.tolist())) == batch_size
        assert rewards.shape == (batch_size,) and terminated.dtype == np.bool_
        for row, env in enumerate(ids):
            seen[env].append(obs[row])
    # An env's trajectory depends only on the seed and its own actions, not on arrival order.
    for env in range(num_envs):
        for t in range(steps + 1):
            assert np.array_equal(seen[env][t], expected[env][t]), (env, t)


def test_async_step_and_bad_input():
    envs = make("CartPole-v1", num_envs=4, batch_size=2)
    with pytest.raises(RuntimeError, match=r"call async_reset\(\) first"):
        envs.send(np.zeros(2, dtype=np.int64), np.array([0, 1]))
    obs, info = envs.reset(seed=1)
    ids = info["env_id"]
    obs, rewards, terminated, truncated, info = envs.step(np.zeros(2, dtype=np.int64), env_id=ids)
    assert obs.shape == (2, 4) and info["env_id"].shape == (2,)
    # Two resets were still in flight; two steps went out and two results came back.
    assert envs.num_in_flight == 2
    in_flight = sorted(set(range(4)) - set(info["env_id"].tolist()))
    with pytest.raises(RuntimeError, match="already in flight"):
        envs.send(np.zeros(1, dtype=np.int64), np.array([in_flight[0]]))
    with pytest.raises(ValueError, match=r"env id 4 is outside \[0, 4\)"):
        envs.send(np.zeros(1, dtype=np.int64), np.array([4]))
    with pytest.raises(ValueError, match=r"outside Discrete\(2\)"):
        envs.send(np.array([2]), info["env_id"][:1])
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        envs.send(np.zeros(3, dtype=np.int64), info["env_id"])
    obs, *_, info = envs.recv()  # the two remaining results
    assert envs.num_in_flight == 0
    with pytest.raises(RuntimeError, match="only 0 envs are in flight, fewer than batch_size=2"):
        envs.recv()
    envs.async_reset(seed=1)
    assert envs.num_in_flight == 4
    with pytest.raises(RuntimeError, match="still in flight"):
        envs.async_reset()
    envs.close()
    with pytest.raises(RuntimeError, match="closed"):
        envs.recv()


def test_async_final_observations():
    envs = make("CartPole-v1", num_envs=4, batch_size=2, seed=0)
    obs, info = envs.reset()
    ends = 0
    for _ in range(200):
        ids = info["env_id"]
        obs, rewards, terminated, truncated, info = envs.step(np.zeros(2, dtype=np.int64), env_id=ids)
        if "final_obs" in info:
            mask = info["_final_obs"]
            assert np.array_equal(mask, terminated | truncated)
            assert np.all(np.abs(obs[mask]) <= 0.05)
            assert np.all(info["episode"]["l"][mask] > 0)
            ends += int(mask.sum())
    assert ends > 0


# --- render() -----------------------------------------------------------------------------------


def test_render_draws_each_env_from_its_latest_observation():
    envs = make("CartPole-v1", num_envs=3, seed=5, render_mode="rgb_array")
    assert envs.render_mode == "rgb_array"
    assert envs.metadata["render_modes"] == ["rgb_array"] and envs.metadata["render_fps"] == 50
    with pytest.raises(RuntimeError, match=r"render\(\): call reset\(\) first"):
        envs.render()
    envs.reset(seed=1)
    for _ in range(5):
        obs, *_ = envs.step(np.array([1, 0, 1]))
    frames = envs.render()
    assert isinstance(frames, tuple) and len(frames) == 3
    for i, frame in enumerate(frames):
        assert frame.shape == (400, 600, 3) and frame.dtype == np.uint8
        # Gymnasium's picture: white, the black 50x30 cart centred at x * 125 + 300, 100 pixels up.
        cart = int(round(obs[i, 0] * 125 + 300))
        assert frame[5, 5].tolist() == [255, 255, 255]
        assert frame[400 - 100 + 10, cart].tolist() == [0, 0, 0]
        assert frame[400 - 100 + 10, cart + 40].tolist() == [255, 255, 255]
    assert not np.array_equal(frames[0], frames[1])  # each env its own picture


def test_render_in_async_mode_and_minatar():
    envs = make("MinAtar/Breakout-v1", num_envs=4, batch_size=2, seed=2, render_mode="rgb_array")
    envs.reset()
    envs.step(np.zeros(2, np.int64), env_id=np.array([0, 1]))
    frames = envs.render()
    assert len(frames) == 4 and frames[0].shape == (320, 320, 3)
    # Breakout's bricks (its highest channel) fill rows 1-3; rows 1 and 2 are whole after a step.
    brick = frames[0][1 * 32 + 16, 16]
    assert brick.tolist() != [0, 0, 0]
    assert (frames[0][32:96] == brick).all()


def test_render_refusals():
    with pytest.raises(RuntimeError, match=r"render_mode='rgb_array'"):
        envs = make("CartPole-v1")
        envs.reset()
        envs.render()
    assert make("CartPole-v1").metadata["render_modes"] == []
    with pytest.raises(ValueError, match=r"render_mode must be None or 'rgb_array', got 'human'"):
        make("CartPole-v1", render_mode="human")
    with pytest.raises(ValueError, match=r"DeepSea5-v0 cannot be rendered"):
        make("DeepSea5-v0", render_mode="rgb_array")


def test_render_mujoco_draws_each_env_from_its_physics():
    envs = make("MuJoCo/Hopper-v5", num_envs=2, seed=3, render_mode="rgb_array")
    assert envs.metadata["render_fps"] == 125  # Gymnasium's: 1 / dt, dt = 0.002 x 4
    envs.reset(seed=1)
    first = envs.render()
    assert len(first) == 2 and first[0].shape == (480, 480, 3) and first[0].dtype == np.uint8
    assert np.array_equal(envs.render()[0], first[0])  # drawn from the state kept at the reset
    for _ in range(10):
        envs.step(np.array([[1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]], dtype=np.float32))
    later = envs.render()
    assert not np.array_equal(later[0], first[0])
    assert not np.array_equal(later[0], later[1])  # each env its own picture


def test_render_mujoco_async_before_a_first_result():
    envs = make("MuJoCo/InvertedPendulum-v5", num_envs=2, batch_size=1, seed=0, render_mode="rgb_array")
    _, info = envs.reset()
    frames = envs.render()
    shown = int(info["env_id"][0])
    assert frames[shown].any()
    assert not frames[1 - shown].any()  # no recv() has returned that env yet: black
