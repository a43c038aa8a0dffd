"""The MuJoCo tasks from Python: concord.make("MuJoCo/...") steps them in the vector engine, with
Gymnasium v5's spaces, and takes their env options as keywords."""

import numpy as np
import pytest

import concord


def make(env_id, **kwargs):
    return concord.make(env_id, gymnasium=False, **kwargs)


def test_half_cheetah_steps_as_a_vector_env():
    with make("MuJoCo/HalfCheetah-v5", num_envs=4, num_threads=2, seed=3) as envs:
        assert "MuJoCo/HalfCheetah-v5" in concord.list_envs()
        assert envs.single_observation_space.shape == (17,)
        assert envs.single_action_space.shape == (6,)
        np.testing.assert_array_equal(envs.single_action_space.low, -np.ones(6, np.float32))
        assert envs.max_episode_steps == 1000
        obs, _ = envs.reset(seed=1)
        assert obs.shape == (4, 17) and obs.dtype == np.float32
        rng = np.random.default_rng(0)
        for _ in range(20):
            obs, rewards, terminated, truncated, _ = envs.step(rng.uniform(-1, 1, (4, 6)).astype(np.float32))
            assert np.isfinite(obs).all() and np.isfinite(rewards).all()
            assert not terminated.any()


def test_same_seed_same_steps():
    def rollout():
        with make("MuJoCo/Hopper-v5", num_envs=2, seed=5) as envs:
            out = [envs.reset()[0]]
            for _ in range(10):
                out.append(envs.step(np.full((2, 3), 0.3, np.float32))[0])
            return np.stack(out)

    np.testing.assert_array_equal(rollout(), rollout())


def test_options_reach_the_task():
    with make("MuJoCo/HalfCheetah-v5", exclude_current_positions_from_observation=False, frame_skip=1) as envs:
        assert envs.single_observation_space.shape == (18,)
    with make("MuJoCo/Hopper-v5", healthy_z_range=(0.5, float("inf")), reset_noise_scale=0.0) as envs:
        first, _ = envs.reset(seed=0)
        again, _ = envs.reset(seed=1)
        np.testing.assert_array_equal(first, again)  # no reset noise: every start is qpos0


def test_bad_options_and_model_files_are_one_line_errors():
    with pytest.raises(ValueError, match="healthy_z_range must be a pair"):
        make("MuJoCo/Hopper-v5", healthy_z_range=0.7)
    with pytest.raises(ValueError, match="frame_skip must be an int"):
        make("MuJoCo/Hopper-v5", frame_skip=0)
    with pytest.raises(ValueError, match="has no such setting"):
        make("MuJoCo/InvertedPendulum-v5", ctrl_cost_weight=0.1)
    with pytest.raises(ValueError, match=r"MuJoCo model file '/nonexistent\.xml': "):
        make("MuJoCo/Hopper-v5", model_file="/nonexistent.xml")


def test_reacher_ant_humanoid_and_custom_models_take_their_options():
    with make("MuJoCo/Reacher-v5", reward_dist_weight=2.0, reward_control_weight=0.0) as envs:
        assert envs.single_observation_space.shape == (10,) and envs.max_episode_steps == 50
        envs.reset(seed=1)
        # The distance term alone: the fingertip's offset from the target ends the observation.
        obs, rewards, _, _, _ = envs.step(np.ones((1, 2), np.float32))
        np.testing.assert_allclose(rewards[0], -2.0 * np.hypot(*obs[0, 8:10]), rtol=1e-5)
    with make("MuJoCo/Ant-v5") as envs:
        assert envs.single_observation_space.shape == (105,)
    with make("MuJoCo/Ant-v5", include_cfrc_ext_in_observation=False, contact_force_range=(-2, 2)) as envs:
        assert envs.single_observation_space.shape == (27,)
    with make("MuJoCo/Humanoid-v5", contact_cost_range=(0.0, 5.0)) as envs:
        assert envs.single_observation_space.shape == (348,) and envs.single_action_space.shape == (17,)
    with make("MuJoCo/Humanoid-v5", include_cinert_in_observation=False, include_cfrc_ext_in_observation=False) as envs:
        assert envs.single_observation_space.shape == (348 - 130 - 78,)
    with make("MuJoCo/HumanoidStandup-v5", uph_cost_weight=0.0, impact_cost_weight=0.0, impact_cost_range=(0, 1),
              include_cvel_in_observation=False, include_qfrc_actuator_in_observation=False) as envs:
        assert envs.single_observation_space.shape == (348 - 78 - 17,)
        envs.reset(seed=3)
        # Without the height and impact terms the reward is 1 - 0.1 sum(a^2).
        _, rewards, _, _, _ = envs.step(np.full((1, 17), 0.2, np.float32))
        np.testing.assert_allclose(rewards[0], 1.0 - 0.1 * 17 * 0.04, rtol=1e-5)
    with make("MuJoCo/Custom-v0", model_file=concord_model("hopper.xml"), forward_body="torso") as envs:
        assert envs.single_observation_space.shape == (12,) and envs.single_action_space.shape == (3,)
        envs.reset(seed=2)
        assert np.isfinite(envs.step(np.zeros((1, 3), np.float32))[1]).all()
    with pytest.raises(ValueError, match="has no sensors"):
        make("MuJoCo/Custom-v0", model_file=concord_model("hopper.xml"), observe_sensors=True)
    with pytest.raises(ValueError, match="env.model_file is required"):
        make("MuJoCo/Custom-v0")
    with pytest.raises(ValueError, match="forward_body must be a str"):
        make("MuJoCo/Custom-v0", forward_body=3)


def concord_model(name):
    import pathlib

    return str(pathlib.Path(__file__).resolve().parents[2] / "assets" / "mujoco" / name)


TERMS = ("x_position", "x_velocity", "reward_forward", "reward_ctrl", "reward_survive", "reward_contact")


def step_terms(info):
    return {key for key in TERMS if key in info}


def test_locomotion_step_info_holds_gymnasiums_terms():
    # HalfCheetah-v5's info: x_position (qpos[0], which the observation holds when it keeps the
    # positions), x_velocity, reward_forward, reward_ctrl; the reward is their sum.
    with make("MuJoCo/HalfCheetah-v5", num_envs=3, seed=1, forward_reward_weight=2.0,
              exclude_current_positions_from_observation=False) as envs:
        obs, info = envs.reset(seed=4)
        assert step_terms(info) == {"x_position"} and info["_x_position"].all()
        np.testing.assert_allclose(info["x_position"], obs[:, 0], rtol=1e-6, atol=1e-7)
        rng = np.random.default_rng(1)
        for _ in range(5):
            actions = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
            obs, rewards, _, _, info = envs.step(actions)
            assert step_terms(info) == {"x_position", "x_velocity", "reward_forward", "reward_ctrl"}
            for key in step_terms(info):
                assert info[key].dtype == np.float64 and info["_" + key].all()
            np.testing.assert_allclose(info["x_position"], obs[:, 0], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(info["reward_forward"], 2.0 * info["x_velocity"])
            np.testing.assert_allclose(info["reward_ctrl"], -0.1 * (actions.astype(np.float64) ** 2).sum(1), rtol=1e-12)
            np.testing.assert_allclose(rewards, info["reward_forward"] + info["reward_ctrl"], rtol=1e-5, atol=1e-5)


STEP_TERMS = {"x_velocity", "reward_forward", "reward_ctrl", "reward_survive"}


def test_an_ended_episodes_terms_are_in_final_info():
    # Same-step auto-reset, as Gymnasium's SyncVectorEnv: an env that ended has its reset's info
    # (x_position only) in info and the ended step's terms in info["final_info"].
    with make("MuJoCo/Hopper-v5", num_envs=4, seed=2, exclude_current_positions_from_observation=False) as envs:
        envs.reset(seed=3)
        rng = np.random.default_rng(2)
        endings = 0
        for _ in range(200):
            obs, rewards, terminated, truncated, info = envs.step(rng.uniform(-1, 1, (4, 3)).astype(np.float32))
            ended = terminated | truncated
            live = ~ended
            # A key is there when some env's step (or reset: x_position) gave it.
            assert step_terms(info) == {"x_position"} | (STEP_TERMS if live.any() else set())
            assert info["_x_position"].all()
            np.testing.assert_allclose(info["x_position"], obs[:, 0], rtol=1e-6, atol=1e-7)  # after the reset
            if live.any():
                for key in STEP_TERMS:
                    np.testing.assert_array_equal(info["_" + key], live)
                np.testing.assert_allclose(
                    rewards[live],
                    (info["reward_forward"] + info["reward_ctrl"] + info["reward_survive"])[live], rtol=1e-5, atol=1e-5)
            if not ended.any():
                assert "final_info" not in info or not info["final_info"]
                continue
            endings += int(ended.sum())
            final = info["final_info"]
            assert step_terms(final) == {"x_position"} | STEP_TERMS
            for key in step_terms(final):
                np.testing.assert_array_equal(final["_" + key], ended)
            np.testing.assert_allclose(
                rewards[ended],
                (final["reward_forward"] + final["reward_ctrl"] + final["reward_survive"])[ended], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(final["x_position"][ended], info["final_obs"][ended, 0], rtol=1e-6, atol=1e-7)
            # A terminated Hopper is unhealthy: no survival reward on its last step.
            assert (final["reward_survive"][terminated] == 0.0).all()
        assert endings >= 4


def test_ant_humanoid_and_async_envs_carry_their_terms():
    with make("MuJoCo/Ant-v5", num_envs=2) as envs:
        envs.reset(seed=0)
        _, rewards, _, _, info = envs.step(np.full((2, 8), 0.5, np.float32))
        assert step_terms(info) == set(TERMS)
        np.testing.assert_allclose(
            rewards, sum(info[key] for key in TERMS if key.startswith("reward_")), rtol=1e-5, atol=1e-5)
    with make("MuJoCo/Swimmer-v5", num_envs=4, batch_size=2, seed=6) as envs:
        envs.async_reset(seed=1)
        for _ in range(2):  # the reset's rows hold what a reset's info holds
            info = envs.recv()[4]
            assert step_terms(info) == {"x_position"} and info["_x_position"].all()
            envs.send(np.zeros((2, 2), np.float32), info["env_id"])
        _, rewards, _, _, info = envs.recv()
        assert step_terms(info) == {"x_position", "x_velocity", "reward_forward", "reward_ctrl"}
        np.testing.assert_allclose(rewards, info["reward_forward"] + info["reward_ctrl"], rtol=1e-5, atol=1e-5)


def test_other_envs_carry_no_step_terms():
    for env_id, actions in (("CartPole-v1", np.zeros(2, np.int64)),
                            ("MuJoCo/SparseHalfCheetah-v0", np.zeros((2, 6), np.float32))):
        with make(env_id, num_envs=2) as envs:
            _, info = envs.reset(seed=0)
            assert not step_terms(info)
            assert not step_terms(envs.step(actions)[4])


POSITIONS = ("x_position", "y_position", "distance_from_origin", "z_distance_from_origin")
TENDONS = ("tendon_length", "tendon_velocity")  # Humanoid's and HumanoidStandup's arrays


def run_steps(env_id, num_envs, steps, seed, **options):
    """Steps `env_id` with random actions; yields (actions, rewards, info, ended) per step, info
    keeping only the rows that did not end (their terms are this step's)."""
    with make(env_id, num_envs=num_envs, seed=seed, **options) as envs:
        obs, info = envs.reset(seed=seed)
        yield None, None, obs, info, np.zeros(num_envs, bool)
        rng = np.random.default_rng(seed)
        shape = (num_envs,) + envs.single_action_space.shape
        for _ in range(steps):
            actions = rng.uniform(-1, 1, shape).astype(np.float32)
            obs, rewards, terminated, truncated, info = envs.step(actions)
            yield actions, rewards, obs, info, terminated | truncated


@pytest.mark.parametrize("env_id, keys, total", [
    ("MuJoCo/Reacher-v5", {"reward_dist", "reward_ctrl"},
     lambda i: i["reward_dist"] + i["reward_ctrl"]),
    ("MuJoCo/InvertedPendulum-v5", {"reward_survive"}, lambda i: i["reward_survive"]),
    ("MuJoCo/InvertedDoublePendulum-v5", {"reward_survive", "distance_penalty", "velocity_penalty"},
     lambda i: i["reward_survive"] + i["distance_penalty"] + i["velocity_penalty"]),
    ("MuJoCo/HumanoidStandup-v5",
     {"x_position", "y_position", "z_distance_from_origin", "reward_linup", "reward_quadctrl", "reward_impact",
      *TENDONS},
     lambda i: i["reward_linup"] + i["reward_quadctrl"] + i["reward_impact"] + 1),
    ("MuJoCo/Swimmer-v5",
     {"x_position", "y_position", "distance_from_origin", "x_velocity", "y_velocity", "reward_forward",
      "reward_ctrl"},
     lambda i: i["reward_forward"] + i["reward_ctrl"]),
    ("MuJoCo/Ant-v5",
     {"x_position", "y_position", "distance_from_origin", "x_velocity", "y_velocity", "reward_forward",
      "reward_ctrl", "reward_survive", "reward_contact"},
     lambda i: i["reward_forward"] + i["reward_ctrl"] + i["reward_survive"] + i["reward_contact"]),
    ("MuJoCo/Walker2d-v5",
     {"x_position", "z_distance_from_origin", "x_velocity", "reward_forward", "reward_ctrl", "reward_survive"},
     lambda i: i["reward_forward"] + i["reward_ctrl"] + i["reward_survive"]),
])
def test_each_tasks_info_holds_gymnasium_v5s_terms(env_id, keys, total):
    # The task's own keys, the reward their documented sum; the positions qpos's, which the
    # observation holds (exclude_current_positions_from_observation=False) at its start: Swimmer,
    # Ant: x, y; Walker2d: x, z (z_distance_from_origin = z - its qpos0, 0 in walker2d.xml);
    # HumanoidStandup: x, y, z (its qpos0 z 0.105... read from the first reset).
    options = {} if "Pendulum" in env_id or "Reacher" in env_id else {
        "exclude_current_positions_from_observation": False}
    reset_keys = keys & set(POSITIONS + TENDONS)
    steps = run_steps(env_id, 3, 40, 5, **options)
    _, _, obs, info, _ = next(steps)
    assert {key for key in info if not key.startswith("_")} == reset_keys
    z_index = 2 if "Standup" in env_id else 1
    z0 = obs[:, z_index].astype(np.float64) - info["z_distance_from_origin"] if "z_distance_from_origin" in info else 0
    previous = info
    for actions, rewards, obs, info, ended in steps:
        live = ~ended
        if "Swimmer" in env_id:  # its velocities are qpos[0:2]'s over the step (dt 0.04), as Gymnasium's
            for axis in "xy":
                np.testing.assert_allclose(
                    info[axis + "_velocity"], (info[axis + "_position"] - previous[axis + "_position"]) / 0.04,
                    rtol=1e-9, atol=1e-12)
        previous = info
        if not live.any():
            continue
        assert {key for key in info if not key.startswith("_") and key not in ("episode", "final_obs", "final_info")} \
            == keys
        for key in keys:
            assert info[key].dtype == np.float64
            np.testing.assert_array_equal(info["_" + key], live if key not in reset_keys else np.ones(3, bool))
        np.testing.assert_allclose(rewards[live], total(info)[live], rtol=1e-6, atol=1e-5)
        if "x_position" in keys:
            np.testing.assert_allclose(info["x_position"], obs[:, 0], rtol=1e-6, atol=1e-6)
        if "y_position" in keys:
            np.testing.assert_allclose(info["y_position"], obs[:, 1], rtol=1e-6, atol=1e-6)
        if "distance_from_origin" in keys:
            np.testing.assert_allclose(info["distance_from_origin"], np.hypot(info["x_position"], info["y_position"]))
        if "z_distance_from_origin" in keys:
            np.testing.assert_allclose(info["z_distance_from_origin"], obs[:, z_index] - z0, rtol=1e-5, atol=1e-5)
        if "reward_ctrl" in keys and "Reacher" in env_id:
            np.testing.assert_allclose(info["reward_ctrl"][live], -(actions.astype(np.float64) ** 2).sum(1)[live])
        if "reward_quadctrl" in keys:
            np.testing.assert_allclose(info["reward_quadctrl"][live],
                                       -0.1 * (actions.astype(np.float64) ** 2).sum(1)[live])
        if "reward_survive" in keys and "Pendulum" in env_id:
            assert (info["reward_survive"][live] == {"MuJoCo/InvertedPendulum-v5": 1.0}.get(env_id, 10.0)).all()


# humanoid.xml's fixed tendons, each its knee minus its hip_y: (qpos, qvel) indices of
# (left_knee, left_hip_y) and (right_knee, right_hip_y); the observation with the positions kept
# holds qpos (24) then qvel (23).
TENDON_JOINTS = (((17, 16), (16, 15)), ((13, 12), (12, 11)))


def tendons_of(obs):
    qpos, qvel = obs[:, :24].astype(np.float64), obs[:, 24:47].astype(np.float64)
    length = np.stack([qpos[:, a] - qpos[:, b] for (a, b), _ in TENDON_JOINTS], axis=1)
    velocity = np.stack([qvel[:, a] - qvel[:, b] for _, (a, b) in TENDON_JOINTS], axis=1)
    return length, velocity


def expect_tendons(info, num_envs, mask):
    for key in TENDONS:
        assert info[key].shape == (num_envs, 2) and info[key].dtype == np.float64
        assert info["_" + key].dtype == np.bool_
        np.testing.assert_array_equal(info["_" + key], mask)


@pytest.mark.parametrize("env_id, steps", [("MuJoCo/Humanoid-v5", 60), ("MuJoCo/HumanoidStandup-v5", 1000)])
def test_humanoids_info_holds_their_tendons(env_id, steps):
    # Gymnasium v5's tendon_length and tendon_velocity (float64 [ntendon] each, in every step's
    # info and the reset's), as SyncVectorEnv lays out arrays: [num_envs, 2] with a mask, zeros
    # where the mask is False. A reset leaves them of its own state, exactly the observation's
    # knee minus hip_y; a step leaves them as of the last evaluation inside mj_step (RK4's last
    # stage), which the step's end state matches only to within a step's motion, so the lengths
    # are checked to 0.02 there and the velocities not at all.
    endings = 0
    for actions, _, obs, info, ended in run_steps(env_id, 3, steps, 9, exclude_current_positions_from_observation=False):
        expect_tendons(info, 3, np.ones(3, bool))
        length, velocity = tendons_of(obs)
        if actions is None:  # the reset
            np.testing.assert_allclose(info["tendon_length"], length, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(info["tendon_velocity"], velocity, rtol=1e-6, atol=1e-6)
            continue
        np.testing.assert_allclose(info["tendon_length"][~ended], length[~ended], atol=0.02)
        np.testing.assert_allclose(info["tendon_length"][ended], length[ended], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(info["tendon_velocity"][ended], velocity[ended], rtol=1e-6, atol=1e-6)
        if not ended.any():
            assert "final_info" not in info
            continue
        endings += int(ended.sum())
        final = info["final_info"]
        expect_tendons(final, 3, ended)
        final_length, _ = tendons_of(info["final_obs"])
        np.testing.assert_allclose(final["tendon_length"][ended], final_length[ended], atol=0.02)
        assert not np.isclose(final["tendon_length"][ended], info["tendon_length"][ended]).all()  # not the reset's
        for key in TENDONS:
            assert (final[key][~ended] == 0).all()
    # HumanoidStandup ends only by its time limit, on the last step; a flailing Humanoid falls.
    assert endings == 3 if "Standup" in env_id else endings >= 3


def test_tendons_in_async_batches_and_models_without_tendons(tmp_path):
    with make("MuJoCo/Humanoid-v5", num_envs=4, batch_size=2, seed=1) as envs:
        envs.async_reset(seed=2)
        for _ in range(4):
            info = envs.recv()[4]
            expect_tendons(info, 2, np.ones(2, bool))
            envs.send(np.zeros((2, 17), np.float32), info["env_id"])
    # A model file's own tendon count: a humanoid.xml without tendons gives arrays of length 0.
    with open(concord_model("humanoid.xml")) as shipped:
        text = shipped.read()
    start, end = text.index("<tendon>"), text.index("</tendon>") + len("</tendon>")
    model = tmp_path / "humanoid_no_tendons.xml"
    model.write_text(text[:start] + text[end:])
    with make("MuJoCo/HumanoidStandup-v5", num_envs=2, model_file=str(model)) as envs:
        _, info = envs.reset(seed=0)
        for key in TENDONS:
            assert info[key].shape == (2, 0) and info[key].dtype == np.float64 and info["_" + key].all()
        info = envs.step(np.zeros((2, 17), np.float32))[4]
        assert info["tendon_velocity"].shape == (2, 0)
