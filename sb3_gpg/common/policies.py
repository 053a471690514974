import warnings
from collections.abc import Callable, Iterator
from typing import Any, cast

import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    CombinedExtractor,
    FlattenExtractor,
    MlpExtractor,
    NatureCNN,
)
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from torch import nn


class ActorMlpExtractor(MlpExtractor):
    """
    ``MlpExtractor`` with the policy network only: no value network, ``latent_dim_vf`` is 0.

    :param feature_dim: Dimension of the feature vector
    :param net_arch: Layer sizes of the policy network
    :param activation_fn: The activation function to use for the networks
    :param device: PyTorch device
    """

    def __init__(
        self, feature_dim: int, net_arch: list[int], activation_fn: type[nn.Module], device: th.device | str = "auto"
    ) -> None:
        super().__init__(feature_dim, net_arch=dict(pi=net_arch, vf=[]), activation_fn=activation_fn, device=device)
        del self.value_net
        self.latent_dim_vf = 0

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        raise NotImplementedError("ActorMlpExtractor has no critic: call forward_actor()")

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        raise NotImplementedError("ActorMlpExtractor has no critic: call forward_actor()")


def actor_net_arch(net_arch: list[int] | dict[str, list[int]] | None, features_extractor_class: type) -> list[int]:
    """
    :param net_arch: layer sizes of the policy network, as a list or as ``dict(pi=[...])``
    :param features_extractor_class: the policy's features extractor (no layers by default after ``NatureCNN``)
    :return: the policy network's layer sizes
    :raises ValueError: if ``net_arch`` describes a value network
    """
    if isinstance(net_arch, dict):
        if set(net_arch) - {"pi"}:
            raise ValueError(
                f"net_arch={net_arch} describes networks besides the policy's, but this policy has no critic: "
                "pass the policy's layer sizes, e.g. net_arch=[64, 64] or dict(pi=[64, 64])."
            )
        net_arch = net_arch.get("pi", [])
    if net_arch is None:
        net_arch = [] if features_extractor_class == NatureCNN else [64, 64]
    return list(net_arch)


class ActorOnlyMixin:
    """
    What turns an actor-critic policy of SB3 or sb3-contrib into an actor-only one: an ``ActorMlpExtractor``, no value
    head, no critic features extractor, an optimizer over the actor's parameters alone, and zeros wherever values are
    asked for. Put it before the actor-critic class in the bases.
    """

    # What the mixin uses of the actor-critic policy it comes before in the bases (declared for the type checker)
    features_dim: int
    net_arch: list[int] | dict[str, list[int]]
    activation_fn: type[nn.Module]
    device: th.device
    action_space: spaces.Space
    mlp_extractor: MlpExtractor
    value_net: nn.Linear
    vf_features_extractor: BaseFeaturesExtractor
    optimizer_class: type[th.optim.Optimizer]
    optimizer_kwargs: dict[str, Any]
    optimizer: th.optim.Optimizer
    parameters: Callable[..., Iterator[nn.Parameter]]
    # Its signature differs between SB3's and sb3-contrib's policies (action masks, LSTM states)
    get_distribution: Callable[..., Any]

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = ActorMlpExtractor(
            self.features_dim,
            net_arch=cast(list[int], self.net_arch),  # actor_net_arch made it a list (each actor-only policy calls it)
            activation_fn=self.activation_fn,
            device=self.device,
        )

    def _build(self, lr_schedule: Schedule) -> None:
        with warnings.catch_warnings():
            # The actor-critic _build always adds a value head, here with no inputs (latent_dim_vf = 0)
            warnings.filterwarnings("ignore", message="Initializing zero-element tensors")
            super()._build(lr_schedule)  # type: ignore[misc]  # a mixin: the next class in the MRO is the actor-critic policy
        # Drop the value head and the critic's alias of the features extractor, then build the optimizer without them
        del self.value_net, self.vf_features_extractor
        # SB3 types optimizer_class as type[Optimizer], which takes no lr (SB3's _build ignores it too)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    @staticmethod
    def _zero_values(reference: th.Tensor) -> th.Tensor:
        return th.zeros((reference.shape[0], 1), dtype=th.float32, device=reference.device)

    def forward(
        self, obs: th.Tensor, deterministic: bool = False, **distribution_kwargs
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """
        :param obs: Observation
        :param deterministic: Whether to sample or use deterministic actions
        :param distribution_kwargs: what the policy's ``get_distribution`` takes besides obs (``action_masks`` for
            maskable policies)
        :return: action, zeros in place of values (there is no critic), and log probability of the action
        """
        actions, log_prob = self.sample_actions(obs, deterministic, **distribution_kwargs)
        return actions, self._zero_values(log_prob), log_prob

    def sample_actions(
        self, obs: PyTorchObs, deterministic: bool = False, **distribution_kwargs
    ) -> tuple[th.Tensor, th.Tensor]:
        """
        ``forward`` without the zeros in place of values, for GPG's rollout collection.

        :param obs: Observation
        :param deterministic: Whether to sample or use deterministic actions
        :param distribution_kwargs: see ``forward``
        :return: action and log probability of the action
        """
        distribution = self.get_distribution(obs, **distribution_kwargs)
        actions = distribution.get_actions(deterministic=deterministic)
        log_prob = distribution.log_prob(actions)
        # gymnasium's Space.shape is optional
        return actions.reshape((-1, *self.action_space.shape)), log_prob  # type: ignore[misc]

    def evaluate_actions(
        self, obs: PyTorchObs, actions: th.Tensor, **distribution_kwargs
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        """
        :param obs: Observation
        :param actions: Actions
        :param distribution_kwargs: see ``forward``
        :return: zeros in place of values (there is no critic), log likelihood of taking those actions
            and entropy of the action distribution
        """
        distribution = self.get_distribution(obs, **distribution_kwargs)
        log_prob = distribution.log_prob(actions)
        return self._zero_values(log_prob), log_prob, distribution.entropy()

    def predict_values(self, obs: PyTorchObs) -> th.Tensor:
        """
        :param obs: Observation
        :return: zeros, one per observation: there is no critic
        """
        first = next(iter(obs.values())) if isinstance(obs, dict) else obs
        return self._zero_values(first)


class ActorOnlyPolicy(ActorOnlyMixin, ActorCriticPolicy):
    """
    Policy of Group Policy Gradient: the actor of SB3's ``ActorCriticPolicy`` with no value network and no value head,
    so its parameters are the actor's alone. Everything else is ``ActorCriticPolicy``'s (all action distributions,
    gSDE, squashing, orthogonal init, features extractors, ``predict``).

    The methods that return values (``forward``, ``evaluate_actions``, ``predict_values``) return zeros without
    computing anything: with them, SB3's rollout collection bootstraps nothing, so GPG's returns stay Monte-Carlo.

    :param observation_space: Observation space
    :param action_space: Action space
    :param lr_schedule: Learning rate schedule (could be constant)
    :param net_arch: Layer sizes of the policy network, as a list or as ``dict(pi=[...])``; default [64, 64]
        ([] with ``NatureCNN``)
    :param activation_fn: Activation function
    :param ortho_init: Whether to use or not orthogonal initialization
    :param use_sde: Whether to use State Dependent Exploration or not
    :param log_std_init: Initial value for the log standard deviation
    :param full_std: Whether to use (n_features x n_actions) parameters for the std instead of only (n_features,)
        when using gSDE
    :param use_expln: Use ``expln()`` function instead of ``exp()`` to ensure a positive standard deviation (cf paper).
    :param squash_output: Whether to squash the output using a tanh function, only with gSDE
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
        log_std_init: float = 0.0,
        full_std: bool = True,
        use_expln: bool = False,
        squash_output: bool = False,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            net_arch=actor_net_arch(net_arch, features_extractor_class),
            activation_fn=activation_fn,
            ortho_init=ortho_init,
            use_sde=use_sde,
            log_std_init=log_std_init,
            full_std=full_std,
            use_expln=use_expln,
            squash_output=squash_output,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            share_features_extractor=True,
            normalize_images=normalize_images,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
        )


class ActorOnlyCnnPolicy(ActorOnlyPolicy):
    """
    ``ActorOnlyPolicy`` with a ``NatureCNN`` features extractor by default, for image observations.
    See ``ActorOnlyPolicy`` for the parameters.
    """

    def __init__(self, *args, features_extractor_class: type[BaseFeaturesExtractor] = NatureCNN, **kwargs):
        # mypy cannot tell that *args stops before features_extractor_class (mypy#6799)
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)  # type: ignore[misc]


class ActorOnlyMultiInputPolicy(ActorOnlyPolicy):
    """
    ``ActorOnlyPolicy`` with a ``CombinedExtractor`` by default, for Dict observations.
    See ``ActorOnlyPolicy`` for the parameters.
    """

    def __init__(self, *args, features_extractor_class: type[BaseFeaturesExtractor] = CombinedExtractor, **kwargs):
        # mypy cannot tell that *args stops before features_extractor_class (mypy#6799)
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)  # type: ignore[misc]
