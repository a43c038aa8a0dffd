"""Trained Concord agents as PyTorch modules, from the file `concord export RUN` writes.

The file is PyTorch's own format: torch.load(path) gives a dict with the network's state_dict and
what rebuilds it (format, algo, env_id, config as TOML text, observation_shape,
observation_dtype, action_kind, action_n or action_shape/action_low/action_high). This module
needs PyTorch and nothing of Concord's C++:

    import concord.export
    module = concord.export.torch_module("runs/CartPole-v1__train__1__.../policy.pt")
    actions = module.act(torch.as_tensor(observations))     # the mode, as concord.load(...).act

torch_module() returns a torch.nn.Module whose state_dict() has the exported names, so that
module.load_state_dict(torch.load(path)["state_dict"]) round-trips; forward(obs) gives the
network's raw outputs (logits or means and values; Q-values for DQN). The layers are those of
src/concord/nn/: MLP torsos (fc0, fc1, ...), MinAtar's grid CNN (conv0, ..., fc, on channel-last
grids), the Nature CNN on pixels divided by 255, observation normalisation (obs_rms: mean, var,
clipped to +-10), recurrent cores (torch.nn.LSTM or GRU, one layer) with the hidden layers
before each head, Categorical and diagonal Gaussian policies, DQN's plain or dueling heads and
SAC's squashed Gaussian actor. Continuous actions are clipped to the action space's bounds.

A network with memory (algo.recurrent) acts as concord.load(...).act_with_state does:

    actions, state = module.act_with_state(obs)                 # every env from its initial state
    actions, state = module.act_with_state(obs, state, episode_start)

state is a dict of float32 tensors [B, hidden] under the names concord.load uses (h and c for an
LSTM, prefixed actor_ and critic_ when the actor and the critic each have a core); an env whose
episode_start is true starts again from zeros before this step. forward(obs, state,
episode_start) gives the raw outputs and the next state.
"""

import tomllib

import torch
from torch import nn

FORMAT = "concord.export/1"

__all__ = ["FORMAT", "load", "torch_module"]


def load(path):
    """The dict `concord export` wrote, checked to be one."""
    exported = torch.load(path, map_location="cpu")
    if not isinstance(exported, dict) or exported.get("format") != FORMAT:
        raise ValueError(f"'{path}' is not a file of `concord export` (format {FORMAT})")
    return exported


def torch_module(path):
    """The trained network of an exported file as a torch.nn.Module in eval mode, with act()."""
    exported = load(path)
    config = tomllib.loads(exported["config"])
    algo = exported["algo"]
    state = exported["state_dict"]
    if algo in ("ppo", "a2c"):
        module = ActorCritic(exported, config, state)
    elif algo == "dqn":
        module = QNetwork(exported, config, state)
    elif algo == "sac":
        module = SacActor(exported, config, state)
        state = {name: tensor for name, tensor in state.items() if name.startswith("actor.")}
    else:
        raise ValueError(f"concord.export: no module for algo '{algo}'")
    module.load_state_dict(state, strict=True)
    return module.eval()


def _activation(config):
    name = config.get("algo", {}).get("activation", "tanh")
    return torch.tanh if name == "tanh" else torch.relu


class Mlp(nn.Module):
    """MlpTorso: fc0, fc1, ... each followed by the activation."""

    def __init__(self, state, prefix, activation):
        super().__init__()
        self.activation = activation
        self.depth = 0
        while f"{prefix}fc{self.depth}.weight" in state:
            out_features, in_features = state[f"{prefix}fc{self.depth}.weight"].shape
            setattr(self, f"fc{self.depth}", nn.Linear(in_features, out_features))
            self.depth += 1

    def forward(self, x):
        x = x.flatten(1)
        for i in range(self.depth):
            x = self.activation(getattr(self, f"fc{i}")(x))
        return x


class GridCnn(nn.Module):
    """GridCnnTorso: unpadded convolutions over [B, H, W, C] grids, then one linear layer, ReLU."""

    def __init__(self, state, prefix, stride):
        super().__init__()
        self.depth = 0
        while f"{prefix}conv{self.depth}.weight" in state:
            out_channels, in_channels, kernel, _ = state[f"{prefix}conv{self.depth}.weight"].shape
            setattr(self, f"conv{self.depth}", nn.Conv2d(in_channels, out_channels, kernel, stride=stride))
            self.depth += 1
        out_features, in_features = state[f"{prefix}fc.weight"].shape
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.permute(0, 3, 1, 2)
        for i in range(self.depth):
            x = torch.relu(getattr(self, f"conv{i}")(x))
        return torch.relu(self.fc(x.flatten(1)))


class NatureCnn(nn.Module):
    """CnnTorso: the Nature-DQN convolutions (strides 4, 2, 1) on pixels / 255, then a linear layer."""

    def __init__(self, state, prefix):
        super().__init__()
        for i, stride in enumerate((4, 2, 1)):
            out_channels, in_channels, kernel, _ = state[f"{prefix}conv{i}.weight"].shape
            setattr(self, f"conv{i}", nn.Conv2d(in_channels, out_channels, kernel, stride=stride))
        out_features, in_features = state[f"{prefix}fc.weight"].shape
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x / 255.0
        for i in range(3):
            x = torch.relu(getattr(self, f"conv{i}")(x))
        return torch.relu(self.fc(x.flatten(1)))


def _torso(state, prefix, config):
    algo_config = config.get("algo", {})
    if f"{prefix}conv0.weight" in state and f"{prefix}conv1.weight" in state and algo_config.get("torso") == "cnn":
        return NatureCnn(state, prefix)
    if f"{prefix}conv0.weight" in state:
        return GridCnn(state, prefix, algo_config.get("grid_stride", 1))
    return Mlp(state, prefix, _activation(config))


class Recurrent(nn.Module):
    """RecurrentCore: one torch.nn.LSTM or GRU layer stepped once per call; the rows of an env whose
    episode starts are zeroed first."""

    def __init__(self, state, prefix):
        super().__init__()
        self.kind = "lstm" if f"{prefix}lstm.weight_ih_l0" in state else "gru"
        gates, input_size = state[f"{prefix}{self.kind}.weight_ih_l0"].shape
        self.hidden_size = gates // (4 if self.kind == "lstm" else 3)
        layer = nn.LSTM if self.kind == "lstm" else nn.GRU
        setattr(self, self.kind, layer(input_size, self.hidden_size))
        self.names = ("h", "c") if self.kind == "lstm" else ("h",)

    def initial_state(self, batch):
        return [torch.zeros(batch, self.hidden_size) for _ in self.names]

    def forward(self, x, state, starts):
        if starts is not None:
            keep = (1.0 - starts.to(torch.float32)).unsqueeze(1)
            state = [tensor * keep for tensor in state]
        if self.kind == "lstm":
            out, (h, c) = self.lstm(x.unsqueeze(0), (state[0].unsqueeze(0), state[1].unsqueeze(0)))
            return out.squeeze(0), [h.squeeze(0), c.squeeze(0)]
        out, h = self.gru(x.unsqueeze(0), state[0].unsqueeze(0))
        return out.squeeze(0), [h.squeeze(0)]


def _starts(episode_start, batch):
    if episode_start is None:
        return None
    starts = torch.as_tensor(episode_start).reshape(-1)
    if starts.numel() != batch:
        raise ValueError(f"act_with_state(): episode_start must hold {batch} values, one per observation")
    return starts


def _unpack(cores, state, batch):
    """Each core's state list from the dict act_with_state returned (None: initial states)."""
    if state is None:
        return [core.initial_state(batch) for _, core in cores]
    unpacked = []
    for prefix, core in cores:
        tensors = []
        for name in core.names:
            key = prefix + name
            if key not in state:
                raise ValueError(f"act_with_state(): the state has no '{key}' ({len(state)} tensors given)")
            tensor = torch.as_tensor(state[key], dtype=torch.float32)
            if tensor.shape != (batch, core.hidden_size):
                raise ValueError(f"act_with_state(): state['{key}'] must be shaped ({batch}, {core.hidden_size}), "
                                 f"got {tuple(tensor.shape)}")
            tensors.append(tensor)
        unpacked.append(tensors)
    return unpacked


def _pack(cores, states):
    return {prefix + name: tensor for (prefix, core), tensors in zip(cores, states)
            for name, tensor in zip(core.names, tensors)}


class RunningMeanStd(nn.Module):
    """Observation normalisation: clamp((x - mean) / sqrt(var + 1e-8), -10, 10)."""

    def __init__(self, shape):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    def forward(self, x):
        std = torch.sqrt(self.var + 1e-8).to(x.dtype)
        return ((x - self.mean.to(x.dtype)) / std).clamp(-10.0, 10.0)


class _Agent(nn.Module):
    def __init__(self, exported):
        super().__init__()
        self.discrete = exported["action_kind"] == "discrete"
        self.cores = []  # (state name prefix, Recurrent) of a network with memory
        if not self.discrete:
            shape = list(exported["action_shape"])
            self.register_buffer("action_low", torch.tensor(exported["action_low"], dtype=torch.float32).view(shape))
            self.register_buffer("action_high", torch.tensor(exported["action_high"], dtype=torch.float32).view(shape))

    def _stateless(self):
        if self.cores:
            raise ValueError("act(): this agent has memory (algo.recurrent): use act_with_state(obs, state, "
                             "episode_start), which also returns the state to pass with the next observations")

    def initial_state(self, batch):
        """The state at an episode's start for `batch` envs (an empty dict without memory)."""
        return _pack(self.cores, [core.initial_state(batch) for _, core in self.cores])

    def _clip(self, actions):
        return actions if self.discrete else torch.max(torch.min(actions, self.action_high), self.action_low)

    # The bounds come from the export's metadata, not its state_dict.
    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for name in ("action_low", "action_high"):
            if hasattr(self, name):
                state_dict.setdefault(prefix + name, getattr(self, name))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class ActorCritic(_Agent):
    """PPO's and A2C's nn::ActorCritic: torso(s), recurrent core(s) and the layers before each head
    when it has memory, actor and critic heads, log_std, obs_rms."""

    def __init__(self, exported, config, state):
        super().__init__(exported)
        self.shared = any(name.startswith(("torso.", "core.")) for name in state)
        if self.shared:
            self.torso = _torso(state, "torso.", config)
        else:
            self.actor_torso = _torso(state, "actor_torso.", config)
            self.critic_torso = _torso(state, "critic_torso.", config)
        if "core.gru.weight_ih_l0" in state or "core.lstm.weight_ih_l0" in state:
            self.core = Recurrent(state, "core.")
            self.cores = [("", self.core)]
        elif any(name.startswith("actor_core.") for name in state):
            self.actor_core = Recurrent(state, "actor_core.")
            self.critic_core = Recurrent(state, "critic_core.")
            self.cores = [("actor_", self.actor_core), ("critic_", self.critic_core)]
        activation = _activation(config)
        self.head_layers = "actor_head_layers.fc0.weight" in state
        if self.head_layers:
            self.actor_head_layers = Mlp(state, "actor_head_layers.", activation)
            self.critic_head_layers = Mlp(state, "critic_head_layers.", activation)
        out_features, in_features = state["actor_head.weight"].shape
        self.actor_head = nn.Linear(in_features, out_features)
        self.critic_head = nn.Linear(state["critic_head.weight"].shape[1], 1)
        if "log_std" in state:
            self.log_std = nn.Parameter(torch.zeros_like(state["log_std"]))
        self.obs_rms = RunningMeanStd(state["obs_rms.mean"].shape) if "obs_rms.mean" in state else None

    def _prepare(self, obs):
        x = obs.to(torch.float32)
        return self.obs_rms(x) if self.obs_rms is not None else x

    def _heads(self, actor, critic):
        if self.head_layers:
            actor, critic = self.actor_head_layers(actor), self.critic_head_layers(critic)
        return self.actor_head(actor), self.critic_head(critic).squeeze(-1)

    def forward(self, obs, state=None, episode_start=None):
        """(logits or means [B, d], values [B]); with memory, (logits or means, values, next state)."""
        x = self._prepare(obs)
        actor = self.torso(x) if self.shared else self.actor_torso(x)
        critic = actor if self.shared else self.critic_torso(x)
        if not self.cores:
            return self._heads(actor, critic)
        starts = _starts(episode_start, x.shape[0])
        states = _unpack(self.cores, state, x.shape[0])
        actor, states[0] = self.cores[0][1](actor, states[0], starts)
        if len(self.cores) == 2:
            critic, states[1] = self.cores[1][1](critic, states[1], starts)
        else:
            critic = actor
        return (*self._heads(actor, critic), _pack(self.cores, states))

    def _actions(self, out, deterministic):
        if self.discrete:
            return out.argmax(-1) if deterministic else torch.distributions.Categorical(logits=out).sample()
        actions = out if deterministic else torch.normal(out, self.log_std.exp().expand_as(out))
        return self._clip(actions)

    @torch.no_grad()
    def act(self, obs, deterministic=True):
        """Actions for observations [B, *shape]: the mode (argmax or mean), or a sample."""
        self._stateless()
        out, _ = self.forward(obs)
        return self._actions(out, deterministic)

    @torch.no_grad()
    def act_with_state(self, obs, state=None, episode_start=None, deterministic=True):
        """(actions, next state) for a network with memory, as concord.load(...).act_with_state."""
        out, _, next_state = self.forward(obs, state, episode_start)
        return self._actions(out, deterministic), next_state


class QNetwork(_Agent):
    """DQN's nn::QNetwork: a torso, a recurrent core when it has memory (R2D2), and a plain head or
    dueling value and advantage heads."""

    def __init__(self, exported, config, state):
        super().__init__(exported)
        self.torso = _torso(state, "torso.", config)
        if any(name.startswith("core.") for name in state):
            self.core = Recurrent(state, "core.")
            self.cores = [("", self.core)]
        self.dueling = "value_head.weight" in state
        if self.dueling:
            self.value_head = nn.Linear(state["value_head.weight"].shape[1], 1)
            out_features, in_features = state["advantage_head.weight"].shape
            self.advantage_head = nn.Linear(in_features, out_features)
        else:
            out_features, in_features = state["head.weight"].shape
            self.head = nn.Linear(in_features, out_features)

    def forward(self, obs, state=None, episode_start=None):
        """Q-values [B, n]; with memory, (Q-values, next state)."""
        h = self.torso(obs.to(torch.float32))
        next_state = None
        if self.cores:
            starts = _starts(episode_start, h.shape[0])
            (states,) = _unpack(self.cores, state, h.shape[0])
            h, states = self.core(h, states, starts)
            next_state = _pack(self.cores, [states])
        if not self.dueling:
            q = self.head(h)
        else:
            advantage = self.advantage_head(h)
            q = self.value_head(h) + advantage - advantage.mean(1, keepdim=True)
        return q if next_state is None else (q, next_state)

    @torch.no_grad()
    def act(self, obs, deterministic=True):
        """The greedy action for observations [B, *shape]."""
        if not deterministic:
            raise ValueError("act(): an exported DQN acts greedily only (deterministic=True)")
        self._stateless()
        return self.forward(obs).argmax(-1)

    @torch.no_grad()
    def act_with_state(self, obs, state=None, episode_start=None, deterministic=True):
        """(greedy actions, next state) for a network with memory (R2D2)."""
        if not deterministic:
            raise ValueError("act_with_state(): an exported DQN acts greedily only (deterministic=True)")
        q, next_state = self.forward(obs, state, episode_start)
        return q.argmax(-1), next_state


class SquashedGaussian(nn.Module):
    """SAC's nn::SquashedGaussianActor: an MLP, a mean head and a log-std head, tanh-squashed."""

    def __init__(self, config, state):
        super().__init__()
        if "actor.sde_log_std" in state:
            raise ValueError("concord.export: SAC with algo.sac.use_sde is not rebuilt in Python")
        self.torso = Mlp(state, "actor.torso.", _activation(config))
        out_features, in_features = state["actor.fc_mean.weight"].shape
        self.fc_mean = nn.Linear(in_features, out_features)
        self.fc_logstd = nn.Linear(in_features, out_features)
        self.register_buffer("action_scale", torch.zeros_like(state["actor.action_scale"]))
        self.register_buffer("action_bias", torch.zeros_like(state["actor.action_bias"]))

    def forward(self, obs):
        h = self.torso(obs.to(torch.float32).flatten(1))
        log_std = -5.0 + 3.5 * (torch.tanh(self.fc_logstd(h)) + 1.0)
        return self.fc_mean(h), log_std


class SacActor(_Agent):
    """The acting part of a SAC agent (its Q-networks are not exported to the module)."""

    def __init__(self, exported, config, state):
        super().__init__(exported)
        self.actor = SquashedGaussian(config, state)

    def forward(self, obs):
        """(pre-squash means, log-stds) [B, d]."""
        return self.actor(obs)

    @torch.no_grad()
    def act(self, obs, deterministic=True):
        """tanh(mean) scaled into the bounds, or a squashed sample."""
        mean, log_std = self.forward(obs)
        u = mean if deterministic else torch.normal(mean, log_std.exp())
        return self._clip(torch.tanh(u) * self.actor.action_scale + self.actor.action_bias)
