from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor, FlattenExtractor, NatureCNN
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from torch import nn

from sb3_gpg.common.maskable.utils import check_action_masks
from sb3_gpg.common.policies import ActorOnlyMixin, actor_net_arch


# sb3-contrib's forward and evaluate_actions take action_masks positionally; the mixin's (shared with SB3's) by keyword
class MaskableActorOnlyPolicy(ActorOnlyMixin, MaskableActorCriticPolicy):  # type: ignore[misc]
    """
    Policy of MaskableGPG: the actor of sb3-contrib's ``MaskableActorCriticPolicy`` with no value network and no value
    head. Everything else is ``MaskableActorCriticPolicy``'s: its maskable distributions (Discrete, MultiDiscrete,
    MultiBinary), ``get_distribution(obs, action_masks)`` and ``predict(..., action_masks=...)``.

    ``forward``, ``sample_actions`` and ``evaluate_actions`` take ``action_masks``; the values they return are zeros
    (there is no critic).

    :param observation_space: Observation space
    :param action_space: Action space
    :param lr_schedule: Learning rate schedule (could be constant)
    :param net_arch: Layer sizes of the policy network, as a list or as ``dict(pi=[...])``; default [64, 64]
        ([] with ``NatureCNN``)
    :param activation_fn: Activation function
    :param ortho_init: Whether to use or not orthogonal initialization
    :param use_sde: Must be False (taken because ``OnPolicyAlgorithm`` passes it; masks are for discrete actions)
    :param features_extractor_class: Features extractor to use
    :param features_extractor_kwargs: Keyword arguments to pass to the features extractor
    :param normalize_images: Whether to normalize images or not, dividing by 255.0 (True by default)
    :param optimizer_class: The optimizer to use, ``th.optim.Adam`` by default
    :param optimizer_kwargs: Additional keyword arguments, excluding the learning rate, to pass to the optimizer
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Schedule,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        ortho_init: bool = True,
        use_sde: bool = False,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
    ):
        if use_sde:
            raise ValueError("A maskable policy has discrete actions, so no gSDE: use_sde must be False.")
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            net_arch=actor_net_arch(net_arch, features_extractor_class),
            activation_fn=activation_fn,
            ortho_init=ortho_init,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            share_features_extractor=True,
            normalize_images=normalize_images,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
        )

    def _predict(
        self, observation: PyTorchObs, deterministic: bool = False, action_masks: np.ndarray | None = None
    ) -> th.Tensor:
        """
        ``MaskableActorCriticPolicy._predict``, with the masks checked against the observations: ``predict`` has put
        them in a batch, channel first, so their number is known whatever shape they came in.

        :param observation: the observations, as a batch
        :param deterministic: Whether to use stochastic or deterministic actions
        :param action_masks: Action masks to apply to the action distribution
        :return: Taken action according to the policy
        :raises ValueError: if the masks do not fit the observations or allow no action in some state
        """
        if action_masks is not None:
            first = next(iter(observation.values())) if isinstance(observation, dict) else observation
            action_masks = check_action_masks(action_masks, self.action_space, len(first))
        return super()._predict(observation, deterministic, action_masks)


class MaskableActorOnlyCnnPolicy(MaskableActorOnlyPolicy):
    """
    ``MaskableActorOnlyPolicy`` with a ``NatureCNN`` features extractor by default, for image observations.
    See ``MaskableActorOnlyPolicy`` for the parameters.
    """

    def __init__(self, *args, features_extractor_class: type[BaseFeaturesExtractor] = NatureCNN, **kwargs):
        # mypy cannot tell that *args stops before features_extractor_class (mypy#6799)
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)  # type: ignore[misc]


class MaskableActorOnlyMultiInputPolicy(MaskableActorOnlyPolicy):
    """
    ``MaskableActorOnlyPolicy`` with a ``CombinedExtractor`` by default, for Dict observations.
    See ``MaskableActorOnlyPolicy`` for the parameters.
    """

    def __init__(self, *args, features_extractor_class: type[BaseFeaturesExtractor] = CombinedExtractor, **kwargs):
        # mypy cannot tell that *args stops before features_extractor_class (mypy#6799)
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)  # type: ignore[misc]
