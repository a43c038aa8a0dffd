"""An agent with memory from Python: concord.load(...) of a recurrent run acts through
act_with_state, which hands the state back to the caller, and refuses the stateless act()."""

import pathlib

import numpy as np
import pytest

import concord

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "configs" / "ppo_lstm_cartpole_novel.toml")


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    run = concord.train(config=CONFIG, total_timesteps=512, seed=1, progress=False,
                        run_root=tmp_path_factory.mktemp("runs"), overrides={"run.log_level": "warn"})
    return concord.load(run.run_dir)


def test_act_with_state_returns_the_state_to_pass_back(policy):
    obs = np.zeros((3, 4), dtype=np.float32)
    actions, state = policy.act_with_state(obs)
    assert actions.shape == (3,) and actions.dtype == np.int64
    # Separate torsos: an LSTM each for the actor and the critic, 64 cells (the preset).
    assert sorted(state) == ["actor_c", "actor_h", "critic_c", "critic_h"]
    assert all(value.shape == (3, 64) and value.dtype == np.float32 for value in state.values())
    assert np.abs(state["actor_h"]).sum() > 0
    # The state carries memory: the same observation after another history may act otherwise,
    # and an episode start forgets it, giving the first call's state again.
    _, again = policy.act_with_state(obs, state)
    assert not np.array_equal(again["actor_h"], state["actor_h"])
    _, reset = policy.act_with_state(obs, again, episode_start=np.ones(3, dtype=bool))
    np.testing.assert_array_equal(reset["actor_h"], state["actor_h"])


def test_the_stateless_act_and_a_bad_state_are_refused(policy):
    obs = np.zeros((2, 4), dtype=np.float32)
    with pytest.raises(ValueError, match=r"act\(\): this agent has memory"):
        policy.act(obs)
    _, state = policy.act_with_state(obs)
    with pytest.raises(ValueError, match=r"state\['actor_[hc]'\] must be an array with 3 rows"):
        policy.act_with_state(np.zeros((3, 4), dtype=np.float32), state)
    with pytest.raises(ValueError, match=r"episode_start must hold 2 values"):
        policy.act_with_state(obs, state, episode_start=np.ones(5))


def test_an_r2d2_agent_acts_with_its_recurrent_state(tmp_path):
    config = str(ROOT / "configs" / "r2d2_cartpole_novel.toml")
    run = concord.train(config=config, total_timesteps=256, seed=2, progress=False, run_root=tmp_path,
                        overrides={"run.log_level": "warn", "algo.dqn.learning_starts": 64})
    policy = concord.load(run.run_dir)
    obs = np.zeros((2, 4), dtype=np.float32)
    actions, state = policy.act_with_state(obs)
    assert actions.shape == (2,)
    # The preset's core is a GRU of 64 cells: its state is h alone.
    assert sorted(state) == ["h"] and state["h"].shape == (2, 64)
    _, again = policy.act_with_state(obs, state)
    assert not np.array_equal(again["h"], state["h"])
