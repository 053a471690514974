import gymnasium as gym
import numpy as np


class ActionMaskFromInfo(gym.Wrapper):
    """
    Gives an env that reports its valid actions in ``info`` (Gymnasium's Taxi: ``info["action_mask"]``) the
    ``action_masks()`` method that sb3-contrib's masking reads (``get_action_masks``, ``MaskableEvalCallback``,
    MaskablePPO and MaskableGPG), e.g. as the ``env_wrapper`` of an RL Zoo entry.

    :param env: the env to wrap
    :param key: the ``info`` key holding the mask of the current state
    """

    def __init__(self, env: gym.Env, key: str = "action_mask"):
        super().__init__(env)
        self.key = key
        self._action_mask: np.ndarray | None = None

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        self._keep_mask(info)
        return observation, info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._keep_mask(info)
        return observation, reward, terminated, truncated, info

    def _keep_mask(self, info: dict) -> None:
        if self.key not in info:
            raise KeyError(
                f"ActionMaskFromInfo: the env's info has no {self.key!r} key (keys: {sorted(info)}); pass the key that "
                "holds the mask (ActionMaskFromInfo(env, key=...)), or use sb3_contrib's ActionMasker with a mask function."
            )
        self._action_mask = np.asarray(info[self.key], dtype=bool)

    def action_masks(self) -> np.ndarray:
        """
        :return: the valid actions of the current state, as the env's last ``info`` gave them
        """
        if self._action_mask is None:
            raise RuntimeError("ActionMaskFromInfo: reset the env before asking for its action masks.")
        return self._action_mask
