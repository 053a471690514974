import io
import pathlib
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, PyTorchObs, Schedule
from stable_baselines3.common.utils import FloatSchedule, obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg.common.buffers import BaseGroupRolloutBuffer, GroupDictRolloutBuffer, GroupRolloutBuffer, group_buffer_class
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
from sb3_gpg.estimator.binning import Binning
from sb3_gpg.estimator.options import GROUP_OPTION_NAMES, GroupOptions
from sb3_gpg.gpg.policies import ActorOnlyPolicy, CnnPolicy, MlpPolicy, MultiInputPolicy

SelfGPG = TypeVar("SelfGPG", bound="GPG")
# The group's diagnostics that verbose=1 prints, beside train/baseline_explained_variance (verbose=2 prints all of them;
# TensorBoard, CSV and JSON logs get all): the group's size, and the share of samples it gives no signal
SHOWN_DIAGNOSTICS = ("n_trajectories", "zero_advantage_share")
GroupBufferClasses = tuple[type[BaseGroupRolloutBuffer], type[BaseGroupRolloutBuffer]]
SpaceClasses = tuple[type[spaces.Space], ...]


class GPG(OnPolicyAlgorithm):
    """
    Group Policy Gradient (GPG): PPO's clipped objective with no critic. The advantage of a sample is its discounted
    Monte-Carlo return minus a group baseline, the mean first-visit return of the rollout's trajectories whose states
    fall into the same bin (see ``GroupRolloutBuffer``), or a baseline fitted to the rollout's own returns. By default
    (``baseline="auto"``) it is the linear one, fitted on the last rollouts together (``AUTO_LINEAR_KWARGS``), with the
    returns that the rollout's end cuts bootstrapped, where the observations have Box values and ``binning`` is
    ``"time"``; the time bins elsewhere. ``baseline="bins"`` is the paper's estimator.

    Its arguments are PPO's, so that PPO code and hyperparameter files run unchanged; the critic's (``vf_coef``,
    ``clip_range_vf``, a ``vf`` entry in ``net_arch``, ``share_features_extractor``) are accepted and, when set,
    ignored with one warning; ``gae_lambda`` is used, over the group baselines.

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy): actor-only policies
    :param env: The environment to learn from (if registered in Gym, can be str)
    :param learning_rate: The learning rate, it can be a function of the current progress remaining (from 1 to 0)
    :param n_steps: The number of steps to run for each environment per update; the group is the whole rollout
    :param batch_size: Minibatch size
    :param n_epochs: Number of epoch when optimizing the surrogate loss
    :param gamma: Discount factor
    :param gae_lambda: GAE's lambda over the group baselines; 1 (the default, not PPO's 0.95): Monte-Carlo advantages
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
    :param group_options: GPG's own options, by name (``GroupOptions``: binning, bin_size, leave_one_out, min_bin_count,
        truncated_returns, advantage_scale, baseline, baseline_kwargs); ``baseline`` defaults to ``"auto"`` and
        ``truncated_returns`` to None here, and an ``"auto"`` linear baseline given no ``baseline_kwargs`` gets
        ``AUTO_LINEAR_KWARGS`` (``GroupOptions.resolved``)
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
    policy: ActorOnlyPolicy
    # GPG's own options (see GroupOptions)
    binning: Binning
    bin_size: float | Sequence[float]
    leave_one_out: bool
    min_bin_count: int
    truncated_returns: str
    advantage_scale: str
    baseline: str
    baseline_kwargs: dict[str, Any] | None
    rollout_buffer: BaseGroupRolloutBuffer
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
        gae_lambda: float = 1.0,
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
        **group_options: Any,
    ):
        # Check GPG's own arguments before anything is built or stepped
        options = GroupOptions.from_kwargs(type(self).__name__, group_options)
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

        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            n_steps=n_steps,
            gamma=gamma,
            gae_lambda=gae_lambda,
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
        check_policy_class(name, self.policy_class, self.policy_base, list(self.policy_aliases))
        self.rollout_buffer_class = group_buffer_class(
            name, self.rollout_buffer_class, self.rollout_buffer_classes, self.observation_space
        )
        # Set here rather than in __init__, so that a model loaded with other values (GPG.load(..., binning=...)) uses them
        self.rollout_buffer_kwargs = {**self.rollout_buffer_kwargs, "group_options": self.group_options}
        super()._setup_model()
        self.clip_range = FloatSchedule(self.clip_range)

    def _get_policy_from_name(self, policy_name: str) -> type[BasePolicy]:
        """``BaseAlgorithm._get_policy_from_name``, naming the right class for another GPG class's policy name."""
        if policy_name in self.policy_aliases:
            return self.policy_aliases[policy_name]
        raise unknown_policy_name(type(self), policy_name)

    def _stdout_exclusion(self, shown: bool = False) -> tuple[str, ...]:
        """
        :param shown: whether the row is one that ``verbose=1`` prints
        :return: the ``exclude`` of a ``gpg/`` row: printed at ``verbose=2``, and at ``verbose=1`` where ``shown``;
            TensorBoard, CSV and JSON logs get every row
        """
        return () if shown or self.verbose >= 2 else ("stdout",)

    def _maybe_recommend_cpu(self, mlp_class_name: str = "ActorOnlyPolicy") -> None:
        super()._maybe_recommend_cpu(mlp_class_name)

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        # SB3 types it as any RolloutBuffer; _setup_model makes it a group one
        rollout_buffer: BaseGroupRolloutBuffer,  # type: ignore[override]
        n_rollout_steps: int,
    ) -> bool:
        """
        Collect experiences using the current policy and fill a ``GroupRolloutBuffer``, then log the group's
        diagnostics under ``gpg/``.

        ``OnPolicyAlgorithm.collect_rollouts`` less what only a critic needs: no per-env loop that bootstraps
        time-limit truncations with the value of the terminal observation, no value of the last observation.

        :param env: The training environment
        :param callback: Callback called at each step (and at the beginning and end of the rollout)
        :param rollout_buffer: Buffer to fill with rollouts
        :param n_rollout_steps: Number of experiences to collect per environment
        :return: False if the callback ended the rollout early, else True
        """
        assert self._last_obs is not None, "No previous observation was provided"
        self.policy.set_training_mode(False)

        n_steps = 0
        rollout_buffer.reset()
        if self.use_sde:
            self.policy.reset_noise(env.num_envs)
        callback.on_rollout_start()
        no_values = th.zeros((env.num_envs, 1), device=self.device)  # the buffer's interface takes values; GPG has none

        while n_steps < n_rollout_steps:
            if self.use_sde and self.sde_sample_freq > 0 and n_steps % self.sde_sample_freq == 0:
                self.policy.reset_noise(env.num_envs)

            with th.no_grad():
                # SB3's _last_obs is optional; asserted above
                obs_tensor = obs_as_tensor(self._last_obs, self.device)  # type: ignore[arg-type]
                action_tensor, log_probs, stored_with_step = self._sample_actions(obs_tensor, env)
            actions = action_tensor.cpu().numpy()

            clipped_actions = actions
            if isinstance(self.action_space, spaces.Box):
                if self.policy.squash_output:
                    clipped_actions = self.policy.unscale_action(clipped_actions)
                else:
                    clipped_actions = np.clip(actions, self.action_space.low, self.action_space.high)

            new_obs, rewards, dones, infos = env.step(clipped_actions)
            self.num_timesteps += env.num_envs
            callback.update_locals(locals())
            if not callback.on_step():
                return False

            self._update_info_buffer(infos, dones)
            n_steps += 1

            if isinstance(self.action_space, spaces.Discrete):
                actions = actions.reshape(-1, 1)

            rollout_buffer.add(
                self._last_obs, actions, rewards, self._last_episode_starts, no_values, log_probs, **stored_with_step
            )
            self._last_obs = new_obs  # type: ignore[assignment]  # SB3's VecEnvObs includes tuples, its _last_obs not
            self._last_episode_starts = dones

        rollout_buffer.compute_returns_and_advantage(last_values=no_values, dones=dones, last_obs=self._last_obs)
        for key, value in rollout_buffer.group_stats.items():
            if key != "baseline_explained_variance":  # logged with the update's train/ rows
                self.logger.record(f"gpg/{key}", value, exclude=self._stdout_exclusion(key in SHOWN_DIAGNOSTICS))
        self._no_signal_check.record(rollout_buffer.group_stats, self)

        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    # What MaskableGPG and RecurrentGPG change in the rollout and the update

    def _sample_actions(
        self, obs_tensor: PyTorchObs, env: VecEnv, **policy_kwargs: Any
    ) -> tuple[th.Tensor, th.Tensor, dict[str, Any]]:
        """
        :param policy_kwargs: what the policy takes besides the observations (the action masks of the maskable
            algorithms, which hand them down the MRO)
        :return: the policy's actions at a rollout step, their log probabilities, and what the rollout buffer stores
            with the step besides SB3's fields (nothing for GPG; MaskableGPG's action masks, RecurrentGPG's LSTM states)
        """
        actions, log_probs = self.policy.sample_actions(obs_tensor, **policy_kwargs)
        return actions, log_probs, {}

    def _evaluate_actions(
        self, rollout_data: Any, actions: th.Tensor, **policy_kwargs: Any
    ) -> tuple[th.Tensor, th.Tensor | None]:
        """
        :param policy_kwargs: see ``_sample_actions``
        :return: log probabilities and entropies of a minibatch's actions under the current policy
        """
        _, log_prob, entropy = self.policy.evaluate_actions(rollout_data.observations, actions, **policy_kwargs)
        return log_prob, entropy

    def _rows_in_loss(self, rollout_data: Any) -> th.Tensor | None:
        """
        :return: which rows of a minibatch enter the loss (RecurrentGPG's padding of sequences), or None for all
        """
        return None

    def train(self) -> None:
        """
        Update policy using the currently gathered rollout buffer.

        PPO's update loop with the value loss removed: clipped surrogate plus entropy bonus. The means run over the
        rows of ``_rows_in_loss`` (all but RecurrentGPG's padding), as in RecurrentPPO.
        """
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        # a float or a schedule as given (SB3's PPO types it so); a schedule since _setup_model
        clip_range = self.clip_range(self._current_progress_remaining)  # type: ignore[operator]

        entropy_losses, pg_losses, clip_fractions = [], [], []
        continue_training = True
        for epoch in range(self.n_epochs):
            approx_kl_divs = []
            for rollout_data in self.rollout_buffer.get(self.batch_size):
                actions = rollout_data.actions
                if isinstance(self.action_space, spaces.Discrete):
                    actions = rollout_data.actions.long().flatten()

                log_prob, entropy = self._evaluate_actions(rollout_data, actions)
                in_loss = self._rows_in_loss(rollout_data)
                advantages = rollout_data.advantages
                # Normalization does not make sense if mini batchsize == 1, see GH issue #325
                if self.normalize_advantage and len(_rows(advantages, in_loss)) > 1:
                    advantages = (advantages - _rows(advantages, in_loss).mean()) / (_rows(advantages, in_loss).std() + 1e-8)

                # ratio between old and new policy, should be one at the first iteration
                ratio = th.exp(log_prob - rollout_data.old_log_prob)

                # clipped surrogate loss
                policy_loss_1 = advantages * ratio
                policy_loss_2 = advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
                policy_loss = -_rows(th.min(policy_loss_1, policy_loss_2), in_loss).mean()

                pg_losses.append(policy_loss.item())
                clip_fraction = th.mean(_rows((th.abs(ratio - 1) > clip_range).float(), in_loss)).item()
                clip_fractions.append(clip_fraction)

                # Entropy bonus; approximated by the log probabilities where it has no analytical form
                entropy_loss = -th.mean(_rows(-log_prob if entropy is None else entropy, in_loss))
                entropy_losses.append(entropy_loss.item())

                loss = policy_loss + self.ent_coef * entropy_loss

                # Calculate approximate form of reverse KL Divergence for early stopping
                # see issue #417: https://github.com/DLR-RM/stable-baselines3/issues/417
                with th.no_grad():
                    log_ratio = log_prob - rollout_data.old_log_prob
                    approx_kl_div = th.mean(_rows((th.exp(log_ratio) - 1) - log_ratio, in_loss)).cpu().numpy()
                    approx_kl_divs.append(approx_kl_div)

                if self.target_kl is not None and approx_kl_div > 1.5 * self.target_kl:
                    continue_training = False
                    if self.verbose >= 1:
                        print(f"Early stopping at step {epoch} due to reaching max kl: {approx_kl_div:.2f}")
                    break

                self.policy.optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()

            self._n_updates += 1
            if not continue_training:
                break

        if not pg_losses:
            warnings.warn(
                "No sample of this rollout entered the loss: every return was cut by the rollout's end and "
                "truncated_returns='mask' leaves those out. Use an n_steps longer than the episodes, or "
                "truncated_returns='keep'. The policy was not updated.",
                UserWarning,
            )
            return

        self.logger.record("train/entropy_loss", np.mean(entropy_losses))
        self.logger.record("train/policy_gradient_loss", np.mean(pg_losses))
        self.logger.record("train/approx_kl", np.mean(approx_kl_divs))
        self.logger.record("train/clip_fraction", np.mean(clip_fractions))
        self.logger.record("train/loss", loss.item())
        # No critic: how much of the returns the group's baselines explain, held out as a critic's values are (PPO's
        # train/explained_variance), and in sample, as the advantages used them
        self.logger.record("train/baseline_explained_variance", self.rollout_buffer.group_stats["baseline_explained_variance"])
        self.logger.record(
            "gpg/in_sample_explained_variance", self.rollout_buffer.explained_variance, exclude=self._stdout_exclusion()
        )
        if hasattr(self.policy, "log_std"):
            self.logger.record("train/std", th.exp(self.policy.log_std).mean().item())
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip_range)

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
        self._no_signal_check = NoSignalCheck()
        super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)
        self._no_signal_check.finish(self)
        return self

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_no_signal_check"]

    @property
    def group_options(self) -> GroupOptions:
        """GPG's own options (see ``GroupOptions``), as set on this model."""
        return GroupOptions(**{name: getattr(self, name) for name in GROUP_OPTION_NAMES})

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


def _rows(tensor: th.Tensor, in_loss: th.Tensor | None) -> th.Tensor:
    """
    :return: the tensor's rows that enter the loss (all where ``in_loss`` is None)
    """
    return tensor if in_loss is None else tensor[in_loss]
