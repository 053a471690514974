"""
The rollout and the update of every GPG variant, one loop each: ``OnPolicyAlgorithm``'s rollout without the critic's
values, and PPO's clipped update without the value loss. The variants change them through three hooks
(``_sample_actions``, ``_evaluate_actions``, ``_rows_in_loss``), composed by their MRO.
"""

import warnings
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg.common.buffers import BaseGroupRolloutBuffer
from sb3_gpg.common.policies import ActorOnlyPolicy
from sb3_gpg.common.swap_guards.no_signal import NoSignalCheck
from sb3_gpg.common.swap_guards.speed_hints import recommend_cpu

# The group's diagnostics that verbose=1 prints, beside train/baseline_explained_variance (verbose=2 prints all of them;
# TensorBoard, CSV and JSON logs get all): the group's size, the share of samples it gives no signal, and where the
# linear baseline has a pooled candidate (``pooled_memory``), the share of folds that took it
SHOWN_DIAGNOSTICS = ("n_trajectories", "zero_advantage_share", "pooled_share")


class ActorOnlyOnPolicyAlgorithm(OnPolicyAlgorithm):
    """
    What every GPG variant runs, whatever its constructor (``GPG``'s): ``collect_rollouts`` fills a group rollout
    buffer, which computes the advantages, and ``train`` is PPO's clipped update less the value loss. No constructor of
    its own; ``GPG`` sets the update's settings below.
    """

    policy: ActorOnlyPolicy
    rollout_buffer: BaseGroupRolloutBuffer
    # PPO's update settings (set by GPG's constructor; clip_range a schedule once the model is set up)
    batch_size: int
    n_epochs: int
    clip_range: float | Schedule
    normalize_advantage: bool
    target_kl: float | None
    _no_signal_check: NoSignalCheck

    def _stdout_exclusion(self, shown: bool = False) -> tuple[str, ...]:
        """
        :param shown: whether the row is one that ``verbose=1`` prints
        :return: the ``exclude`` of a ``gpg/`` row: printed at ``verbose=2``, and at ``verbose=1`` where ``shown``;
            TensorBoard, CSV and JSON logs get every row
        """
        return () if shown or self.verbose >= 2 else ("stdout",)

    def _maybe_recommend_cpu(self, mlp_class_name: str = "ActorOnlyPolicy") -> None:
        """
        SB3's advice to run an MLP policy on the CPU, in GPG's words (``speed_hints.recommend_cpu``).

        :param mlp_class_name: SB3's; unused: GPG's ``MlpPolicy`` is told by its name in ``policy_aliases``
        """
        recommend_cpu(self)

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


def _rows(tensor: th.Tensor, in_loss: th.Tensor | None) -> th.Tensor:
    """
    :return: the tensor's rows that enter the loss (all where ``in_loss`` is None)
    """
    return tensor if in_loss is None else tensor[in_loss]
