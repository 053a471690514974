from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from sb3_contrib.common.recurrent.buffers import RecurrentDictRolloutBuffer, RecurrentRolloutBuffer
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg.common.buffers import GroupDictRolloutBuffer, GroupRolloutBuffer


class _RecurrentGroup:
    """
    What the recurrent group buffers take from sb3-contrib's recurrent buffer (``recurrent_buffer``) rather than from
    ``GroupRolloutBuffer``: the minibatches of padded sequences, whose ``mask`` also drops the samples that
    ``truncated_returns="mask"`` leaves out of the loss (they stay in their sequences: the LSTM needs them). The
    critic's LSTM states are stored with no width: there is no critic.
    """

    recurrent_buffer: ClassVar[type[RecurrentRolloutBuffer] | type[RecurrentDictRolloutBuffer]]
    loss_mask: np.ndarray | None

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        hidden_state_shape: tuple[int, int, int, int],
        device: Any = "auto",
        gae_lambda: float = 1.0,
        gamma: float = 0.99,
        n_envs: int = 1,
        **kwargs,
    ):
        super().__init__(  # type: ignore[call-arg]
            buffer_size,
            observation_space,
            action_space,
            device,
            gae_lambda,
            gamma,
            n_envs,
            hidden_state_shape=hidden_state_shape,
            **kwargs,
        )

    def reset(self) -> None:
        super().reset()  # type: ignore[misc]
        # No critic LSTM: its slots in sb3-contrib's buffer have no width (half the stored states of RecurrentPPO's)
        no_width = (*self.hidden_state_shape[:-1], 0)  # type: ignore[attr-defined]
        self.hidden_states_vf = np.zeros(no_width, dtype=np.float32)
        self.cell_states_vf = np.zeros(no_width, dtype=np.float32)

    def get(self, batch_size: int | None = None) -> Generator:
        return self.recurrent_buffer.get(self, batch_size)  # type: ignore[arg-type]

    def _get_samples(self, batch_inds: np.ndarray, env_change: np.ndarray, env: VecNormalize | None = None):
        samples = self.recurrent_buffer._get_samples(self, batch_inds, env_change, env)  # type: ignore[arg-type]
        if self.loss_mask is None:
            return samples
        return samples._replace(mask=self.pad_and_flatten(self.loss_mask[batch_inds].astype(np.float32)))  # type: ignore[attr-defined]


class RecurrentGroupRolloutBuffer(_RecurrentGroup, GroupRolloutBuffer, RecurrentRolloutBuffer):  # type: ignore[misc]
    """
    ``GroupRolloutBuffer`` with sb3-contrib's ``RecurrentRolloutBuffer``: the LSTM states stored with every step
    (``add(..., lstm_states=...)``) and minibatches of padded sequences (``RecurrentRolloutBuffer``'s ``get``).
    Returns, bins, baselines and advantages are ``GroupRolloutBuffer``'s, with every option; samples that
    ``truncated_returns="mask"`` leaves out of the loss stay in their sequences with 0 in the samples' ``mask``.

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Observation space
    :param action_space: Action space
    :param hidden_state_shape: Shape of the stored LSTM states, (n_steps, n_lstm_layers, n_envs, lstm_hidden_size)
    :param device: PyTorch device
    :param gae_lambda: Ignored: GPG's returns are Monte-Carlo
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param kwargs: GPG's arguments of ``GroupRolloutBuffer`` (binning, bin_size, leave_one_out, min_bin_count,
        truncated_returns, advantage_scale)
    """

    recurrent_buffer = RecurrentRolloutBuffer


class RecurrentGroupDictRolloutBuffer(_RecurrentGroup, GroupDictRolloutBuffer, RecurrentDictRolloutBuffer):  # type: ignore[misc]
    """
    ``RecurrentGroupRolloutBuffer`` for Dict observation spaces (``GroupDictRolloutBuffer`` with sb3-contrib's
    ``RecurrentDictRolloutBuffer``). See ``RecurrentGroupRolloutBuffer`` for the parameters.
    """

    recurrent_buffer = RecurrentDictRolloutBuffer
