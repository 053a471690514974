"""GPG's bad input: clear errors that say what was wrong and what to do, before any environment step where possible."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.envs import FakeImageEnv
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_gpg import GPG, GroupDictRolloutBuffer, GroupRolloutBuffer
from tests.helpers import SMALL, Algorithm


class CountingEnv(gym.Wrapper):
    steps = 0

    def step(self, action):
        CountingEnv.steps += 1
        return super().step(action)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(binning="timestep"), "Unknown binning 'timestep'"),
        (dict(binning="spatial", bin_size=0.0), "bin_size must be positive"),
        (dict(binning="spatial", bin_size=[0.5, 0.5]), "bin_size has 2 values but the flattened observation has 4"),
        (dict(binning="state"), "state binning needs a discrete observation space"),
        (dict(min_bin_count=0), "min_bin_count must be an integer >= 1"),
        (dict(gamma=2), r"^gamma=2: gamma must be in \[0, 1\] \(PPO accepts"),
        (dict(gamma=-0.1), r"^gamma=-0.1: gamma must be in \[0, 1\]"),
        (dict(gae_lambda=float("nan")), r"^gae_lambda=nan: gae_lambda must be in \[0, 1\]"),
        (dict(clip_range=-0.2), r"^clip_range=-0.2: the clip range must be >= 0, e.g. 0.2 \(PPO accepts"),
        (dict(clip_range=lambda progress: -0.2), r"^clip_range=a schedule from -0.2 \(progress remaining 1\) to -0.2 \(0\)"),
        (
            dict(learning_rate=lambda progress: 1e-3 * (progress - 0.5)),  # positive at the start: PPO trains on it
            r"^learning_rate=a schedule from 0.0005 \(progress remaining 1\) to -0.0005 \(0\): the learning rate must stay",
        ),
        (dict(ent_coef="1e-2"), r"^ent_coef='1e-2' must be a number\. It is text: YAML reads a number with an exponent"),
        (dict(ent_coef=float("inf")), r"^ent_coef=inf: the entropy coefficient must be a finite number"),
        (dict(learning_rate=float("inf")), r"^learning_rate=inf: the learning rate must be positive and finite"),
        (dict(target_kl="0.01"), r"^target_kl='0.01' must be a number\. It is text: pass the number without quotes\.$"),
        (dict(leave_one_out="no"), r"^leave_one_out must be True or False, got 'no'"),
        (dict(baseline_kwargs="ridge"), r"^baseline_kwargs must be a dict of the baseline's arguments, got 'ridge'"),
        (dict(baseline_kwargs=dict(ridge=float("inf"))), r"ridge'\] must be positive and finite, got inf"),
        (dict(baseline_kwargs=dict(ridge="1e-3")), r"ridge'\]='1e-3' must be a number\. It is text"),
        (dict(baseline_kwargs=dict(memory=2, fourier=4, fourier_seed=-1)), r"fourier_seed'\] must be at least 0, got -1"),
        (dict(baseline_kwargs=dict(choose_size="no")), r"choose_size'\] must be True or False, got 'no'"),
        (dict(baseline_kwargs=dict(optimism=1)), r"optimism'\] must be True or False, got 1"),
        (dict(gae_lambda=1.0, baseline_kwargs=dict(target="lambda_returns")), r"gae_lambda=1\.0 makes them the Monte-Carlo"),
        (dict(baseline_kwargs=dict(target="td")), r"target'\] must be one of \('auto', 'returns', 'lambda_returns'\), got"),
        (dict(baseline_kwargs=dict(memory=0, recency=0.9)), r"recency'\] is an argument of the memory .* which is 0 \(off\)"),
        (dict(baseline_kwargs=dict(memory_weight=0.0)), r"memory_weight'\] must be positive \(or None: no cap\), got 0\.0"),
        (dict(baseline_kwargs=dict(memory_weight="2")), r"memory_weight'\]='2' must be a number"),
        (dict(baseline_kwargs=dict(memory=0, memory_weight=None)), r"memory_weight'\] is an argument of the memory"),
        (
            dict(baseline_kwargs=dict(fourier=0, fourier_scale=2.0)),
            r"fourier_scale'\] is an argument of the fourier .* 0 \(off\)",
        ),
        (dict(truncated_returns="drop"), "truncated_returns must be one of"),
        (dict(advantage_scale="std"), "advantage_scale must be one of"),
        (dict(batch_size=1), "batch_size must be greater than 1"),
        (dict(n_steps=1, batch_size=2), "n_steps \\* n_envs must be greater than 1"),
        (dict(rollout_buffer_kwargs=dict(binning="time")), "Pass binning to the algorithm directly"),
        (dict(rollout_buffer_class=GroupRolloutBuffer.__mro__[1]), "GPG computes its advantages in a GroupRolloutBuffer"),
    ],
)
def test_bad_arguments_fail_before_any_step(kwargs, message):
    CountingEnv.steps = 0
    with pytest.raises(ValueError, match=message):
        GPG("MlpPolicy", CountingEnv(gym.make("CartPole-v1")), **kwargs)
    assert CountingEnv.steps == 0


def test_numpy_numbers_are_numbers():
    kwargs = dict(memory=np.int64(2), recency=np.float32(0.5), fourier=np.int32(4), fourier_scale=np.float32(2.0))
    GPG("MlpPolicy", "CartPole-v1", **SMALL, baseline="linear", baseline_kwargs=kwargs).learn(3 * SMALL["n_steps"])


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(clip_range=LinearSchedule(0.2, 0.0, 0.4)),  # 0 from 40% of training on, a rounding error below it at 60%
        dict(learning_rate=lambda progress: 1e-3 * progress, n_steps=48, batch_size=48),  # rl_zoo3's lin_: < 0 at the end
        dict(baseline="linear", baseline_kwargs=dict(memory=0, recency=0.8, fourier=0, fourier_seed=None)),  # defaults
        dict(leave_one_out=1),
    ],
)
def test_valid_settings_at_their_edges_train(kwargs):
    # 160 steps, not a multiple of the rollout: the last rollout ends past the budget, at a negative progress remaining
    GPG("MlpPolicy", "CartPole-v1", **{**SMALL, **kwargs}).learn(160)


def test_load_for_prediction_takes_rl_zoo3s_custom_objects_and_learn_refuses_them(tmp_path):
    GPG("MlpPolicy", "CartPole-v1", **SMALL).save(tmp_path / "model")
    # what rl_zoo3's enjoy and record_video pass
    custom_objects = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "clip_range": lambda _: 0.0}
    model = GPG.load(tmp_path / "model", env=DummyVecEnv([lambda: gym.make("CartPole-v1")]), custom_objects=custom_objects)
    model.predict(model.get_env().reset(), deterministic=True)
    with pytest.raises(ValueError, match=r"learning_rate=0\.0: the learning rate must be positive"):
        model.learn(64)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_epochs=0), "n_epochs=0: each update needs a whole number of epochs"),
        (dict(clip_range=-0.2), r"clip_range=a schedule from -0.2 \(progress remaining 1\)"),  # as SB3 loads it
        (dict(batch_size=0), "batch_size must be greater than 1"),
        (dict(gamma=2.0), "gamma=2.0: gamma must be in"),
    ],
)
def test_learn_refuses_what_the_constructor_refuses_after_a_load(tmp_path, kwargs, message):
    GPG("MlpPolicy", "CartPole-v1", **SMALL).save(tmp_path / "model")
    model = GPG.load(tmp_path / "model", env=DummyVecEnv([lambda: gym.make("CartPole-v1")]), **kwargs)
    with pytest.raises(ValueError, match=message):
        model.learn(64)


def test_actor_critic_policy_is_refused():
    from stable_baselines3.common.policies import ActorCriticPolicy

    with pytest.raises(
        ValueError, match=r"GPG needs an actor-only policy \(sb3_gpg.common.policies.ActorOnlyPolicy\), got ActorCriticPolicy"
    ):
        GPG(ActorCriticPolicy, "CartPole-v1")


@pytest.mark.parametrize(
    "algorithm, policy, message",
    [
        ("GPG", "MlpLstmPolicy", "MlpLstmPolicy is RecurrentGPG's policy: use RecurrentGPG (MaskableRecurrentGPG with"),
        ("MaskableGPG", "CnnLstmPolicy", "CnnLstmPolicy is MaskableRecurrentGPG's policy: use MaskableRecurrentGPG ("),
        ("RecurrentGPG", "MlpPolicy", "MlpPolicy is GPG's policy: use GPG (MaskableGPG with action masks), or "
         "RecurrentGPG's MlpLstmPolicy."),
        ("MaskableRecurrentGPG", "MultiInputPolicy", "MultiInputPolicy is MaskableGPG's policy: use MaskableGPG ("),
        ("GPG", "MlpPolicyy", "Policy MlpPolicyy unknown: GPG takes MlpPolicy, CnnPolicy, MultiInputPolicy, or a policy"),
    ],
)  # fmt: skip
def test_another_classes_policy_name_names_the_class(algorithm, policy, message):
    import sb3_gpg

    with pytest.raises(ValueError) as error:
        getattr(sb3_gpg, algorithm)(policy, "CartPole-v1")
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_spatial_binning_on_images_is_refused():
    with pytest.raises(ValueError, match="image observations"):
        GPG("CnnPolicy", FakeImageEnv(screen_height=36, screen_width=36), binning="spatial")


class TupleObservationEnv(gym.Env):
    """Observations of a position and a colour as a Tuple space: what SB3's policies do not take."""

    observation_space = spaces.Tuple((spaces.Box(-1, 1, (2,)), spaces.Discrete(3)))
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        CountingEnv.steps += 1
        return self.observation_space.sample(), 1.0, False, False, {}


TUPLE_REFUSED = r"got a Tuple observation space .*: Tuple spaces are not supported by SB3's policies.* Use a Dict space"


def test_tuple_observations_are_refused_naming_what_to_use(algorithm: Algorithm):
    # GPG's message, not SB3's NotImplementedError from its preprocessing, before any step
    CountingEnv.steps = 0
    with pytest.raises(ValueError, match=TUPLE_REFUSED) as refused:
        algorithm.cls(algorithm.policy(), TupleObservationEnv(), **algorithm.small)
    assert "FlattenObservation" in str(refused.value) and "MultiInputPolicy" in str(refused.value)
    assert CountingEnv.steps == 0


def test_a_tuple_inside_a_dict_is_refused_by_the_group_buffer():
    space = spaces.Dict({"position": spaces.Box(-1, 1, (2,)), "pair": spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3)))})
    match = r"got a Dict observation space whose 'pair' part is a Tuple space .*: Tuple spaces are not supported"
    with pytest.raises(ValueError, match=match):
        GroupDictRolloutBuffer(8, space, spaces.Discrete(2), n_envs=1)


def test_binning_callable_with_wrong_shape_fails_at_first_rollout():
    model = GPG("MlpPolicy", "CartPole-v1", binning=lambda obs, t: t.reshape(-1), **SMALL)
    with pytest.raises(ValueError, match=r"returned keys of shape \(64,\) .* shape \(n_steps, n_envs\) = \(64, 1\)"):
        model.learn(64)


def test_binning_callable_with_float_keys_fails():
    model = GPG("MlpPolicy", "CartPole-v1", binning=lambda obs, t: obs[..., 0], **SMALL)
    with pytest.raises(ValueError, match="dtype float32"):
        model.learn(64)


class NanEnv(gym.Wrapper):
    def __init__(self, env, where):
        super().__init__(env)
        self.where, self.n_steps = where, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self.n_steps += 1
        if self.n_steps == 5:
            if self.where == "reward":
                reward = float("nan")
            else:
                obs = obs.copy()
                obs[1] = np.inf
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("where", ["reward", "observation"])
def test_non_finite_data_raises_naming_step_and_env(where):
    env = DummyVecEnv([lambda: gym.make("CartPole-v1"), lambda: NanEnv(gym.make("CartPole-v1"), where)])
    model = GPG("MlpPolicy", env, **SMALL)
    # NaN reward of step 5 is added with step index 4; an inf observation returned by step 5 is stored at index 5
    step = 4 if where == "reward" else 5
    with pytest.raises(ValueError, match=rf"Non-finite {where} at rollout step {step}, env\(s\) \[1\]"):
        model.learn(64)
