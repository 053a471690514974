import io
import pathlib
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.utils import FloatSchedule

from sb3_gpg.common.buffers import BaseGroupRolloutBuffer, GroupDictRolloutBuffer, GroupRolloutBuffer, group_buffer_class
from sb3_gpg.common.observation_space import check_observation_space
from sb3_gpg.common.swap_guards.foreign_loads import saved_group_options
from sb3_gpg.common.swap_guards.foreign_policies import (
    check_policy_class,
    check_saved_policy,
    unknown_policy_name,
)
from sb3_gpg.common.swap_guards.no_signal import NoSignalCheck
from sb3_gpg.common.swap_guards.ppo_settings import (
    UPDATE_SETTINGS,
    check_minibatch_size,
    check_update_settings,
    ignore_critic_settings,
)
from sb3_gpg.common.swap_guards.speed_hints import hint_threads
from sb3_gpg.estimator.binning import Binning
from sb3_gpg.estimator.options import GROUP_OPTION_NAMES, GroupOptions
from sb3_gpg.gpg.on_policy import ActorOnlyOnPolicyAlgorithm
from sb3_gpg.gpg.policies import ActorOnlyPolicy, CnnPolicy, MlpPolicy, MultiInputPolicy

SelfGPG = TypeVar("SelfGPG", bound="GPG")
GroupBufferClasses = tuple[type[BaseGroupRolloutBuffer], type[BaseGroupRolloutBuffer]]
SpaceClasses = tuple[type[spaces.Space], ...]


class GPG(ActorOnlyOnPolicyAlgorithm):
    """
    Group Policy Gradient (GPG): PPO's clipped objective with no critic. The advantage of a sample is its discounted
    Monte-Carlo return minus a group baseline, the mean first-visit return of the rollout's trajectories whose states
    fall into the same bin (see ``GroupRolloutBuffer``), or a baseline fitted to the rollout's own returns. By default
    (``baseline="auto"``) it is the linear one, fitted on the last rollouts together (``LINEAR_KWARGS``; on its own
    lambda-returns where ``gae_lambda`` is below 1, as PPO's critic), with the returns that the rollout's end cuts
    bootstrapped, where the observations have Box values and ``binning`` is ``"time"``; the time bins elsewhere.
    ``baseline="bins"`` is the paper's estimator.

    Paper: *Group Policy Gradient*, Junhua Chen, Zixi Zhang, Hantao Zhong and Rika Antonova (University of Cambridge),
    Sections 3-4 and Algorithms 1-2 (not online yet, so no link; the docs' index says how to cite it).

    Its arguments are PPO's, so that PPO code and hyperparameter files run unchanged, then GPG's own options
    (``GroupOptions``); the critic's (``vf_coef``, ``clip_range_vf``, a ``vf`` entry in ``net_arch``,
    ``share_features_extractor``) are accepted and, when set, ignored with one warning; ``gae_lambda`` is used, over
    the group baselines. ``group_options`` holds GPG's options as given, ``estimator_options`` those the estimator
    runs with (``"auto"`` made concrete for the observations, ``baseline_kwargs`` with their defaults filled in).

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy): actor-only policies
    :param env: The environment to learn from (if registered in Gym, can be str)
    :param learning_rate: The learning rate, it can be a function of the current progress remaining (from 1 to 0)
    :param n_steps: The number of steps to run for each environment per update; the group is the whole rollout
    :param batch_size: Minibatch size
    :param n_epochs: Number of epoch when optimizing the surrogate loss
    :param gamma: Discount factor
    :param gae_lambda: GAE's lambda over the group baselines, in [0, 1]; 1: Monte-Carlo advantages; ``"auto"`` (the
        default, not PPO's 0.95): PPO's 0.95 for a rollout where the last rollouts' fitted baselines explained less
        than 0.85 of the variance of their returns, else 1 (``sb3_gpg.estimator.auto_lambda``); 1 under the bins and
        for the first rollout, and again after a load or ``set_env``, which start the rollouts read over
    :param clip_range: Clipping parameter, it can be a function of the current progress remaining (from 1 to 0).
    :param clip_range_vf: PPO's; ignored (no value function)
    :param normalize_advantage: Whether to normalize or not the advantage (per minibatch, as PPO)
    :param ent_coef: Entropy coefficient for the loss calculation
    :param vf_coef: PPO's; ignored (no value function)
    :param max_grad_norm: The maximum value for the gradient clipping
    :param use_sde: Whether to use generalized State Dependent Exploration (gSDE) instead of action noise exploration
    :param sde_sample_freq: Sample a new noise matrix every n steps when using gSDE (-1: only at the rollout's start)
    :param rollout_buffer_class: Rollout buffer class to use, a ``GroupRolloutBuffer`` (sub)class.
        If ``None``, ``GroupRolloutBuffer`` or, for Dict observations, ``GroupDictRolloutBuffer``.
    :param rollout_buffer_kwargs: Keyword arguments to pass to the rollout buffer besides GPG's own options
    :param target_kl: Limit the KL divergence between updates (the clipping alone may not), None for no limit
    :param stats_window_size: Number of episodes the logged success rate, episode length and reward average over
    :param tensorboard_log: the log location for tensorboard (if None, no logging)
    :param policy_kwargs: additional arguments to be passed to the policy on creation
    :param verbose: Verbosity level: 0 for no output, 1 for info messages, 2 for debug messages
    :param seed: Seed for the pseudo random generators
    :param device: Device (cpu, cuda, ...) on which the code should be run; auto: the GPU if possible
    :param _init_setup_model: Whether or not to build the network at the creation of the instance
    :param binning: which samples share a baseline: ``"time"`` (episode time, the paper's choice), ``"rollout_step"``,
        ``"universal"`` (one bin), ``"spatial"``, ``"spatial_time"``, ``"state"``, or a callable ``f(obs, t) -> keys``
    :param bin_size: epsilon of the spatial bins, one float or one value per flattened observation dimension
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: a bin holding fewer returns takes its baseline from the next coarser binning
    :param truncated_returns: the returns the rollout's end cuts: ``"keep"`` (as the paper), ``"mask"`` (out of the bins
        and the loss) or ``"bootstrap"``; None: ``"bootstrap"`` under a fitted baseline, ``"keep"`` under the bins
    :param advantage_scale: ``"none"``, or ``"bin_std"``: each advantage divided by its bin's spread of returns
    :param baseline: ``"auto"``: ``"linear"`` where the observations have Box values and ``binning`` is ``"time"``,
        else ``"bins"`` (``GroupOptions.resolved``); ``"bins"`` (the paper's estimator), ``"linear"`` or ``"knn"``
    :param baseline_kwargs: the fitted baseline's arguments (``GroupOptions``), each given one replacing its default
        (``LINEAR_KWARGS`` for the linear baseline, ``fitted_baselines.BASELINE_KWARGS`` for the others); None: the defaults
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
    # GPG's own options (see GroupOptions), as given
    binning: Binning
    bin_size: float | Sequence[float] | np.ndarray
    leave_one_out: bool
    min_bin_count: int
    truncated_returns: str | None
    advantage_scale: str
    baseline: str
    baseline_kwargs: dict[str, Any] | None
    # What MaskableGPG and RecurrentGPG change: the policies and buffers they need, and the action spaces they support
    policy_base: ClassVar[type[BasePolicy]] = ActorOnlyPolicy
    rollout_buffer_classes: ClassVar[GroupBufferClasses] = (GroupRolloutBuffer, GroupDictRolloutBuffer)
    supported_action_spaces: ClassVar[SpaceClasses] = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)

    def __init__(
        self,
        policy: str | type[ActorOnlyPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 3e-4,
        n_steps: int = 2048,
        batch_size: int = 64,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float | str = "auto",
        clip_range: float | Schedule = 0.2,
        clip_range_vf: float | Schedule | None = None,
        normalize_advantage: bool = True,
        ent_coef: float = 0.0,
        vf_coef: float | None = None,
        max_grad_norm: float = 0.5,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
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
        # Check GPG's own arguments before anything is built or stepped
        options = GroupOptions(
            binning=binning,
            bin_size=bin_size,
            leave_one_out=leave_one_out,
            min_bin_count=min_bin_count,
            truncated_returns=truncated_returns,
            advantage_scale=advantage_scale,
            baseline=baseline,
            baseline_kwargs=baseline_kwargs,
        )
        options.checked(rollout_buffer_kwargs=rollout_buffer_kwargs)
        check_update_settings(
            learning_rate,
            n_epochs,
            gamma=gamma,
            gae_lambda=gae_lambda,
            clip_range=clip_range,
            ent_coef=ent_coef,
            max_grad_norm=max_grad_norm,
            target_kl=target_kl,
        )
        policy_kwargs = ignore_critic_settings(policy_kwargs, vf_coef=vf_coef, clip_range_vf=clip_range_vf)
        if env is not None and not isinstance(env, str):  # an env id's space is checked by the buffer
            check_observation_space(env.observation_space, type(self).__name__)

        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            n_steps=n_steps,
            gamma=gamma,
            gae_lambda=gae_lambda,  # type: ignore[arg-type]  # "auto": the group buffer chooses per rollout
            ent_coef=ent_coef,
            vf_coef=0.0,
            max_grad_norm=max_grad_norm,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            rollout_buffer_class=rollout_buffer_class,
            rollout_buffer_kwargs=rollout_buffer_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            device=device,
            seed=seed,
            _init_setup_model=False,
            supported_action_spaces=self.supported_action_spaces,
        )

        check_minibatch_size(batch_size, self.n_steps, None if self.env is None else self.env.num_envs, normalize_advantage)
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.clip_range = clip_range
        self.normalize_advantage = normalize_advantage
        self.target_kl = target_kl
        # Flat attributes, as SB3 saves and load(..., binning=...) sets them
        vars(self).update(options.as_kwargs())
        self._no_signal_check = NoSignalCheck()

        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        name = type(self).__name__
        check_observation_space(self.observation_space, name)
        check_policy_class(name, self.policy_class, self.policy_base, list(self.policy_aliases))
        self.rollout_buffer_class = group_buffer_class(
            name, self.rollout_buffer_class, self.rollout_buffer_classes, self.observation_space
        )
        # Set here rather than in __init__, so that a model loaded with other values (GPG.load(..., binning=...)) uses them,
        # and over the class name that a file holds in their place (save)
        self.rollout_buffer_kwargs = {**self.rollout_buffer_kwargs, "group_options": self.group_options}
        super()._setup_model()
        self.clip_range = FloatSchedule(self.clip_range)

    def _get_policy_from_name(self, policy_name: str) -> type[BasePolicy]:
        """``BaseAlgorithm._get_policy_from_name``, naming the right class for another GPG class's policy name."""
        if policy_name in self.policy_aliases:
            return self.policy_aliases[policy_name]
        raise unknown_policy_name(type(self), policy_name)

    def learn(
        self: SelfGPG,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 1,
        tb_log_name: str = "GPG",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfGPG:
        # Again here: load(..., n_epochs=0) sets them without the constructor's checks (a model loaded to predict
        # only, as rl_zoo3's enjoy loads it, with learning_rate=0, is not refused)
        check_update_settings(**{name: getattr(self, name) for name in UPDATE_SETTINGS})
        check_minibatch_size(self.batch_size, self.n_steps, self.n_envs, self.normalize_advantage, warn=False)
        hint_threads(self)
        self._no_signal_check = NoSignalCheck()
        super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)
        self._no_signal_check.finish(self)
        return self

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_no_signal_check"]

    def save(
        self,
        path: str | pathlib.Path | io.BufferedIOBase,
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
    ) -> None:
        """
        ``BaseAlgorithm.save``. The file's ``rollout_buffer_kwargs`` name this class in place of the group options (the
        model's own attributes hold those, and ``load`` sets them back), so that another algorithm's ``load``
        (``PPO.load``) refuses the file at once (``swap_guards.foreign_loads``).

        :param path: path to the file where the model should be saved
        :param exclude: name of parameters that should be excluded in addition to the default ones
        :param include: name of parameters that might be excluded but should be included anyway
        """
        built_with = self.rollout_buffer_kwargs
        self.rollout_buffer_kwargs = {**built_with, "group_options": saved_group_options(type(self))}
        try:
            super().save(path, exclude, include)
        finally:
            self.rollout_buffer_kwargs = built_with

    def set_env(self, env: GymEnv, force_reset: bool = True) -> None:
        """
        ``BaseAlgorithm.set_env``; the rollout buffer then forgets the old env's episode times, the linear baseline's
        memory of its returns and the explained variance ``gae_lambda="auto"`` reads (``reset_estimator_state``), so
        that a new task does not inherit the old task's.
        """
        super().set_env(env, force_reset)
        if getattr(self, "rollout_buffer", None) is not None:
            self.rollout_buffer.reset_estimator_state()

    @property
    def group_options(self) -> GroupOptions:
        """GPG's own options (see ``GroupOptions``), as set on this model."""
        return GroupOptions(**{name: getattr(self, name) for name in GROUP_OPTION_NAMES})

    @property
    def estimator_options(self) -> GroupOptions:
        """
        The options the estimator runs with, once the model is set up: ``group_options`` made concrete for the
        observations (``"auto"`` resolved, ``truncated_returns`` set, ``baseline_kwargs`` with their defaults filled
        in), as the rollout buffer holds them (``GroupOptions.resolved`` and ``checked``). Under ``gae_lambda="auto"``
        the linear baseline's ``target`` stays ``"auto"``: it follows each rollout's lambda.
        """
        return self.rollout_buffer.group_options

    @classmethod
    def load(
        cls: type[SelfGPG],
        path: str | pathlib.Path | io.BufferedIOBase,
        env: GymEnv | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfGPG:
        """``BaseAlgorithm.load``, with a clear error for a file saved by another algorithm (e.g. PPO)."""
        check_saved_policy(path, cls.__name__, cls.policy_base, custom_objects)
        return super().load(path, env, device, custom_objects, print_system_info, force_reset, **kwargs)
