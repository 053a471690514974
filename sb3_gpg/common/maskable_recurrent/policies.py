import numpy as np
import torch as th
from sb3_contrib.common.maskable.distributions import MaskableDistribution, make_masked_proba_distribution
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor, NatureCNN
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule

from sb3_gpg.common.maskable.utils import check_action_masks
from sb3_gpg.common.recurrent.policies import RecurrentActorOnlyPolicy

MaybeMasks = th.Tensor | np.ndarray | None


class _MaskableHead(RecurrentActorCriticPolicy):
    """
    sb3-contrib's masked distributions on a recurrent policy: ``MaskableActorCriticPolicy``'s ``_build`` and action
    head, as SB3's ``_build`` makes heads for SB3's own distributions only. Not a policy of its own: it sits between
    ``ActorOnlyMixin`` and ``RecurrentActorCriticPolicy`` in ``MaskableRecurrentActorOnlyPolicy``'s MRO.
    """

    def _build(self, lr_schedule: Schedule) -> None:
        self.action_dist = make_masked_proba_distribution(self.action_space)
        # it reads only what every actor-critic policy has
        MaskableActorCriticPolicy._build(self, lr_schedule)  # type: ignore[arg-type]

    _get_action_dist_from_latent = MaskableActorCriticPolicy._get_action_dist_from_latent


class MaskableRecurrentActorOnlyPolicy(RecurrentActorOnlyPolicy, _MaskableHead):
    """
    Policy of MaskableRecurrentGPG: ``RecurrentActorOnlyPolicy`` (features extractor, one LSTM, the policy network, no
    critic) with sb3-contrib's maskable distributions (Discrete, MultiDiscrete, MultiBinary) in place of SB3's.

    The recurrent methods (``sample_actions``, ``evaluate_actions``, ``get_distribution``) are
    ``RecurrentActorOnlyPolicy``'s, with ``action_masks`` after the LSTM's arguments: every distribution they make is
    masked by them. ``predict`` takes ``action_masks`` as ``MaskableActorCriticPolicy.predict`` does. See
    ``RecurrentActorOnlyPolicy`` for the parameters (gSDE's do not apply: masks are for discrete actions).
    """

    action_dist: MaskableDistribution
    # The masks of the current predict call, which sb3-contrib's predict does not pass on to _predict
    _predict_masks: MaybeMasks = None

    def get_distribution(  # type: ignore[override]  # sb3-contrib's recurrent signature (LSTM states), not the mixin's
        self, obs: PyTorchObs, lstm_states: tuple[th.Tensor, ...], episode_starts: th.Tensor, action_masks: MaybeMasks = None
    ) -> tuple[MaskableDistribution, tuple[th.Tensor, ...]]:
        """
        ``RecurrentActorCriticPolicy.get_distribution``, masked.

        :param action_masks: one row per observation (True or 1: the action is allowed); None for no masks
        :return: the action distribution and the LSTM's new states
        """
        distribution, lstm_states = super().get_distribution(obs, lstm_states, episode_starts)
        if action_masks is not None:
            distribution.apply_masking(action_masks)
        return distribution, lstm_states

    def _predict(  # type: ignore[override]  # the observations as PyTorch's, Dict ones included
        self,
        observation: PyTorchObs,
        lstm_states: tuple[th.Tensor, th.Tensor],
        episode_starts: th.Tensor,
        deterministic: bool = False,
    ) -> tuple[th.Tensor, tuple[th.Tensor, ...]]:
        """
        ``RecurrentActorCriticPolicy._predict`` under the masks of the ``predict`` call, checked against the
        observations: ``predict`` has put them in a batch, channel first, so their number is known here.
        """
        action_masks = self._predict_masks
        if action_masks is not None:
            first = next(iter(observation.values())) if isinstance(observation, dict) else observation
            action_masks = check_action_masks(np.asarray(action_masks), self.action_space, len(first))
        distribution, new_states = self.get_distribution(observation, lstm_states, episode_starts, action_masks)
        return distribution.get_actions(deterministic=deterministic), new_states

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """
        ``RecurrentActorCriticPolicy.predict`` (same arguments and results) with the action distribution masked by
        ``action_masks`` (one row per observation, e.g. ``get_action_masks(env)``; None for no masks).

        :raises ValueError: if the masks do not fit the observations or allow no action in some state
        """
        self._predict_masks = action_masks
        try:
            return super().predict(observation, state, episode_start, deterministic)
        finally:
            self._predict_masks = None


class MaskableRecurrentActorOnlyCnnPolicy(MaskableRecurrentActorOnlyPolicy):
    """
    ``MaskableRecurrentActorOnlyPolicy`` with a ``NatureCNN`` features extractor by default, for image observations.
    See ``RecurrentActorOnlyPolicy`` for the parameters.
    """

    def __init__(self, *args, features_extractor_class: type[BaseFeaturesExtractor] = NatureCNN, **kwargs):
        # mypy cannot tell that *args stops before features_extractor_class (mypy#6799)
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)  # type: ignore[misc]


class MaskableRecurrentActorOnlyMultiInputPolicy(MaskableRecurrentActorOnlyPolicy):
    """
    ``MaskableRecurrentActorOnlyPolicy`` with a ``CombinedExtractor`` by default, for Dict observations.
    See ``RecurrentActorOnlyPolicy`` for the parameters.
    """

    def __init__(self, *args, features_extractor_class: type[BaseFeaturesExtractor] = CombinedExtractor, **kwargs):
        # mypy cannot tell that *args stops before features_extractor_class (mypy#6799)
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)  # type: ignore[misc]
