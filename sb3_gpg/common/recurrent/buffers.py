from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from sb3_contrib.common.recurrent.buffers import RecurrentDictRolloutBuffer, RecurrentRolloutBuffer
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg.common.buffers import BaseGroupRolloutBuffer


class _RecurrentGroup:
    """
    What a group buffer needs to sit on sb3-contrib's recurrent buffers (placed before ``BaseGroupRolloutBuffer`` in
    the bases, so that sampling stays sb3-contrib's): the LSTM states' shape, no critic states, and the ``mask`` of
    the padded sequences, which also drops the samples left out of the loss.
    """

    hidden_state_shape: tuple[int, int, int, int]
    in_loss: np.ndarray | None
    pad_and_flatten: ClassVar[Any]

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        hidden_state_shape: tuple[int, int, int, int],
        device: Any = "auto",
        gae_lambda: float | str = 1.0,
        gamma: float = 0.99,
        n_envs: int = 1,
        **kwargs,
    ):
        super().__init__(  # type: ignore[call-arg]  # the next class in the MRO is a rollout buffer
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
        super().reset()  # type: ignore[misc]  # the next class in the MRO is a rollout buffer
        # No critic LSTM: its slots in sb3-contrib's buffer have no width
        no_width = (*self.hidden_state_shape[:-1], 0)
        self.hidden_states_vf = np.zeros(no_width, dtype=np.float32)
        self.cell_states_vf = np.zeros(no_width, dtype=np.float32)

    def _get_samples(self, batch_inds: np.ndarray, env_change: np.ndarray, env: VecNormalize | None = None):
        samples = super()._get_samples(batch_inds, env_change, env)  # type: ignore[misc]  # likewise
        if self.in_loss is None:
            return samples
        return samples._replace(mask=self.pad_and_flatten(self.in_loss[batch_inds].astype(np.float32)))


# sb3-contrib types add as add(*args, lstm_states=...), and _get_samples with env_change
class RecurrentGroupRolloutBuffer(_RecurrentGroup, BaseGroupRolloutBuffer, RecurrentRolloutBuffer):  # type: ignore[misc]
    """
    ``BaseGroupRolloutBuffer`` with sb3-contrib's ``RecurrentRolloutBuffer``: the LSTM states stored with every step
    (``add(..., lstm_states=...)``) and minibatches of padded sequences (``RecurrentRolloutBuffer``'s ``get``).
    Returns, bins, baselines and advantages are ``BaseGroupRolloutBuffer``'s, with every option; samples that
    ``truncated_returns="mask"`` leaves out of the loss stay in their sequences (the LSTM needs them) with 0 in the
    samples' ``mask``. The critic's LSTM states are stored with no width: there is no critic.

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Observation space
    :param action_space: Action space
    :param hidden_state_shape: Shape of the stored LSTM states, (n_steps, n_lstm_layers, n_envs, lstm_hidden_size)
    :param device: PyTorch device
    :param gae_lambda: GAE's lambda over the baselines (see ``BaseGroupRolloutBuffer``)
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param kwargs: GPG's own options (see ``GroupOptions``)
    """


# likewise
class RecurrentGroupDictRolloutBuffer(_RecurrentGroup, BaseGroupRolloutBuffer, RecurrentDictRolloutBuffer):  # type: ignore[misc]
    """
    ``RecurrentGroupRolloutBuffer`` for Dict observation spaces (with sb3-contrib's ``RecurrentDictRolloutBuffer``).
    See ``RecurrentGroupRolloutBuffer`` for the parameters.
    """

    observations: dict[str, np.ndarray]  # type: ignore[assignment]  # SB3's Dict buffers store a dict of arrays
