"""
sb3-contrib's maskable ``evaluate_policy`` for recurrent policies. Under masks (2.9.2) it keeps the states that
``predict`` returns under another name than the one it passes back, so every step's ``predict`` gets ``state=None``
and an LSTM restarts from zeros at each step: a memory task is then evaluated as if the policy had no memory.
"""

from typing import Any

import gymnasium as gym
import numpy as np
from sb3_contrib.common.maskable.evaluation import evaluate_policy as maskable_evaluate_policy
from stable_baselines3.common.vec_env import VecEnv


class CarriedStates:
    """
    A model whose ``predict`` carries the LSTM states from one call to the next where the caller passes none (the
    first call starts from zeros); everything else is the model's. One evaluation per instance.

    :param model: a MaskableRecurrentGPG (or any model whose ``predict`` takes ``action_masks``)
    """

    def __init__(self, model: Any):
        self.model = model
        self.state: tuple[np.ndarray, ...] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def predict(
        self, observation: np.ndarray | dict[str, np.ndarray], state: tuple[np.ndarray, ...] | None = None, **kwargs: Any
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """
        The model's ``predict`` (same arguments), from ``state`` or, where it is None, from the states the last call
        returned.
        """
        actions, self.state = self.model.predict(observation, self.state if state is None else state, **kwargs)
        return actions, self.state


def evaluate_policy(model: Any, env: gym.Env | VecEnv, *args: Any, **kwargs: Any) -> Any:
    """
    ``sb3_contrib.common.maskable.evaluation.evaluate_policy`` (same arguments and results), with the LSTM states
    carried from step to step (and reset at episode starts) under masks too.

    :param model: a MaskableRecurrentGPG
    :param env: the evaluation env, with an ``action_masks()`` method
    """
    # it calls predict alone
    return maskable_evaluate_policy(CarriedStates(model), env, *args, **kwargs)  # type: ignore[arg-type]
