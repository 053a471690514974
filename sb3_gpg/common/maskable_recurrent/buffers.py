from collections.abc import Callable, Generator
from typing import NamedTuple

import numpy as np
import torch as th
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.type_aliases import TensorDict
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg.common.recurrent.buffers import RecurrentGroupDictRolloutBuffer, RecurrentGroupRolloutBuffer


class MaskableRecurrentRolloutBufferSamples(NamedTuple):
    """sb3-contrib's recurrent samples (padded sequences) with the action masks of their rows."""

    observations: th.Tensor | TensorDict
    actions: th.Tensor
    old_values: th.Tensor
    old_log_prob: th.Tensor
    advantages: th.Tensor
    returns: th.Tensor
    lstm_states: RNNStates
    episode_starts: th.Tensor
    mask: th.Tensor
    action_masks: th.Tensor


class _MaskSequences:
    """
    The action masks in sequences: sb3-contrib's recurrent buffers flatten and pad the fields they know, which the
    masks of sb3-contrib's maskable buffers are not. Placed first in the bases, before the recurrent group buffer and
    then sb3-contrib's maskable buffer, which stores the masks (``add(..., action_masks=...)``).
    """

    action_masks: np.ndarray
    mask_dims: int
    generator_ready: bool
    swap_and_flatten: Callable[[np.ndarray], np.ndarray]
    pad: Callable[..., th.Tensor]

    def get(self, batch_size: int | None = None) -> Generator[MaskableRecurrentRolloutBufferSamples, None, None]:
        if not self.generator_ready:  # flattened in the order the recurrent buffer's get flattens the rest
            self.action_masks = self.swap_and_flatten(self.action_masks)
        yield from super().get(batch_size)  # type: ignore[misc]  # the next class in the MRO is a rollout buffer

    def _get_samples(
        self, batch_inds: np.ndarray, env_change: np.ndarray, env: VecNormalize | None = None
    ) -> MaskableRecurrentRolloutBufferSamples:
        samples = super()._get_samples(batch_inds, env_change, env)  # type: ignore[misc]  # likewise
        # Padding rows allow every action, so that their distribution is well defined; the samples' mask drops them
        action_masks = self.pad(self.action_masks[batch_inds], padding_value=1.0).reshape(-1, self.mask_dims)
        return MaskableRecurrentRolloutBufferSamples(**samples._asdict(), action_masks=action_masks)


# sb3-contrib types add, get and _get_samples for its own buffers
class MaskableRecurrentGroupRolloutBuffer(_MaskSequences, RecurrentGroupRolloutBuffer, MaskableRolloutBuffer):  # type: ignore[misc]
    """
    ``RecurrentGroupRolloutBuffer`` (GPG's returns, bins and advantages with every option; the LSTM states stored with
    every step, ``add(..., lstm_states=...)``; minibatches of padded sequences) that also stores the action masks of
    every step, as sb3-contrib's ``MaskableRolloutBuffer`` (``add(..., action_masks=...)``), and yields them padded
    into the sequences with their samples (``MaskableRecurrentRolloutBufferSamples.action_masks``).

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Observation space
    :param action_space: Action space: Discrete, MultiDiscrete or one-dimensional MultiBinary
    :param hidden_state_shape: Shape of the stored LSTM states, (n_steps, n_lstm_layers, n_envs, lstm_hidden_size)
    :param device: PyTorch device
    :param gae_lambda: GAE's lambda over the group baselines (1: Monte-Carlo advantages; see ``GroupOptions``)
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param kwargs: GPG's own options (see ``GroupOptions``)
    """


# likewise
class MaskableRecurrentGroupDictRolloutBuffer(_MaskSequences, RecurrentGroupDictRolloutBuffer, MaskableDictRolloutBuffer):  # type: ignore[misc]
    """
    ``MaskableRecurrentGroupRolloutBuffer`` for Dict observation spaces (``RecurrentGroupDictRolloutBuffer`` with
    sb3-contrib's ``MaskableDictRolloutBuffer``). See ``MaskableRecurrentGroupRolloutBuffer`` for the parameters.
    """

    observations: dict[str, np.ndarray]  # type: ignore[assignment]  # SB3's Dict buffers store a dict of arrays
