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
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.utils import FloatSchedule, explained_variance, obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg.common.binning import Binning, check_group_arguments
from sb3_gpg.common.buffers import GroupDictRolloutBuffer, GroupRolloutBuffer
from sb3_gpg.gpg.policies import ActorOnlyPolicy, CnnPolicy, MlpPolicy, MultiInputPolicy

SelfGPG = TypeVar("SelfGPG", bound="GPG")

# The no-signal check: over the first rollouts of each learn() call, the share of samples whose advantage the group
# cannot inform (baseline from a bin holding their own trajectory alone, or no baseline at all). Measured on the first
# 3 rollouts: at most 0.14 for every gpg.yml entry and the paper grid's CartPole, LunarLander, HalfCheetah and Hopper
# settings at 1 and 4 envs (LunarLander at 1 env: 0.03-0.64 per rollout, mean 0.31), 1.0 where GPG cannot learn
# (a rollout shorter than an episode at 1 env: n_steps=8 on CartPole, CliffWalking and Acrobot at 128 steps)
SIGNAL_CHECK_ROLLOUTS = 3
NO_SIGNAL_WARNING_SHARE = 0.5


class ForeignPolicyError(ValueError):
    """A policy class that is not an ``ActorOnlyPolicy`` (e.g. a file saved by PPO given to ``GPG.load``)."""


GROUP_ARGUMENTS = ("binning", "bin_size", "leave_one_out", "min_bin_count", "truncated_returns", "advantage_scale")


def _drop_critic_policy_kwargs(policy_kwargs: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """
    :return: the policy kwargs without the critic's settings, and the names of those settings
    """
    policy_kwargs = dict(policy_kwargs or {})
    dropped = []
    net_arch = policy_kwargs.get("net_arch")
    if isinstance(net_arch, list) and len(net_arch) > 0 and isinstance(net_arch[0], dict):
        net_arch = net_arch[0]  # SB3 < 1.8 style: [dict(pi=..., vf=...)]
    if isinstance(net_arch, dict):
        dropped += [f"net_arch['{key}']" for key in net_arch if key != "pi"]
        policy_kwargs["net_arch"] = list(net_arch.get("pi", []))
    for name in ("share_features_extractor", "shared_lstm", "enable_critic_lstm"):  # the last two: RecurrentPPO's
        if name in policy_kwargs:
            dropped.append(name)
            del policy_kwargs[name]
    return policy_kwargs, dropped


class GPG(OnPolicyAlgorithm):
    """
    Group Policy Gradient (GPG): PPO's clipped objective with no critic. The advantage of a sample is its discounted
    Monte-Carlo return minus a group baseline, the mean first-visit return of the rollout's trajectories whose states
    fall into the same bin (see ``GroupRolloutBuffer``).

    Its arguments are PPO's, so that PPO code and hyperparameter files run unchanged; the critic's (``gae_lambda``,
    ``vf_coef``, ``clip_range_vf``, a ``vf`` entry in ``net_arch``, ``share_features_extractor``) are accepted and,
    when set, ignored with one warning.

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy): actor-only policies
    :param env: The environment to learn from (if registered in Gym, can be str)
    :param learning_rate: The learning rate, it can be a function of the current progress remaining (from 1 to 0)
    :param n_steps: The number of steps to run for each environment per update; the group is the whole rollout,
        n_steps * n_envs samples. NOTE: n_steps * n_envs must be greater than 1 (because of the advantage normalization)
    :param batch_size: Minibatch size
    :param n_epochs: Number of epoch when optimizing the surrogate loss
    :param gamma: Discount factor
    :param gae_lambda: PPO's; ignored (GPG's returns are Monte-Carlo)
    :param clip_range: Clipping parameter, it can be a function of the current progress remaining (from 1 to 0).
    :param clip_range_vf: PPO's; ignored (no value function)
    :param normalize_advantage: Whether to normalize or not the advantage (per minibatch, as PPO)
    :param ent_coef: Entropy coefficient for the loss calculation
    :param vf_coef: PPO's; ignored (no value function)
    :param max_grad_norm: The maximum value for the gradient clipping
    :param use_sde: Whether to use generalized State Dependent Exploration (gSDE)
        instead of action noise exploration (default: False)
    :param sde_sample_freq: Sample a new noise matrix every n steps when using gSDE
        Default: -1 (only sample at the beginning of the rollout)
    :param rollout_buffer_class: Rollout buffer class to use, a ``GroupRolloutBuffer`` (sub)class.
        If ``None``, ``GroupRolloutBuffer`` or, for Dict observations, ``GroupDictRolloutBuffer``.
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
    :param binning: which samples share a baseline: ``"time"`` (episode time, the paper's choice),
        ``"rollout_step"``, ``"universal"`` (one bin: REINFORCE++ / GRPO), ``"spatial"``, ``"spatial_time"``,
        ``"state"``, or a callable ``f(obs, t) -> keys`` (see ``GroupRolloutBuffer``)
    :param bin_size: epsilon of the spatial bins, one float or one value per flattened observation dimension
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: a bin holding fewer returns (other trajectories' only, under ``leave_one_out``) takes its
        baseline from the next coarser binning; where even universal holds too few, the advantage is 0
    :param truncated_returns: ``"keep"`` (returns cut by the rollout's end are used as they are, as in the paper),
        ``"mask"`` (such samples are left out of the bins and out of the loss) or ``"bootstrap"`` (completed with the
        group's mean complete return from the bin of the env's next state; see ``GroupRolloutBuffer``)
    :param advantage_scale: ``"none"``, or ``"bin_std"``: each advantage divided by the spread (std) of the
        first-visit returns in its bin, before the per-minibatch normalisation of ``normalize_advantage``
    :param _init_setup_model: Whether or not to build the network at the creation of the instance
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
    policy: ActorOnlyPolicy
    rollout_buffer: GroupRolloutBuffer
    # What MaskableGPG changes: the policies and buffers it needs, and the action spaces it supports
    policy_base: ClassVar[type[BasePolicy]] = ActorOnlyPolicy
    rollout_buffer_classes: ClassVar[tuple[type[GroupRolloutBuffer], type[GroupRolloutBuffer]]] = (
        GroupRolloutBuffer,
        GroupDictRolloutBuffer,
    )
    supported_action_spaces: ClassVar[tuple[type[spaces.Space], ...]] = (
        spaces.Box,
        spaces.Discrete,
        spaces.MultiDiscrete,
        spaces.MultiBinary,
    )

    def __init__(
        self,
        policy: str | type[ActorOnlyPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 3e-4,
        n_steps: int = 2048,
        batch_size: int = 64,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float | None = None,
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
        binning: Binning = "time",
        bin_size: float | Sequence[float] = 1.0,
        leave_one_out: bool = False,
        min_bin_count: int = 1,
        truncated_returns: str = "keep",
        advantage_scale: str = "none",
        _init_setup_model: bool = True,
    ):
        # Check GPG's own arguments before anything is built or stepped
        check_group_arguments(binning, bin_size, min_bin_count, truncated_returns, advantage_scale=advantage_scale)
        clashing = sorted(set(rollout_buffer_kwargs or {}) & set(GROUP_ARGUMENTS))
        if clashing:
            raise ValueError(f"Pass {', '.join(clashing)} to GPG directly, not in rollout_buffer_kwargs.")

        policy_kwargs, ignored = _drop_critic_policy_kwargs(policy_kwargs)
        ppo_only = {"gae_lambda": gae_lambda, "vf_coef": vf_coef, "clip_range_vf": clip_range_vf}
        ignored = [f"{name}={value}" for name, value in ppo_only.items() if value is not None] + ignored
        if ignored:
            warnings.warn(
                f"GPG has no critic, so it ignores these PPO settings: {', '.join(ignored)}. Remove them to silence "
                "this warning.",
                UserWarning,
                stacklevel=2,
            )

        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            n_steps=n_steps,
            gamma=gamma,
            gae_lambda=1.0,  # Monte-Carlo returns; GroupRolloutBuffer does not read it
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

        # Sanity checks as PPO's: advantage normalization of a single sample gives NaN
        if normalize_advantage and batch_size <= 1:
            raise ValueError(
                f"batch_size must be greater than 1 when normalize_advantage=True, got {batch_size}. "
                "See https://github.com/DLR-RM/stable-baselines3/issues/440"
            )
        if self.env is not None:
            buffer_size = self.env.num_envs * self.n_steps
            if normalize_advantage and buffer_size <= 1:
                raise ValueError(
                    f"n_steps * n_envs must be greater than 1 when normalize_advantage=True. "
                    f"Currently n_steps={self.n_steps} and n_envs={self.env.num_envs}"
                )
            untruncated_batches = buffer_size // batch_size
            if buffer_size % batch_size > 0:
                warnings.warn(
                    f"You have specified a mini-batch size of {batch_size},"
                    f" but because the `RolloutBuffer` is of size `n_steps * n_envs = {buffer_size}`,"
                    f" after every {untruncated_batches} untruncated mini-batches,"
                    f" there will be a truncated mini-batch of size {buffer_size % batch_size}\n"
                    f"We recommend using a `batch_size` that is a factor of `n_steps * n_envs`.\n"
                    f"Info: (n_steps={self.n_steps} and n_envs={self.env.num_envs})"
                )
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.clip_range = clip_range
        self.normalize_advantage = normalize_advantage
        self.target_kl = target_kl
        self.binning = binning
        self.bin_size = bin_size
        self.leave_one_out = leave_one_out
        self.min_bin_count = min_bin_count
        self.truncated_returns = truncated_returns
        self.advantage_scale = advantage_scale
        # Group diagnostics of the first rollouts of the current learn() call, for the no-signal check
        self._first_group_stats: list[dict[str, float]] = []

        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        name, base = type(self).__name__, self.policy_base
        if not issubclass(self.policy_class, base):
            raise ForeignPolicyError(
                f"{name} needs an actor-only policy ({base.__module__}.{base.__name__}), got "
                f"{self.policy_class.__name__}: use 'MlpPolicy', 'CnnPolicy' or 'MultiInputPolicy', or subclass "
                f"{base.__name__} for a custom network."
            )
        flat_buffer, dict_buffer = self.rollout_buffer_classes
        if self.rollout_buffer_class is None:
            is_dict = isinstance(self.observation_space, spaces.Dict)
            self.rollout_buffer_class = dict_buffer if is_dict else flat_buffer
        elif not issubclass(self.rollout_buffer_class, self.rollout_buffer_classes):
            raise ValueError(
                f"{name} computes its advantages in a {flat_buffer.__name__}, got rollout_buffer_class="
                f"{self.rollout_buffer_class}: pass a subclass of {flat_buffer.__module__}.{flat_buffer.__name__} (or "
                f"{dict_buffer.__name__}), or leave it None."
            )
        # Set here rather than in __init__, so that a model loaded with other values (GPG.load(..., binning=...)) uses them
        self.rollout_buffer_kwargs = {**self.rollout_buffer_kwargs, **{name: getattr(self, name) for name in GROUP_ARGUMENTS}}
        super()._setup_model()
        self.clip_range = FloatSchedule(self.clip_range)

    def _maybe_recommend_cpu(self, mlp_class_name: str = "ActorOnlyPolicy") -> None:
        super()._maybe_recommend_cpu(mlp_class_name)

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: RolloutBuffer,
        n_rollout_steps: int,
    ) -> bool:
        """
        Collect experiences using the current policy and fill a ``GroupRolloutBuffer``, then log the group's
        diagnostics under ``gpg/``.

        ``OnPolicyAlgorithm.collect_rollouts`` less what only a critic needs: no per-env loop that bootstraps
        time-limit truncations with the value of the terminal observation, no value of the last observation.

        :param env: The training environment
        :param callback: Callback that will be called at each step (and at the beginning and end of the rollout)
        :param rollout_buffer: Buffer to fill with rollouts
        :param n_rollout_steps: Number of experiences to collect per environment
        :return: True if function returned with at least `n_rollout_steps` collected, False if callback terminated
            rollout prematurely.
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
                obs_tensor = obs_as_tensor(self._last_obs, self.device)  # type: ignore[arg-type]
                actions, log_probs, stored_with_step = self._sample_actions(obs_tensor, env)
            actions = actions.cpu().numpy()

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
                self._last_obs,  # type: ignore[arg-type]
                actions,
                rewards,
                self._last_episode_starts,  # type: ignore[arg-type]
                no_values,
                log_probs,
                **stored_with_step,
            )
            self._last_obs = new_obs  # type: ignore[assignment]
            self._last_episode_starts = dones

        rollout_buffer.compute_returns_and_advantage(last_values=no_values, dones=dones, last_obs=self._last_obs)
        for key, value in rollout_buffer.group_stats.items():  # type: ignore[attr-defined]
            self.logger.record(f"gpg/{key}", value)
        if len(self._first_group_stats) < SIGNAL_CHECK_ROLLOUTS:
            self._first_group_stats.append(rollout_buffer.group_stats)  # type: ignore[attr-defined]
            if len(self._first_group_stats) == SIGNAL_CHECK_ROLLOUTS:
                self._warn_if_the_group_gives_no_signal()

        callback.update_locals(locals())

        callback.on_rollout_end()

        return True

    # What MaskableGPG and RecurrentGPG change in the rollout and the update

    def _sample_actions(self, obs_tensor: th.Tensor, env: VecEnv) -> tuple[th.Tensor, th.Tensor, dict[str, Any]]:
        """
        :return: the policy's actions at a rollout step, their log probabilities, and what the rollout buffer stores
            with the step besides SB3's fields (nothing for GPG; MaskableGPG's action masks, RecurrentGPG's LSTM states)
        """
        actions, log_probs = self.policy.sample_actions(obs_tensor)
        return actions, log_probs, {}

    def _evaluate_actions(self, rollout_data: Any, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor | None]:
        """
        :return: log probabilities and entropies of a minibatch's actions under the current policy
        """
        _, log_prob, entropy = self.policy.evaluate_actions(rollout_data.observations, actions)
        return log_prob, entropy

    def _loss_mask(self, rollout_data: Any) -> th.Tensor | None:
        """
        :return: which rows of a minibatch enter the loss (RecurrentGPG's padding of sequences), or None for all
        """
        return None

    def train(self) -> None:
        """
        Update policy using the currently gathered rollout buffer.

        PPO's update loop with the value loss removed: clipped surrogate plus entropy bonus. The means run over the
        rows of ``_loss_mask`` (all but RecurrentGPG's padding), as in RecurrentPPO.
        """
        # Switch to train mode (this affects batch norm / dropout)
        self.policy.set_training_mode(True)
        # Update optimizer learning rate
        self._update_learning_rate(self.policy.optimizer)
        # Compute current clip range
        clip_range = self.clip_range(self._current_progress_remaining)  # type: ignore[operator]

        entropy_losses = []
        pg_losses = []
        clip_fractions = []

        continue_training = True
        # train for n_epochs epochs
        for epoch in range(self.n_epochs):
            approx_kl_divs = []
            # Do a complete pass on the rollout buffer
            for rollout_data in self.rollout_buffer.get(self.batch_size):
                actions = rollout_data.actions
                if isinstance(self.action_space, spaces.Discrete):
                    # Convert discrete action from float to long
                    actions = rollout_data.actions.long().flatten()

                log_prob, entropy = self._evaluate_actions(rollout_data, actions)
                mask = self._loss_mask(rollout_data)
                # Normalize advantage
                advantages = rollout_data.advantages
                # Normalization does not make sense if mini batchsize == 1, see GH issue #325
                if self.normalize_advantage and len(_rows(advantages, mask)) > 1:
                    advantages = (advantages - _rows(advantages, mask).mean()) / (_rows(advantages, mask).std() + 1e-8)

                # ratio between old and new policy, should be one at the first iteration
                ratio = th.exp(log_prob - rollout_data.old_log_prob)

                # clipped surrogate loss
                policy_loss_1 = advantages * ratio
                policy_loss_2 = advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
                policy_loss = -_rows(th.min(policy_loss_1, policy_loss_2), mask).mean()

                # Logging
                pg_losses.append(policy_loss.item())
                clip_fraction = th.mean(_rows((th.abs(ratio - 1) > clip_range).float(), mask)).item()
                clip_fractions.append(clip_fraction)

                # Entropy loss favor exploration
                if entropy is None:
                    # Approximate entropy when no analytical form
                    entropy_loss = -th.mean(_rows(-log_prob, mask))
                else:
                    entropy_loss = -th.mean(_rows(entropy, mask))

                entropy_losses.append(entropy_loss.item())

                loss = policy_loss + self.ent_coef * entropy_loss

                # Calculate approximate form of reverse KL Divergence for early stopping
                # see issue #417: https://github.com/DLR-RM/stable-baselines3/issues/417
                with th.no_grad():
                    log_ratio = log_prob - rollout_data.old_log_prob
                    approx_kl_div = th.mean(_rows((th.exp(log_ratio) - 1) - log_ratio, mask)).cpu().numpy()
                    approx_kl_divs.append(approx_kl_div)

                if self.target_kl is not None and approx_kl_div > 1.5 * self.target_kl:
                    continue_training = False
                    if self.verbose >= 1:
                        print(f"Early stopping at step {epoch} due to reaching max kl: {approx_kl_div:.2f}")
                    break

                # Optimization step
                self.policy.optimizer.zero_grad()
                loss.backward()
                # Clip grad norm
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

        # How much of the return the group baselines explain
        baselines, returns = self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten()
        if self.rollout_buffer.loss_mask is not None:
            baselines, returns = baselines[self.rollout_buffer.loss_mask], returns[self.rollout_buffer.loss_mask]
        explained_var = explained_variance(baselines, returns)

        # Logs
        self.logger.record("train/entropy_loss", np.mean(entropy_losses))
        self.logger.record("train/policy_gradient_loss", np.mean(pg_losses))
        self.logger.record("train/approx_kl", np.mean(approx_kl_divs))
        self.logger.record("train/clip_fraction", np.mean(clip_fractions))
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/explained_variance", explained_var)
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
        self._first_group_stats = []
        super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )
        if 0 < len(self._first_group_stats) < SIGNAL_CHECK_ROLLOUTS:
            self._warn_if_the_group_gives_no_signal()  # a short learn() call: what it has
        return self

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_first_group_stats"]

    def _warn_if_the_group_gives_no_signal(self) -> None:
        """
        Warn (once per ``learn`` call) when most samples of the first rollouts got no signal from their group: their
        baseline was their own trajectory's return, or they had none, so their advantage is 0 or nearly.
        """
        stats = self._first_group_stats
        own = float(np.mean([rollout["own_baseline_share"] for rollout in stats]))
        none = float(np.mean([rollout["no_baseline_share"] for rollout in stats]))
        if own + none <= NO_SIGNAL_WARNING_SHARE:
            return
        trajectories = float(np.mean([rollout["n_trajectories"] for rollout in stats]))
        message = (
            f"GPG's group gives most samples no baseline: over the first {len(stats)} rollout(s), {own:.0%} of the "
            f"samples had only their own trajectory in their bin and {none:.0%} had no baseline, so their advantage is "
            f"0 (or close to it) and they teach the policy nothing. The group is n_steps x n_envs = {self.n_steps} x "
            f"{self.n_envs} samples holding {trajectories:.1f} trajectories per rollout. Fixes, in order: a longer "
            "n_steps (several episodes per env), more envs (n_envs is GPG's group size), a coarser binning ('time' or "
            "'universal'), min_bin_count=2 with leave_one_out=True. PPO settings with short rollouts do not carry "
            "over to GPG."
        )
        warnings.warn(message, UserWarning, stacklevel=3)
        if self.verbose >= 1:
            self.logger.warn(message)

    @classmethod
    def load(cls, path, env=None, device="auto", custom_objects=None, print_system_info=False, force_reset=True, **kwargs):
        """
        ``BaseAlgorithm.load``, with a clear error for a file saved by another algorithm (e.g. PPO).
        """
        try:
            return super().load(path, env, device, custom_objects, print_system_info, force_reset, **kwargs)
        except ForeignPolicyError:
            raise ValueError(foreign_model_message(path, cls.__name__)) from None


def _rows(tensor: th.Tensor, mask: th.Tensor | None) -> th.Tensor:
    """
    :return: the tensor's rows that the mask keeps (all with no mask)
    """
    return tensor if mask is None else tensor[mask]


def foreign_model_message(path: Any, class_name: str) -> str:
    """
    :return: what a file saved by another algorithm holds, and what to do with it
    """
    from stable_baselines3.common.save_util import load_from_zip_file

    data, _, _ = load_from_zip_file(path, load_data=True, print_system_info=False)
    policy_class = (data or {}).get("policy_class")
    policy = f"{policy_class.__module__}.{policy_class.__qualname__}" if isinstance(policy_class, type) else repr(policy_class)
    if policy.startswith("sb3_gpg."):
        saved_by = "MaskableGPG" if "Maskable" in policy else "RecurrentGPG" if "Recurrent" in policy else "GPG"
        return (
            f"{path} holds a model saved by {saved_by} (policy {policy}), not by {class_name}: load it with "
            f"sb3_gpg.{saved_by}.load."
        )
    if "maskable" in policy.lower():
        saved_by = "MaskablePPO"
    elif "recurrent" in policy.lower():
        saved_by = "RecurrentPPO"
    elif policy.endswith("ActorCriticPolicy"):
        saved_by = "PPO or A2C"
    else:
        saved_by = "another algorithm"
    return (
        f"{path} holds a model saved by {saved_by} (policy {policy}), not by {class_name}: load it with the class that "
        f"saved it (e.g. stable_baselines3.PPO.load), or train a {class_name} with the same hyperparameters "
        f"({class_name}('MlpPolicy', env, ...) accepts PPO's arguments). A {class_name} policy has no critic, so PPO's "
        "weights cannot be loaded into it."
    )
