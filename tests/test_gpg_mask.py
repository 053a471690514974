"""MaskableGPG: its buffer against the reference, learning on sb3-contrib's invalid-action envs, save/load and errors."""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib.common.envs import InvalidActionEnvDiscrete, InvalidActionEnvMultiBinary, InvalidActionEnvMultiDiscrete
from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from sb3_contrib.common.maskable.utils import get_action_masks
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import IdentityEnv

from sb3_gpg import GPG, MaskableGPG
from sb3_gpg.common.maskable.buffers import MaskableGroupDictRolloutBuffer, MaskableGroupRolloutBuffer
from tests import helpers

# Identity envs draw every state afresh: one bin for all (as GRPO) fits them, and short rollouts keep tests fast
SMALL = {**helpers.SMALL, "binning": "universal"}
N_ACTIONS = 4


def masks_of(observations: np.ndarray) -> np.ndarray:
    """Masks that can be told apart per sample: action a is allowed where the first coordinate's bin a is not."""
    cells = np.floor(observations[..., 0]).astype(int) % N_ACTIONS
    return np.arange(N_ACTIONS) != cells[..., None]


@pytest.mark.cases(0, None, 3)
def test_buffer_matches_reference_and_keeps_each_sample_with_its_mask(group_case):
    buffer = MaskableGroupRolloutBuffer(
        group_case.n_steps, group_case.observation_space, spaces.Discrete(N_ACTIONS), "cpu", **group_case.buffer_kwargs
    )
    for rollout in group_case.consecutive(2):
        in_group = group_case.check(buffer, rollout, with_step=lambda obs: dict(action_masks=masks_of(obs)))
        batches = list(buffer.get(batch_size=16))
        observations_out = th.cat([batch.observations for batch in batches]).numpy()
        masks_out = th.cat([batch.action_masks for batch in batches]).numpy()
        assert len(masks_out) == in_group.sum()  # samples left out of the loss leave with their masks
        np.testing.assert_array_equal(masks_out.astype(bool), masks_of(observations_out))


def test_dict_buffer_yields_masks():
    space = spaces.Dict({"a": spaces.Box(-10, 10, (2,)), "b": spaces.Discrete(3)})
    buffer = MaskableGroupDictRolloutBuffer(8, space, spaces.MultiDiscrete([2, 3]), "cpu", n_envs=2)
    masks = np.array([[1, 1, 0, 1, 1], [1, 0, 1, 1, 1]], dtype=bool)
    for step in range(8):
        obs = {"a": np.full((2, 2), step, dtype=np.float32), "b": np.array([[0], [1]])}
        buffer.add(obs, np.zeros((2, 2)), np.ones(2), np.array([step == 0] * 2), th.zeros(2), th.zeros(2), action_masks=masks)
    buffer.compute_returns_and_advantage(th.zeros(2), np.array([True, True]))
    (batch,) = buffer.get()
    np.testing.assert_array_equal(
        batch.action_masks.numpy().astype(bool), masks[batch.observations["b"].numpy()[:, 0].astype(int)]
    )


class InvalidActionCounter(gym.Wrapper):
    """Counts the steps whose action the env's mask forbade (masks in sb3-contrib's flat layout)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.invalid_steps = 0

    def step(self, action):
        masks, offset = np.asarray(self.env.unwrapped.action_masks(), dtype=bool), 0
        space = self.env.action_space
        sizes = (
            [space.n]
            if isinstance(space, spaces.Discrete)
            else list(space.nvec)
            if isinstance(space, spaces.MultiDiscrete)
            else [2] * space.n
        )
        for size, choice in zip(sizes, np.atleast_1d(action), strict=True):
            self.invalid_steps += not masks[offset + int(choice)]
            offset += size
        return self.env.step(action)

    def action_masks(self):
        return self.env.unwrapped.action_masks()


# sb3-contrib's test of MaskablePPO (dim 80 with 60 invalid actions, gamma 0.4, seed 32, 5,000 steps, threshold 90), on
# the three action spaces. On the multi-action envs a step scores only when every sub-action is right, which a random
# valid policy rarely manages, so the same threshold asks more of them.
@pytest.mark.slow
@pytest.mark.parametrize(
    "make_env",
    [
        lambda: InvalidActionEnvDiscrete(dim=80, n_invalid_actions=60),
        lambda: InvalidActionEnvMultiDiscrete(dims=[4, 4, 4], n_invalid_actions=6),
        lambda: InvalidActionEnvMultiBinary(dims=4, n_invalid_actions=2),
    ],
    ids=["Discrete", "MultiDiscrete", "MultiBinary"],
)
def test_learns_invalid_action_envs_and_never_takes_an_invalid_action(make_env):
    env = InvalidActionCounter(make_env())
    model = MaskableGPG("MlpPolicy", env, gamma=0.4, seed=32, device="cpu").learn(5000)
    eval_env = InvalidActionCounter(make_env())
    mean_return, _ = evaluate_policy(model, eval_env, n_eval_episodes=20, warn=False)
    assert mean_return >= 90
    assert env.invalid_steps == 0 and eval_env.invalid_steps == 0


def test_without_masking_it_still_runs_and_takes_invalid_actions():
    env = InvalidActionCounter(InvalidActionEnvDiscrete(dim=10, n_invalid_actions=8))
    model = MaskableGPG("MlpPolicy", env, seed=0, **SMALL).learn(256, use_masking=False)
    assert env.invalid_steps > 0  # nothing held the policy to the valid actions
    assert model.rollout_buffer.action_masks.all()  # the buffer's masks allowed everything in the update too


# Two valid actions of 10 at each step: an untrained masked policy is right about half of the time (about 50 of 100),
# one that learned from its masked samples every time. Each step's reward is its own: gamma 0.4 as in SB3's identity
# tests, and a higher rate than PPO's default so that a few rollouts suffice
LEARN_FAST = {**SMALL, "batch_size": 64, "n_epochs": 10, "gamma": 0.4, "learning_rate": 1e-3}


@pytest.mark.slow
def test_several_envs_and_the_maskable_eval_callback():
    env = make_vec_env(lambda: InvalidActionEnvDiscrete(dim=10, n_invalid_actions=8), n_envs=4, seed=0)
    eval_env = make_vec_env(lambda: InvalidActionEnvDiscrete(dim=10, n_invalid_actions=8), seed=100)
    callback = MaskableEvalCallback(eval_env, eval_freq=64, n_eval_episodes=10)
    model = MaskableGPG("MlpPolicy", env, seed=0, **LEARN_FAST).learn(1024, callback=callback)
    assert model.rollout_buffer.action_masks.shape == (64 * 4, 10)  # flattened by get()
    assert callback.last_mean_reward >= 90  # -inf until the callback has evaluated


def test_non_maskable_policy_is_refused():
    with pytest.raises(
        ValueError, match=r"MaskableGPG needs an actor-only policy \(.*MaskableActorOnlyPolicy\), got ActorOnlyPolicy"
    ):
        MaskableGPG(GPG.policy_aliases["MlpPolicy"], InvalidActionEnvDiscrete(dim=4, n_invalid_actions=1))


def test_env_without_action_masks_is_refused_before_any_step():
    model = MaskableGPG("MlpPolicy", IdentityEnv(4), **SMALL)
    with pytest.raises(ValueError, match=r"needs an env with an action_masks\(\) method.*ActionMasker.*use_masking=False"):
        model.learn(64)
    assert model.num_timesteps == 0
    model.learn(64, use_masking=False)


@pytest.mark.parametrize(
    "mask_fn, message",
    [
        (lambda env: np.ones(3, dtype=bool), r"shape \((1, )?3,?\) do not fit 1 env\(s\) .*expected 4 entries per env"),
        (lambda env: np.zeros(4, dtype=bool), r"allow no action in env\(s\) \[0\]"),
    ],
    ids=["wrong-shape", "all-masked"],
)
def test_bad_masks_fail_at_the_first_step(mask_fn, message):
    model = MaskableGPG("MlpPolicy", ActionMasker(IdentityEnv(4), mask_fn), **SMALL)
    with pytest.raises(ValueError, match=message):
        model.learn(64)
    with pytest.raises(ValueError, match=message):
        model.predict(np.array(0), action_masks=mask_fn(None))


def test_all_masked_sub_action_of_multidiscrete_is_named():
    env = ActionMasker(InvalidActionEnvMultiDiscrete(dims=[2, 3]), lambda env: np.array([1, 1, 0, 0, 0], dtype=bool))
    with pytest.raises(ValueError, match=r"allow no action of sub-action 1 in env\(s\) \[0\]"):
        MaskableGPG("MlpPolicy", env, **SMALL).learn(64)


def test_continuous_actions_are_refused():
    with pytest.raises(AssertionError, match="only supports"):
        MaskableGPG("MlpPolicy", "Pendulum-v1")


def test_get_action_masks_feeds_predict():
    env = make_vec_env(lambda: InvalidActionEnvDiscrete(dim=6, n_invalid_actions=5), n_envs=3, seed=1)
    model = MaskableGPG("MlpPolicy", env, **SMALL)
    obs = env.reset()
    masks = get_action_masks(env)
    actions, _ = model.predict(obs, action_masks=masks)
    assert masks[np.arange(3), actions].all()  # one valid action per env: the masked policy must pick it
