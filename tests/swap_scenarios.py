"""
The swap's scenarios: the anchor and GPG pairs, the spaces, the settings a PPO user may pass, and running one scenario
with both algorithms of a pair to compare their outcomes. ``DIFFERENCES`` lists where GPG differs on purpose, and why:
the only place they are listed. The tests are in test_swap.py.
"""

import traceback
from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from sb3_contrib import MaskablePPO, RecurrentPPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy as maskable_evaluate_policy
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_gpg import GPG, MaskableGPG, RecurrentGPG
from sb3_gpg.common.swap_guards.ppo_settings import PPOSettingError


class Pair(NamedTuple):
    """An anchor and its GPG counterpart."""

    anchor: type[OnPolicyAlgorithm]
    gpg: type[GPG]

    @property
    def name(self) -> str:
        return self.anchor.__name__

    @property
    def maskable(self) -> bool:
        return self.anchor is MaskablePPO

    @property
    def recurrent(self) -> bool:
        return self.anchor is RecurrentPPO

    def policy(self, observation_space: spaces.Space) -> str:
        """:return: the policy alias for the observations: Mlp, Cnn or MultiInput, with Lstm for the recurrent pair"""
        kind = "MultiInput" if isinstance(observation_space, spaces.Dict) else "Cnn" if is_image(observation_space) else "Mlp"
        return f"{kind}{'Lstm' if self.recurrent else ''}Policy"

    def evaluations(self) -> list[Callable[..., Any]]:
        """:return: the evaluation functions a user of the pair calls: SB3's, and sb3-contrib's maskable one"""
        return [evaluate_policy, maskable_evaluate_policy] if self.maskable else [evaluate_policy]


PAIRS = [Pair(PPO, GPG), Pair(MaskablePPO, MaskableGPG), Pair(RecurrentPPO, RecurrentGPG)]
ANCHORS = [pair.name for pair in PAIRS]


class Outcome(NamedTuple):
    """How a scenario ended: the step that raised (``ok`` if none) and its exception."""

    step: str
    error: Exception | None = None


class Difference(NamedTuple):
    """
    A deliberate difference, GPG's side of it.

    :param gpg: in a scenario, the step at which GPG raises and the exception type (``("ok", None)``: it accepts); for
        a constructor's default (scenario ``default <parameter>``), GPG's default
    :param reason: why GPG differs
    """

    gpg: Any
    reason: str


ONE_SAMPLE = (
    "GPG's group is the rollout, and a one-sample rollout has no group (the sample's baseline is its own return, its "
    "advantage 0): GPG refuses it when built. MaskablePPO and RecurrentPPO lack PPO's check and normalise the one "
    "advantage to NaN, which fails at the next rollout"
)
ONE_SAMPLE_MINIBATCH = (
    "PPO's check, which MaskablePPO and RecurrentPPO lack: they normalise one-sample minibatches to NaN, which fails at "
    "the next rollout; GPG refuses it when built"
)
NO_UPDATE = (
    "a zero learning rate or no epoch trains nothing: the anchors accept it, GPG refuses it when built, saying what to pass"
)
OUT_OF_RANGE = (
    "a discount outside [0, 1] or a negative clip range: the anchors train on it silently, GPG refuses it when built, "
    "naming the value and the range"
)
CORRUPTING = (
    "a negative max_grad_norm (a gradient scaled by a negative factor: ascent), a negative target_kl (every epoch "
    "stops after one minibatch) or a NaN entropy coefficient: the anchors train on it, GPG refuses it when built"
)
FRACTIONAL_EPOCHS = "a fractional number of epochs: the anchors fail in their first update (TypeError), GPG when built"
LSTM_SETTINGS = (
    "GPG's filter of the critic's settings serves its three classes, so GPG and MaskableGPG take RecurrentPPO's LSTM "
    "settings for the critic's: they refuse RecurrentPPO's invalid combinations as RecurrentPPO does, and ignore the "
    "rest with the warning. PPO's and MaskablePPO's policies do not take these settings (TypeError)"
)
# The deliberate differences, (anchor, scenario) -> GPG's outcome and why: the only place they are listed
DIFFERENCES: dict[tuple[str, str], Difference] = {
    **{(anchor, "n_steps=1, normalize_advantage=False"): Difference(("init", ValueError), ONE_SAMPLE) for anchor in ANCHORS},
    ("MaskablePPO", "n_steps=1"): Difference(("init", PPOSettingError), ONE_SAMPLE),
    ("RecurrentPPO", "n_steps=1"): Difference(("init", PPOSettingError), ONE_SAMPLE),
    ("MaskablePPO", "batch_size=1"): Difference(("init", PPOSettingError), ONE_SAMPLE_MINIBATCH),
    ("RecurrentPPO", "batch_size=1"): Difference(("init", PPOSettingError), ONE_SAMPLE_MINIBATCH),
    ("PPO", "policy=ActorCriticPolicy"): Difference(
        ("init", ValueError), "GPG's policies have no critic: an actor-critic policy is refused, naming the policies to use"
    ),
    ("RecurrentPPO", "policy=ActorCriticPolicy"): Difference(
        ("init", ValueError), "RecurrentPPO fails on a policy without LSTM (AttributeError); GPG names the policies to use"
    ),
    ("PPO", "rollout_buffer_class=RolloutBuffer"): Difference(
        ("init", ValueError), "GPG computes its advantages in a GroupRolloutBuffer: SB3's buffer is refused when built"
    ),
    ("MaskablePPO", "rollout_buffer_class=RolloutBuffer"): Difference(
        ("init", ValueError), "MaskablePPO refuses SB3's buffer at its first rollout (AssertionError), MaskableGPG when built"
    ),
    **{
        (anchor, scenario): Difference(("init", ValueError), NO_UPDATE)
        for anchor in ANCHORS
        for scenario in ("learning_rate=0", "n_epochs=0")
    },
    **{
        (anchor, scenario): Difference(("init", ValueError), CORRUPTING)
        for anchor in ANCHORS
        for scenario in ("max_grad_norm=-1", "target_kl=-0.1", "ent_coef=nan")
    },
    **{(anchor, "n_epochs=2.5"): Difference(("init", ValueError), FRACTIONAL_EPOCHS) for anchor in ANCHORS},
    **{
        (anchor, scenario): Difference(("init", ValueError), OUT_OF_RANGE)
        for anchor in ANCHORS
        for scenario in ("gamma=2", "gamma=-0.1", "clip_range=-0.2")
    },
    **{
        (anchor, "batch_size=0, normalize_advantage=False"): Difference(
            ("init", ValueError),
            "an empty minibatch: PPO fails when built (ZeroDivisionError), MaskablePPO and RecurrentPPO in their first "
            "update (RuntimeError, IndexError); GPG refuses it when built, saying what to pass",
        )
        for anchor in ANCHORS
    },
    **{
        (anchor, scenario): Difference((step, error), LSTM_SETTINGS)
        for anchor in ("PPO", "MaskablePPO")
        for scenario, step, error in (
            ("shared_lstm=True", "init", PPOSettingError),
            ("shared_lstm=True, share_features_extractor=False", "init", PPOSettingError),
            ("shared_lstm=True, enable_critic_lstm=False", "ok", None),
            ("enable_critic_lstm=False", "ok", None),
        )
    },
    ("PPO", "default gae_lambda"): Difference(
        "auto", "GPG's lambda is chosen per rollout: 1 (returns minus group baselines) where they explain the returns"
    ),
    **{
        (anchor, "default gae_lambda"): Difference(
            1.0, "GPG's advantages are returns minus group baselines (lambda 1); a lower lambda is GAE over the baselines"
        )
        for anchor in ANCHORS
        if anchor != "PPO"
    },
    **{
        (anchor, "default vf_coef"): Difference(None, "no value loss: a vf_coef that is set is named in GPG's warning")
        for anchor in ANCHORS
    },
    **{
        (anchor, "load the anchor's file"): Difference(
            ("load", ValueError), "a GPG policy has no critic, so an anchor's weights do not fit it: GPG's load says so"
        )
        for anchor in ANCHORS
    },
}

# Settings a PPO user may pass, accepted or refused: name -> constructor arguments (a "policy" entry replaces the alias)
SETTINGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "clip_range_vf=0.2": dict(clip_range_vf=0.2),
    "clip_range_vf=schedule": dict(clip_range_vf=lambda progress: 0.2 * progress),
    "clip_range_vf=-0.2": dict(clip_range_vf=-0.2),
    "clip_range_vf=0": dict(clip_range_vf=0),
    "clip_range_vf='0.2'": dict(clip_range_vf="0.2"),
    "gae_lambda, vf_coef": dict(gae_lambda=0.9, vf_coef=0.4),
    "batch_size=1": dict(batch_size=1),
    "batch_size=0, normalize_advantage=False": dict(batch_size=0, normalize_advantage=False),
    "gamma=2": dict(gamma=2),
    "gamma=-0.1": dict(gamma=-0.1),
    "clip_range=-0.2": dict(clip_range=-0.2),
    "learning_rate=-1": dict(learning_rate=-1),
    "learning_rate=0": dict(learning_rate=0),
    "n_epochs=0": dict(n_epochs=0),
    "n_epochs=2.5": dict(n_epochs=2.5),
    "max_grad_norm=-1": dict(max_grad_norm=-1.0),
    "target_kl=-0.1": dict(target_kl=-0.1),
    "ent_coef=nan": dict(ent_coef=float("nan")),
    "n_steps=1": dict(n_steps=1, batch_size=2),
    "n_steps=1, normalize_advantage=False": dict(n_steps=1, batch_size=1, normalize_advantage=False),
    "net_arch with vf": dict(policy_kwargs=dict(net_arch=dict(pi=[16], vf=[32]))),
    "net_arch=[dict(pi, vf)]": dict(policy_kwargs=dict(net_arch=[dict(pi=[16], vf=[32])])),
    "share_features_extractor=False": dict(policy_kwargs=dict(share_features_extractor=False)),
    "shared_lstm=True": dict(policy_kwargs=dict(shared_lstm=True)),
    "shared_lstm=True, enable_critic_lstm=False": dict(policy_kwargs=dict(shared_lstm=True, enable_critic_lstm=False)),
    "shared_lstm=True, share_features_extractor=False": dict(
        policy_kwargs=dict(shared_lstm=True, enable_critic_lstm=False, share_features_extractor=False)
    ),
    "enable_critic_lstm=False": dict(policy_kwargs=dict(enable_critic_lstm=False)),
    "use_sde=True": dict(use_sde=True),
    "target_kl=0.01": dict(target_kl=0.01),
    "policy=ActorCriticPolicy": dict(policy=ActorCriticPolicy),
    "rollout_buffer_class=RolloutBuffer": dict(rollout_buffer_class=RolloutBuffer),
}

ACTION_SPACES = {
    "Box": spaces.Box(-1, 1, (2,), np.float32),
    "Discrete": spaces.Discrete(3),
    "MultiDiscrete": spaces.MultiDiscrete([2, 3]),
    "MultiBinary": spaces.MultiBinary(3),
}
IMAGE = spaces.Box(0, 255, (36, 36, 1), np.uint8)  # channel last, which SB3 transposes; NatureCNN's smallest size
OBSERVATION_SPACES = {
    "Box": spaces.Box(-1, 1, (3,), np.float32),
    "Discrete": spaces.Discrete(4),
    "image": IMAGE,
    "Dict": spaces.Dict({"image": IMAGE, "vector": spaces.Box(-1, 1, (2,), np.float32)}),
}
# Every observation space with discrete actions, every action space with vector observations
SPACES = [(observations, "Discrete") for observations in OBSERVATION_SPACES] + [
    ("Box", actions) for actions in ACTION_SPACES if actions != "Discrete"
]
# The action spaces an anchor fails on, and its counterpart alike: MaskablePPO refuses continuous actions; RecurrentPPO's
# update fails on MultiBinary actions (sb3-contrib's recurrent buffer returns them as int8, which log_prob cannot take)
UNSUPPORTED = {("MaskablePPO", "Box"), ("RecurrentPPO", "MultiBinary")}
N_STEPS, EP_LENGTH = 16, 8


def is_image(space: spaces.Space) -> bool:
    return isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3


def mask_sizes(action_space: spaces.Space) -> list[int]:
    """:return: the number of choices of each sub-action, in sb3-contrib's mask layout"""
    if isinstance(action_space, spaces.Discrete):
        return [int(action_space.n)]
    if isinstance(action_space, spaces.MultiDiscrete):
        return [int(n) for n in action_space.nvec]
    return [2] * int(action_space.n)


class SpacesEnv(gym.Env):
    """
    Random observations of any space, episodes of EP_LENGTH steps, a reward from the action, and action masks that
    forbid the last choice of every sub-action.

    :param observations: the name of the observation space in OBSERVATION_SPACES
    :param actions: the name of the action space in ACTION_SPACES
    """

    def __init__(self, observations: str = "Box", actions: str = "Discrete"):
        self.observation_space, self.action_space = OBSERVATION_SPACES[observations], ACTION_SPACES[actions]
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.steps = 0
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.steps += 1
        return self.observation_space.sample(), float(np.ravel(action)[0]), False, self.steps >= EP_LENGTH, {}

    def action_masks(self) -> np.ndarray:
        return np.concatenate([np.arange(size) < size - 1 for size in mask_sizes(self.action_space)])


def takes_masked_choice(actions: np.ndarray, action_space: spaces.Space) -> bool:
    """:return: whether some action takes the last choice of a sub-action, which SpacesEnv's masks forbid"""
    sizes = mask_sizes(action_space)
    return bool((np.asarray(actions).reshape(-1, len(sizes)) == np.array(sizes) - 1).any())


def make_env(observations: str = "Box", actions: str = "Discrete") -> DummyVecEnv:
    return DummyVecEnv([lambda: SpacesEnv(observations, actions)] * 2)


def make_model(pair: Pair, algorithm: type[OnPolicyAlgorithm], env: gym.Env | DummyVecEnv, **kwargs: Any) -> OnPolicyAlgorithm:
    """
    :return: a small seeded model of the algorithm, with the pair's policy for the env's observations; ``kwargs`` (a
        scenario's arguments) override the common ones
    """
    policy_kwargs: dict[str, Any] = dict(net_arch=[16])
    policy = kwargs.pop("policy", pair.policy(env.observation_space))
    if isinstance(policy, str) and pair.recurrent:
        policy_kwargs["lstm_hidden_size"] = 8
    if is_image(env.observation_space):
        policy_kwargs["features_extractor_kwargs"] = dict(features_dim=16)
    elif isinstance(env.observation_space, spaces.Dict):
        policy_kwargs["features_extractor_kwargs"] = dict(cnn_output_dim=16)
    policy_kwargs |= kwargs.pop("policy_kwargs", {})
    return algorithm(
        policy, env, policy_kwargs=policy_kwargs, **{**dict(n_steps=N_STEPS, batch_size=16, n_epochs=1, seed=0), **kwargs}
    )


class Steps:
    """The step a scenario is at, so that an exception is traced to it: ``init`` until the scenario names another."""

    def __init__(self) -> None:
        self.current = "init"

    def __call__(self, name: str) -> None:
        self.current = name


Scenario = Callable[[type[OnPolicyAlgorithm], Steps], Any]


def run(scenario: Scenario, algorithm: type[OnPolicyAlgorithm]) -> tuple[Outcome, Any]:
    """:return: how the scenario ended with the algorithm, and what it returned (None if it raised)"""
    steps = Steps()
    try:
        return Outcome("ok"), scenario(algorithm, steps)
    except Exception as error:
        # Raised by the scenario's own code, save a constructor refusing an argument: a mistake of the test
        if traceback.extract_tb(error.__traceback__)[-1].filename == __file__ and "unexpected keyword" not in str(error):
            raise
        return Outcome(steps.current, error), None


def alike(anchor: Outcome, gpg: Outcome) -> bool:
    """:return: whether both ended at the same step, GPG with the anchor's exception type where the anchor raised"""
    return anchor.step == gpg.step and (
        gpg.error is None if anchor.error is None else isinstance(gpg.error, type(anchor.error))
    )


def run_pair(pair: Pair, name: str, scenario: Scenario) -> tuple[Any, Any]:
    """
    Run the scenario with both classes of the pair, and check that they end alike, or as ``DIFFERENCES`` says.

    :param name: the scenario's name in ``DIFFERENCES``
    :return: what the scenario returned with the anchor and with GPG (None where it raised)
    """
    (anchor, anchor_result), (gpg, gpg_result) = run(scenario, pair.anchor), run(scenario, pair.gpg)
    ends = f"{name!r}: {pair.name} ended {anchor}, {pair.gpg.__name__} {gpg}"
    difference = DIFFERENCES.get((pair.name, name))
    if difference is None:
        assert alike(anchor, gpg), ends
    else:
        step, error = difference.gpg
        assert alike(Outcome(step, error and error()), gpg), ends
        assert not alike(anchor, gpg), f"{ends}: alike, so DIFFERENCES should not list it"
    return anchor_result, gpg_result


def signature(value: Any) -> Any:
    """:return: the shapes and dtypes of the arrays in a (nested) value, and the types of the other values"""
    if isinstance(value, (tuple, list)):
        return tuple(signature(item) for item in value)
    if isinstance(value, dict):
        return {key: signature(item) for key, item in value.items()}
    if isinstance(value, (np.ndarray, np.generic)):
        return value.shape, str(value.dtype)
    return type(value).__name__


def channel_first(observation: Any) -> Any:
    """:return: the observation with its images put channel first"""
    if isinstance(observation, dict):
        return {key: channel_first(item) for key, item in observation.items()}
    return np.moveaxis(observation, -1, -3) if np.ndim(observation) >= 3 else observation


def learned(
    pair: Pair, algorithm: type[OnPolicyAlgorithm], env: DummyVecEnv, steps: Steps, **kwargs: Any
) -> OnPolicyAlgorithm:
    """:return: a model of the algorithm (see ``make_model``) after one rollout"""
    model = make_model(pair, algorithm, env, **kwargs)
    steps("learn")
    return model.learn(model.n_steps * model.n_envs)
