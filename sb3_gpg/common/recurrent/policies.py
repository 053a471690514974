from typing import Any, cast

import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor, FlattenExtractor, NatureCNN
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from torch import nn

from sb3_gpg.common.policies import ActorMlpExtractor, ActorOnlyMixin, actor_net_arch


class RecurrentActorOnlyPolicy(ActorOnlyMixin, RecurrentActorCriticPolicy):
    """
    Policy of RecurrentGPG: the actor of sb3-contrib's ``RecurrentActorCriticPolicy`` (features extractor, one LSTM,
    the policy network, the action head) with no critic LSTM, no critic layer and no value head. ``get_distribution``,
    ``predict(obs, state, episode_start, deterministic)`` and the sequence processing are ``RecurrentActorCriticPolicy``'s.

    :param observation_space: Observation space
    :param action_space: Action space
    :param lr_schedule: Learning rate schedule (could be constant)
    :param net_arch: Layer sizes of the policy network after the LSTM, as a list or as ``dict(pi=[...])``; default
        [64, 64] ([] with ``NatureCNN``)
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
    :param lstm_hidden_size: Number of hidden units of the LSTM
    :param n_lstm_layers: Number of LSTM layers
    :param lstm_kwargs: Additional keyword arguments to pass to the LSTM constructor
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
        lstm_hidden_size: int = 256,
        n_lstm_layers: int = 1,
        lstm_kwargs: dict[str, Any] | None = None,
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
            lstm_hidden_size=lstm_hidden_size,
            n_lstm_layers=n_lstm_layers,
            shared_lstm=True,  # with it, RecurrentActorCriticPolicy builds no critic LSTM and no critic layer
            enable_critic_lstm=False,
            lstm_kwargs=lstm_kwargs,
        )

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = ActorMlpExtractor(
            self.lstm_output_dim,
            net_arch=cast(list[int], self.net_arch),  # actor_net_arch made it a list
            activation_fn=self.activation_fn,
            device=self.device,
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {
            **super()._get_constructor_parameters(),
            "lstm_hidden_size": self.lstm_actor.hidden_size,
            "n_lstm_layers": self.lstm_actor.num_layers,
            "lstm_kwargs": self.lstm_kwargs,
        }

    def sample_actions(  # type: ignore[override]  # sb3-contrib's recurrent arguments (LSTM states), not the mixin's
        self,
        obs: PyTorchObs,
        lstm_states: tuple[th.Tensor, ...],
        episode_starts: th.Tensor,
        deterministic: bool = False,
        **distribution_kwargs,
    ) -> tuple[th.Tensor, th.Tensor, tuple[th.Tensor, ...]]:
        """
        :param obs: Observation
        :param lstm_states: The LSTM's last hidden and cell states
        :param episode_starts: Whether the observations start new episodes (the LSTM states are reset there)
        :param deterministic: Whether to sample or use deterministic actions
        :param distribution_kwargs: what the policy's ``get_distribution`` takes besides the LSTM's arguments
            (``action_masks`` for maskable policies)
        :return: action, its log probability, and the LSTM's new states
        """
        distribution, lstm_states = self.get_distribution(obs, lstm_states, episode_starts, **distribution_kwargs)
        actions = distribution.get_actions(deterministic=deterministic)
        log_prob = distribution.log_prob(actions)
        # gymnasium's Space.shape is optional
        return actions.reshape((-1, *self.action_space.shape)), log_prob, lstm_states  # type: ignore[misc]

    def forward(  # type: ignore[override]  # sb3-contrib's recurrent signature (LSTM states), not the mixin's
        self, obs: th.Tensor, lstm_states: RNNStates, episode_starts: th.Tensor, deterministic: bool = False
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor, RNNStates]:
        """
        :return: action, zeros in place of values (there is no critic), log probability of the action, and the new
            LSTM states (the actor's, in both fields of ``RNNStates``)
        """
        actions, log_prob, states = self.sample_actions(obs, lstm_states.pi, episode_starts, deterministic)
        return actions, self._zero_values(log_prob), log_prob, RNNStates(states, states)

    def evaluate_actions(  # type: ignore[override]  # sb3-contrib's recurrent signature (LSTM states), not the mixin's
        self, obs: th.Tensor, actions: th.Tensor, lstm_states: RNNStates, episode_starts: th.Tensor, **distribution_kwargs
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        """
        :param distribution_kwargs: see ``sample_actions``
        :return: zeros in place of values (there is no critic), log likelihood of taking those actions and entropy of
            the action distribution, with the LSTM replayed from ``lstm_states.pi`` over the sequences
        """
        distribution, _ = self.get_distribution(obs, lstm_states.pi, episode_starts, **distribution_kwargs)
        log_prob = distribution.log_prob(actions)
        return self._zero_values(log_prob), log_prob, distribution.entropy()

    def predict_values(self, obs: PyTorchObs, *args, **kwargs) -> th.Tensor:
        """
        :return: zeros, one per observation: there is no critic (the LSTM arguments are accepted and unused)
        """
        return ActorOnlyMixin.predict_values(self, obs)


class RecurrentActorOnlyCnnPolicy(RecurrentActorOnlyPolicy):
    """
    ``RecurrentActorOnlyPolicy`` with a ``NatureCNN`` features extractor by default, for image observations.
    See ``RecurrentActorOnlyPolicy`` for the parameters.
    """

    def __init__(self, *args, features_extractor_class: type[BaseFeaturesExtractor] = NatureCNN, **kwargs):
        # mypy cannot tell that *args stops before features_extractor_class (mypy#6799)
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)  # type: ignore[misc]


class RecurrentActorOnlyMultiInputPolicy(RecurrentActorOnlyPolicy):
    """
    ``RecurrentActorOnlyPolicy`` with a ``CombinedExtractor`` by default, for Dict observations.
    See ``RecurrentActorOnlyPolicy`` for the parameters.
    """

    def __init__(self, *args, features_extractor_class: type[BaseFeaturesExtractor] = CombinedExtractor, **kwargs):
        # mypy cannot tell that *args stops before features_extractor_class (mypy#6799)
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)  # type: ignore[misc]
