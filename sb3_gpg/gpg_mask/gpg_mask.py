from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, PyTorchObs, Schedule
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg.common.maskable.buffers import MaskableGroupDictRolloutBuffer, MaskableGroupRolloutBuffer
from sb3_gpg.common.maskable.policies import MaskableActorOnlyPolicy
from sb3_gpg.common.maskable.utils import check_action_masks
from sb3_gpg.estimator.binning import Binning
from sb3_gpg.gpg.gpg import GPG
from sb3_gpg.gpg_mask.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

SelfMaskableGPG = TypeVar("SelfMaskableGPG", bound="BaseMaskableGPG")


class BaseMaskableGPG(GPG):
    """
    GPG's rollout and update with invalid-action masking, as sb3-contrib's ``MaskablePPO`` is PPO: at every rollout
    step the env's ``action_masks()`` restricts the policy to the valid actions, and the masks are stored with the
    samples and applied again in the update; ``learn`` and ``predict`` take MaskablePPO's ``use_masking`` and
    ``action_masks``. It hands the masks down the MRO to the next class's steps (GPG's, or RecurrentGPG's in
    ``MaskableRecurrentGPG``), and has no constructor of its own: ``MaskableGPG`` gives it MaskablePPO's arguments,
    ``MaskableRecurrentGPG`` RecurrentGPG's.
    """

    # sb3-contrib's maskable policies are no ActorCriticPolicy
    policy: MaskableActorOnlyPolicy  # type: ignore[assignment]
    # Whether the current learn() call masks (set by learn); MaskablePPO passes it down as an argument of collect_rollouts
    _use_masking: bool = True
    supported_action_spaces = (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)

    def _sample_actions(
        self, obs_tensor: PyTorchObs, env: VecEnv, **policy_kwargs: Any
    ) -> tuple[th.Tensor, th.Tensor, dict[str, Any]]:
        """
        :return: the next class's actions (GPG's, RecurrentGPG's) drawn within the env's action masks (checked; none
            under ``use_masking=False``), their log probabilities, and what it stores with the step, with the masks
        """
        if not self._use_masking:
            return super()._sample_actions(obs_tensor, env, **policy_kwargs)
        action_masks = check_action_masks(get_action_masks(env), self.action_space, env.num_envs)
        actions, log_probs, stored = super()._sample_actions(obs_tensor, env, action_masks=action_masks, **policy_kwargs)
        return actions, log_probs, {**stored, "action_masks": action_masks}

    def _evaluate_actions(
        self, rollout_data: Any, actions: th.Tensor, **policy_kwargs: Any
    ) -> tuple[th.Tensor, th.Tensor | None]:
        # Under the masks stored with the samples (all ones without masking)
        return super()._evaluate_actions(rollout_data, actions, action_masks=rollout_data.action_masks, **policy_kwargs)

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """
        Get the policy action from an observation, as ``MaskablePPO.predict``.

        :param observation: the input observation (images channel last or first, as SB3's policies take them)
        :param state: The last hidden states (unused: no recurrence)
        :param episode_start: The last masks (unused: no recurrence)
        :param deterministic: Whether or not to return deterministic actions.
        :param action_masks: Action masks to apply to the action distribution (e.g. ``get_action_masks(env)``)
        :return: the model's action and the next hidden state
        :raises ValueError: if the masks do not fit the observations or allow no action in some state
        """
        return self.policy.predict(observation, state, episode_start, deterministic, action_masks=action_masks)

    def learn(  # type: ignore[override]  # MaskablePPO.learn's signature: use_masking before progress_bar
        self: SelfMaskableGPG,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 1,
        tb_log_name: str = "MaskableGPG",
        reset_num_timesteps: bool = True,
        use_masking: bool = True,
        progress_bar: bool = False,
    ) -> SelfMaskableGPG:
        """
        ``GPG.learn`` with ``use_masking`` as in ``MaskablePPO.learn``: False trains without masks (every action
        allowed, also in the update).

        :raises ValueError: with ``use_masking=True``, if the env has no ``action_masks`` method
        """
        if use_masking and self.env is not None and not is_masking_supported(self.env):
            raise ValueError(
                "MaskableGPG with use_masking=True needs an env with an action_masks() method: give the env one, or "
                "wrap it in sb3_contrib.common.wrappers.ActionMasker(env, mask_fn) before vectorising it; or call "
                "learn(..., use_masking=False) to train without masks."
            )
        self._use_masking = use_masking
        return super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_use_masking"]


class MaskableGPG(BaseMaskableGPG):
    """
    Group Policy Gradient with invalid-action masking: ``GPG`` as sb3-contrib's ``MaskablePPO`` is PPO. At every rollout
    step the env's ``action_masks()`` (a method of the env, or sb3-contrib's ``ActionMasker`` wrapper) restricts the
    policy to the valid actions; the masks are stored with the samples and applied again in the update. Returns, bins,
    group baselines and advantages are GPG's, with every option.

    Paper: *Group Policy Gradient*, Junhua Chen, Zixi Zhang, Hantao Zhong and Rika Antonova (University of Cambridge),
    Sections 3-4 and Algorithms 1-2 (not online yet, so no link; the docs' index says how to cite it).

    Its arguments are MaskablePPO's plus GPG's own; the critic's (``vf_coef``, ``clip_range_vf``, a ``vf`` entry in
    ``net_arch``, ``share_features_extractor``) are accepted and, when set, ignored with one warning.

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy): maskable actor-only policies
    :param env: The environment to learn from (if registered in Gym, can be str); Discrete, MultiDiscrete or
        one-dimensional MultiBinary actions
    :param learning_rate: The learning rate, it can be a function of the current progress remaining (from 1 to 0)
    :param n_steps: The number of steps to run for each environment per update; the group is the whole rollout,
        n_steps * n_envs samples
    :param batch_size: Minibatch size
    :param n_epochs: Number of epoch when optimizing the surrogate loss
    :param gamma: Discount factor
    :param gae_lambda: GAE's lambda over the group baselines; 1 (the default, not PPO's 0.95): Monte-Carlo advantages;
        ``"auto"`` (``GPG``'s default): PPO's 0.95 for a rollout where the last rollouts' fitted baselines explained
        less than 0.85 of the variance of their returns, else 1 (``sb3_gpg.estimator.auto_lambda``); 1 under the bins
    :param clip_range: Clipping parameter, it can be a function of the current progress remaining (from 1 to 0).
    :param clip_range_vf: PPO's; ignored (no value function)
    :param normalize_advantage: Whether to normalize or not the advantage (per minibatch, as PPO)
    :param ent_coef: Entropy coefficient for the loss calculation
    :param vf_coef: PPO's; ignored (no value function)
    :param max_grad_norm: The maximum value for the gradient clipping
    :param rollout_buffer_class: Rollout buffer class to use, a ``MaskableGroupRolloutBuffer`` (sub)class. If ``None``,
        ``MaskableGroupRolloutBuffer`` or, for Dict observations, ``MaskableGroupDictRolloutBuffer``.
    :param rollout_buffer_kwargs: Keyword arguments to pass to the rollout buffer on creation, besides GPG's own
        arguments below
    :param target_kl: Limit the KL divergence between updates, because the clipping is not enough to prevent large
        update. By default, there is no limit on the kl div.
    :param stats_window_size: Window size for the rollout logging, specifying the number of episodes to average
        the reported success rate, mean episode length, and mean reward over
    :param tensorboard_log: the log location for tensorboard (if None, no logging)
    :param policy_kwargs: additional arguments to be passed to the policy on creation
    :param verbose: Verbosity level: 0 for no output, 1 for info messages (such as device or wrappers used), 2 for
        debug messages
    :param seed: Seed for the pseudo random generators
    :param device: Device (cpu, cuda, ...) on which the code should be run.
        Setting it to auto, the code will be run on the GPU if possible.
    :param _init_setup_model: Whether or not to build the network at the creation of the instance
    :param binning: GPG's own options (``GroupOptions``; see ``GPG``): which samples share a baseline (``"time"``:
        the episode time, the paper's choice)
    :param bin_size: epsilon of the spatial bins, one float or one value per flattened observation dimension
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: a bin holding fewer returns takes its baseline from the next coarser binning
    :param truncated_returns: the returns the rollout's end cuts: ``"keep"``, ``"mask"`` or ``"bootstrap"``; None:
        ``"bootstrap"`` under a fitted baseline, ``"keep"`` under the bins
    :param advantage_scale: ``"none"``, or ``"bin_std"``: each advantage divided by its bin's spread of returns
    :param baseline: ``"auto"`` (``"linear"`` where the observations have Box values and ``binning`` is ``"time"``,
        else ``"bins"``), ``"bins"`` (the paper's estimator), ``"linear"`` or ``"knn"``
    :param baseline_kwargs: the fitted baseline's arguments (``GroupOptions``); None: their defaults
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
    rollout_buffer: MaskableGroupRolloutBuffer
    policy_base: ClassVar[type[BasePolicy]] = MaskableActorOnlyPolicy
    rollout_buffer_classes = (MaskableGroupRolloutBuffer, MaskableGroupDictRolloutBuffer)

    def __init__(
        self,
        policy: str | type[MaskableActorOnlyPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 3e-4,
        n_steps: int = 2048,
        batch_size: int = 64,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float | str = 1.0,
        clip_range: float | Schedule = 0.2,
        clip_range_vf: float | Schedule | None = None,
        normalize_advantage: bool = True,
        ent_coef: float = 0.0,
        vf_coef: float | None = None,
        max_grad_norm: float = 0.5,
        rollout_buffer_class: type[RolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        target_kl: float | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
        binning: Binning = "time",
        bin_size: float | Sequence[float] | np.ndarray = 1.0,
        leave_one_out: bool = False,
        min_bin_count: int = 1,
        truncated_returns: str | None = None,
        advantage_scale: str = "none",
        baseline: str = "auto",
        baseline_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(
            # sb3-contrib's MaskableActorCriticPolicy is no ActorCriticPolicy (policy_base is checked)
            policy,  # type: ignore[arg-type]
            env,
            learning_rate=learning_rate,
            n_steps=n_steps,
            batch_size=batch_size,
            n_epochs=n_epochs,
            gamma=gamma,
            gae_lambda=gae_lambda,
            clip_range=clip_range,
            clip_range_vf=clip_range_vf,
            normalize_advantage=normalize_advantage,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            rollout_buffer_class=rollout_buffer_class,
            rollout_buffer_kwargs=rollout_buffer_kwargs,
            target_kl=target_kl,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=_init_setup_model,
            binning=binning,
            bin_size=bin_size,
            leave_one_out=leave_one_out,
            min_bin_count=min_bin_count,
            truncated_returns=truncated_returns,
            advantage_scale=advantage_scale,
            baseline=baseline,
            baseline_kwargs=baseline_kwargs,
        )
