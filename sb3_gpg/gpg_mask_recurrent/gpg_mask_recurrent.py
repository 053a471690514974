from typing import ClassVar, TypeVar

import numpy as np
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import MaybeCallback

from sb3_gpg.common.maskable_recurrent.buffers import (
    MaskableRecurrentGroupDictRolloutBuffer,
    MaskableRecurrentGroupRolloutBuffer,
)
from sb3_gpg.common.maskable_recurrent.policies import MaskableRecurrentActorOnlyPolicy
from sb3_gpg.gpg_mask.gpg_mask import BaseMaskableGPG
from sb3_gpg.gpg_mask_recurrent.policies import CnnLstmPolicy, MlpLstmPolicy, MultiInputLstmPolicy
from sb3_gpg.gpg_recurrent.gpg_recurrent import RecurrentGPG

SelfMaskableRecurrentGPG = TypeVar("SelfMaskableRecurrentGPG", bound="MaskableRecurrentGPG")


class MaskableRecurrentGPG(BaseMaskableGPG, RecurrentGPG):
    """
    Group Policy Gradient with invalid-action masking and an LSTM actor: ``MaskableGPG`` and ``RecurrentGPG`` at
    once, for partially observed tasks whose valid actions change (sb3-contrib has no maskable RecurrentPPO). At every
    rollout step the env's ``action_masks()`` restricts the LSTM policy to the valid actions; the masks are stored
    with the samples beside the LSTM states, and the update replays the LSTM over padded sequences under the same
    masks. Returns, bins, group baselines and advantages are GPG's, with every option.

    Paper: *Group Policy Gradient*, Junhua Chen, Zixi Zhang, Hantao Zhong and Rika Antonova (University of Cambridge),
    Sections 3-4 and Algorithms 1-2 (not online yet, so no link; the docs' index says how to cite it).

    Composed by its MRO: ``BaseMaskableGPG``'s steps draw and evaluate the actions within the masks, handing them to
    ``RecurrentGPG``'s, which replay the LSTM. Its arguments and defaults are RecurrentGPG's constructor's
    (RecurrentPPO's plus GPG's own); ``learn`` and ``predict`` take MaskableGPG's ``use_masking`` and
    ``action_masks``, and ``predict`` the LSTM states as ``RecurrentPPO.predict``.

    :param policy: The policy model to use (MlpLstmPolicy, CnnLstmPolicy, MultiInputLstmPolicy)
    :param env: The environment to learn from (if registered in Gym, can be str); Discrete, MultiDiscrete or
        one-dimensional MultiBinary actions
    :param learning_rate: The learning rate, it can be a function of the current progress remaining (from 1 to 0)
    :param n_steps: The number of steps to run for each environment per update; the group is the whole rollout,
        n_steps * n_envs samples
    :param batch_size: Minibatch size, in samples, as RecurrentPPO's (see ``RecurrentGPG``)
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
    :param use_sde: RecurrentPPO's; must be False (masks are for discrete actions)
    :param sde_sample_freq: RecurrentPPO's; unused without gSDE
    :param target_kl: Limit the KL divergence between updates, because the clipping is not enough to prevent large
        update. By default, there is no limit on the kl div.
    :param stats_window_size: Window size for the rollout logging, specifying the number of episodes to average
        the reported success rate, mean episode length, and mean reward over
    :param tensorboard_log: the log location for tensorboard (if None, no logging)
    :param policy_kwargs: additional arguments to be passed to the policy on creation (``lstm_hidden_size``,
        ``n_lstm_layers``, ``lstm_kwargs``, ...)
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
        "MlpLstmPolicy": MlpLstmPolicy,
        "CnnLstmPolicy": CnnLstmPolicy,
        "MultiInputLstmPolicy": MultiInputLstmPolicy,
    }
    policy: MaskableRecurrentActorOnlyPolicy  # type: ignore[assignment]  # builds on sb3-contrib's RecurrentActorCriticPolicy
    rollout_buffer: MaskableRecurrentGroupRolloutBuffer
    policy_base: ClassVar[type[BasePolicy]] = MaskableRecurrentActorOnlyPolicy
    rollout_buffer_classes = (MaskableRecurrentGroupRolloutBuffer, MaskableRecurrentGroupDictRolloutBuffer)

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """
        Get the policy action and the LSTM's next states from an observation, as ``RecurrentPPO.predict``, within the
        action masks, as ``MaskablePPO.predict``.

        :param observation: the input observation
        :param state: The LSTM's last hidden and cell states (None: zeros)
        :param episode_start: Whether the observations start new episodes (the LSTM states are reset there)
        :param deterministic: Whether or not to return deterministic actions.
        :param action_masks: Action masks to apply to the action distribution (e.g. ``get_action_masks(env)``)
        :return: the model's action and the LSTM's next states
        :raises ValueError: if the masks do not fit the observations or allow no action in some state
        """
        return super().predict(observation, state, episode_start, deterministic, action_masks)

    def learn(  # type: ignore[override]  # MaskablePPO.learn's signature (RecurrentGPG has GPG's)
        self: SelfMaskableRecurrentGPG,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 1,
        tb_log_name: str = "MaskableRecurrentGPG",
        reset_num_timesteps: bool = True,
        use_masking: bool = True,
        progress_bar: bool = False,
    ) -> SelfMaskableRecurrentGPG:
        """
        ``MaskableGPG.learn``: ``use_masking=False`` trains without masks (every action allowed, also in the update).

        :raises ValueError: with ``use_masking=True``, if the env has no ``action_masks`` method
        """
        return super().learn(
            total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, use_masking, progress_bar
        )
