"""Concord's vector environments as Gymnasium's own `gymnasium.vector.VectorEnv`.

concord.make() returns a GymnasiumVectorEnv where this module imports, that is where Gymnasium
1.1 or later is importable (the first release with `gymnasium.vector.AutoresetMode`); see
help(concord.make). Importing this module imports Gymnasium, so concord/__init__.py imports it on
the first make() only.

The engine underneath is the same VectorEnv (concord._envs); this class changes what a script
written for `gymnasium.vector.SyncVectorEnv(..., autoreset_mode=AutoresetMode.SAME_STEP)` sees:
Gymnasium's space classes, float64 rewards, info["final_obs"] as Gymnasium's object array, and
no info["episode"] (Gymnasium's base vector envs add none; RecordEpisodeStatistics does).
"""

import numpy as np

import gymnasium

try:
    from gymnasium.vector import AutoresetMode
except ImportError as error:  # Gymnasium 1.0 and 0.x: another vector API
    raise ImportError(
        f"concord.make() needs Gymnasium 1.1 or later for gymnasium.vector.AutoresetMode; found Gymnasium "
        f"{getattr(gymnasium, '__version__', '(unknown version)')}"
    ) from error
from gymnasium.vector.utils import batch_space

from concord import _envs


def single_space(space):
    """Gymnasium's space equal to one of concord._envs' (Box or Discrete)."""
    if isinstance(space, _envs.Discrete):
        return gymnasium.spaces.Discrete(int(space.n))
    if isinstance(space, _envs.Box):
        return gymnasium.spaces.Box(low=space.low, high=space.high, shape=space.shape, dtype=space.dtype)
    raise TypeError(f"no Gymnasium space for {space!r}")


def env_spec(env_id, max_episode_steps, reward_threshold, make_kwargs):
    """A descriptive EnvSpec (id, time limit, reward threshold, make()'s arguments), as make_vec()
    sets one, or None for an id Gymnasium cannot parse. Its entry points are None: Gymnasium's
    registry does not know Concord's ids."""
    try:
        return gymnasium.envs.registration.EnvSpec(
            id=env_id,
            entry_point=None,
            reward_threshold=reward_threshold,
            max_episode_steps=max_episode_steps or None,
            kwargs=dict(make_kwargs),
        )
    except gymnasium.error.Error:
        return None


class GymnasiumVectorEnv(gymnasium.vector.VectorEnv):
    """Concord's VectorEnv as a `gymnasium.vector.VectorEnv` (made by concord.make()).

    Gymnasium's vector API with AutoresetMode.SAME_STEP: an episode that ends is reset on the same
    step; the returned observation starts the next episode and the ended one's last observation
    is info["final_obs"][i] where info["_final_obs"][i] (an object array, None elsewhere, as
    SyncVectorEnv gives it). Spaces are gymnasium.spaces.Box / Discrete (batched by
    gymnasium.vector.utils.batch_space); observations come in the space's dtype, rewards float64,
    terminations and truncations bool. reset(seed=int) seeds env i from (seed, i), not seed + i;
    per-env seed lists and reset options are refused (ValueError).

    Beyond Gymnasium: num_threads, env_id, max_episode_steps, reward_threshold and, in async mode
    (make(..., batch_size=B < num_envs)), EnvPool's async_reset() / send(actions, env_id) / recv()
    with batches of B rows and info["env_id"]; step(actions, env_id) is send() then recv().
    """

    def __init__(self, envs, make_kwargs):
        self._envs = envs
        self.num_envs = envs.num_envs
        self.single_observation_space = single_space(envs.single_observation_space)
        self.single_action_space = single_space(envs.single_action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(envs.metadata, autoreset_mode=AutoresetMode.SAME_STEP)
        self.render_mode = envs.render_mode
        self.spec = env_spec(envs.env_id, envs.max_episode_steps, envs.reward_threshold, make_kwargs)

    # --- Gymnasium's VectorEnv ---------------------------------------------------------------

    def reset(self, *, seed=None, options=None):
        """-> (observations, infos); seed: None or an int (env i is seeded from (seed, i))."""
        observations, infos = self._envs.reset(seed=seed, options=options)
        if seed is not None:
            super().reset(seed=int(seed))  # np_random, as Gymnasium's vector envs seed it
        return observations, infos

    def step(self, actions, env_id=None):
        """-> (observations, rewards, terminations, truncations, infos). env_id: async mode only."""
        return self._results(self._envs.step(actions, env_id))

    def render(self):
        """render_mode "rgb_array": one uint8 [height, width, 3] frame per env, as SyncVectorEnv's."""
        return self._envs.render()

    def close_extras(self, **kwargs):
        self._envs.close()

    # --- Concord's own -----------------------------------------------------------------------

    def async_reset(self, seed=None):
        """Async mode: queues a reset of every env; recv() returns them."""
        self._envs.async_reset(seed)

    def send(self, actions, env_id=None):
        """Async mode: queues one step of each env in env_id (default 0..len(actions)-1)."""
        self._envs.send(actions, env_id)

    def recv(self):
        """Async mode: the next batch_size results, as step() returns them, with infos["env_id"]."""
        return self._results(self._envs.recv())

    num_threads = property(lambda self: self._envs.num_threads)
    batch_size = property(lambda self: self._envs.batch_size)
    is_async = property(lambda self: self._envs.is_async)
    num_in_flight = property(lambda self: self._envs.num_in_flight)
    env_id = property(lambda self: self._envs.env_id)
    max_episode_steps = property(lambda self: self._envs.max_episode_steps)
    reward_threshold = property(lambda self: self._envs.reward_threshold)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False

    @staticmethod
    def _results(results):
        observations, rewards, terminations, truncations, infos = results
        if "_final_obs" in infos:
            # Gymnasium's layout: one entry per env, the ended episode's last observation or None.
            # The engine's episode totals are left out: RecordEpisodeStatistics adds its own
            # info["episode"] and refuses an env that already has one.
            infos.pop("episode", None)
            infos.pop("_episode", None)
            dense = infos["final_obs"]
            final_obs = np.full(len(dense), None, dtype=object)
            for i in np.flatnonzero(infos["_final_obs"]):
                final_obs[i] = dense[i]
            infos["final_obs"] = final_obs
        return observations, rewards.astype(np.float64), terminations, truncations, infos
