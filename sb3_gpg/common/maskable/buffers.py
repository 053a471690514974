from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer

from sb3_gpg.common.buffers import GroupDictRolloutBuffer, GroupRolloutBuffer


# sb3-contrib types add as add(*args, action_masks=...), and get for its own samples
class MaskableGroupRolloutBuffer(GroupRolloutBuffer, MaskableRolloutBuffer):  # type: ignore[misc]
    """
    ``GroupRolloutBuffer`` that also stores the action masks of every sample, as sb3-contrib's
    ``MaskableRolloutBuffer``: ``add(..., action_masks=...)``, and ``get`` yields ``MaskableRolloutBufferSamples``.
    Returns, bins, baselines and advantages are ``BaseGroupRolloutBuffer``'s, with every option.

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Observation space
    :param action_space: Action space: Discrete, MultiDiscrete or one-dimensional MultiBinary
    :param device: PyTorch device
    :param gae_lambda: GAE's lambda over the baselines (see ``BaseGroupRolloutBuffer``)
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param kwargs: GPG's own options (see ``GroupOptions``)
    """


class MaskableGroupDictRolloutBuffer(GroupDictRolloutBuffer, MaskableDictRolloutBuffer):  # type: ignore[misc]  # likewise
    """
    ``MaskableGroupRolloutBuffer`` for Dict observation spaces (``GroupDictRolloutBuffer`` with sb3-contrib's
    ``MaskableDictRolloutBuffer``). See ``MaskableGroupRolloutBuffer`` for the parameters.
    """
