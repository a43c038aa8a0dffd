"""`concord export` read back by PyTorch: torch.load of the file, concord.export.torch_module()'s
actions against concord.load(...).act on the same observations."""

import os
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import concord  # noqa: E402
import concord.export  # noqa: E402

CONCORD_EXECUTABLE = os.environ.get("CONCORD_EXECUTABLE")
needs_cli = pytest.mark.skipif(not CONCORD_EXECUTABLE, reason="CONCORD_EXECUTABLE names the concord binary")


def run_cli(*arguments):
    result = subprocess.run([CONCORD_EXECUTABLE, *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def train_and_export(tmp_path, *arguments):
    root = tmp_path / "runs"
    run_cli("train", "--progress", "off", "--run-root", str(root), *arguments)
    (run_dir,) = list(root.iterdir())
    exported = tmp_path / "policy.pt"
    out = run_cli("export", str(run_dir), "-o", str(exported))
    assert str(exported) in out
    return run_dir, exported


def observations(space_shape, low, high, count=256, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, size=(count, *space_shape)).astype(np.float32)


@needs_cli
def test_ppo_cartpole_actions_equal(tmp_path):
    run_dir, exported = train_and_export(tmp_path, "--config", "ppo_cartpole", "--total-timesteps", "8192")
    raw = torch.load(exported)
    assert raw["format"] == "concord.export/1"
    assert raw["algo"] == "ppo" and raw["env_id"] == "CartPole-v1" and raw["action_n"] == 2
    assert "actor_head.weight" in raw["state_dict"]
    module = concord.export.torch_module(exported)
    assert isinstance(module, torch.nn.Module)
    assert set(module.state_dict()) >= set(raw["state_dict"])
    obs = observations((4,), [-2.4, -3.0, -0.2, -3.0], [2.4, 3.0, 0.2, 3.0])
    expected = concord.load(str(run_dir)).act(obs, deterministic=True)
    actions = module.act(torch.from_numpy(obs)).numpy()
    assert actions.dtype == np.int64
    # Both actions occur, so that equality is not that of two constant policies.
    assert 0 < actions.sum() < len(actions)
    np.testing.assert_array_equal(actions, expected)


@needs_cli
def test_ppo_pendulum_continuous_actions_equal(tmp_path):
    run_dir, exported = train_and_export(tmp_path, "--config", "ppo_pendulum", "--total-timesteps", "4096")
    module = concord.export.torch_module(exported)
    obs = observations((3,), [-1.0, -1.0, -8.0], [1.0, 1.0, 8.0])
    expected = concord.load(str(run_dir)).act(obs, deterministic=True)
    actions = module.act(torch.from_numpy(obs)).numpy()
    assert actions.shape == expected.shape == (256, 1)
    np.testing.assert_allclose(actions, expected, rtol=1e-5, atol=1e-5)


@needs_cli
def test_sac_and_dqn_actions_equal(tmp_path):
    for algo, env, shape, low, high in [
        ("sac", "Pendulum-v1", (3,), -1.0, 1.0),
        ("dqn", "CartPole-v1", (4,), -1.0, 1.0),
    ]:
        folder = tmp_path / algo
        folder.mkdir()
        run_dir, exported = train_and_export(folder, "--algo", algo, "--env", env, "--total-timesteps", "64")
        module = concord.export.torch_module(exported)
        obs = observations(shape, low, high)
        expected = concord.load(str(run_dir)).act(obs, deterministic=True)
        actions = module.act(torch.from_numpy(obs)).numpy()
        np.testing.assert_allclose(actions, expected, rtol=1e-5, atol=1e-5, err_msg=algo)


def test_not_an_export_is_refused(tmp_path):
    path = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(ValueError, match="not a file of `concord export`"):
        concord.export.torch_module(path)


def act_in_step(policy, module, envs, steps=12, seed=3):
    """Acts `steps` times on random observations through concord.load's act_with_state and the
    exported module's, each fed its own returned state, with random episode starts; asserts equal
    actions and states at every step."""
    rng = np.random.default_rng(seed)
    state, module_state, starts = None, None, None
    for step in range(steps):
        obs = rng.uniform(-1.0, 1.0, size=(envs, 4)).astype(np.float32)
        actions, state = policy.act_with_state(obs, state, episode_start=starts)
        module_actions, module_state = module.act_with_state(
            torch.from_numpy(obs), module_state, None if starts is None else torch.from_numpy(starts))
        np.testing.assert_array_equal(module_actions.numpy(), actions, err_msg=f"step {step}")
        assert sorted(module_state) == sorted(state)
        for name, value in state.items():
            np.testing.assert_allclose(module_state[name].numpy(), value, rtol=1e-5, atol=1e-6, err_msg=name)
        starts = rng.random(envs) < 0.2
    return actions


@needs_cli
def test_networks_with_memory_act_and_carry_their_state_as_concord_does(tmp_path):
    # Recurrent PPO (an LSTM each for the actor and the critic, then 64 ReLU units per head) and
    # R2D2 (a GRU core), each trained for one update.
    cases = [("ppo_lstm_cartpole_novel", ["--total-timesteps", "256"], ["actor_c", "actor_h", "critic_c", "critic_h"]),
             ("r2d2_cartpole_novel", ["--total-timesteps", "256", "--set", "algo.dqn.learning_starts=64"], ["h"])]
    for config, extra, names in cases:
        folder = tmp_path / config
        folder.mkdir()
        run_dir, exported = train_and_export(folder, "--config", config, *extra)
        module = concord.export.torch_module(exported)
        assert sorted(module.initial_state(3)) == names
        with pytest.raises(ValueError, match="this agent has memory"):
            module.act(torch.zeros(2, 4))
        actions = act_in_step(concord.load(str(run_dir)), module, envs=64)
        assert 0 < actions.sum() < len(actions), config
