"""
Small tasks that need both a memory and action masks: what is shown at the first step decides the last action, and
which actions are valid changes on the way. Each env has sb3-contrib's ``action_masks()`` method; an invalid action
(taken by an algorithm without masks) ends the episode with a reward of -1.
"""

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class _MaskedMemoryEnv(gym.Env):
    """
    What the two tasks share: a cue (0 or 1) drawn at reset and shown only in the first observation, the valid
    actions of the current state (``action_masks()``), and the rewards: +1 for the action the cue asked for at the
    end, -1 for the other one or for an invalid action, which both end the episode.
    """

    observation_space: spaces.Box
    action_space: spaces.Discrete

    def __init__(self, n_actions: int, n_features: int):
        self.action_space = spaces.Discrete(n_actions)
        # The cue (one-hot, zeros after the first step), then the task's own features
        self.observation_space = spaces.Box(0.0, 1.0, (2 + n_features,), np.float32)
        self.cue, self.t = 0, 0
        self._mask = np.ones(n_actions, dtype=bool)

    def action_masks(self) -> np.ndarray:
        """
        :return: the valid actions of the current state (True: valid)
        """
        return self._mask.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.cue, self.t = int(self.np_random.integers(2)), 0
        self._enter_state()
        return self._observation(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = int(action)
        if not self._mask[action]:
            return self._observation(), -1.0, True, False, {"invalid_action": True}
        self.t += 1
        reward, terminated, truncated = self._move(action)
        if not terminated:
            self._enter_state()
        return self._observation(), reward, terminated, truncated, {}

    def _observation(self) -> np.ndarray:
        cue = np.eye(2, dtype=np.float32)[self.cue] if self.t == 0 else np.zeros(2, dtype=np.float32)
        return np.concatenate([cue, self._features()])

    def _decision(self, action: int) -> float:
        """
        :return: the reward of a final choice between actions 0 and 1
        """
        return 1.0 if action == self.cue else -1.0

    def _enter_state(self) -> None:
        """Set the mask of the state the env has just reached."""
        raise NotImplementedError

    def _move(self, action: int) -> tuple[float, bool, bool]:
        """
        :return: reward, terminated and truncated of a valid action
        """
        raise NotImplementedError

    def _features(self) -> np.ndarray:
        raise NotImplementedError


class MaskedCueEnv(_MaskedMemoryEnv):
    """
    A cue at the first step says which of actions 0 and 1 is right at the last step (+1, the other -1); in between,
    ``n_valid`` of the other actions, drawn afresh at every step, are valid (reward 0). The observation is the cue
    (first step only) and the current mask. Optimal return 1; a policy without memory, or one with a memory shorter
    than the episode, is right half of the time at the end (return 0).

    :param n_actions: number of actions: 0 and 1 for the final choice, the rest for the steps in between
    :param episode_length: steps per episode, the final choice included
    :param n_valid: valid actions at each step in between
    """

    def __init__(self, n_actions: int = 6, episode_length: int = 5, n_valid: int = 2):
        if not 0 < n_valid <= n_actions - 2 or episode_length < 2:
            raise ValueError("Need 0 < n_valid <= n_actions - 2 and an episode of at least 2 steps.")
        super().__init__(n_actions, n_features=n_actions)
        self.episode_length, self.n_valid = episode_length, n_valid

    def _enter_state(self) -> None:
        self._mask[:] = False
        if self.t == self.episode_length - 1:
            self._mask[:2] = True
        else:
            self._mask[2 + self.np_random.choice(self.action_space.n - 2, self.n_valid, replace=False)] = True

    def _move(self, action: int) -> tuple[float, bool, bool]:
        if self.t == self.episode_length:
            return self._decision(action), True, False
        return 0.0, False, False

    def _features(self) -> np.ndarray:
        return self._mask.astype(np.float32)


class MaskedTMazeEnv(_MaskedMemoryEnv):
    """
    Bakker's T-maze with walls as action masks: a corridor of ``corridor_length`` steps from the start to a junction,
    where going up or down ends the episode (+1 where the cue, shown at the start only, pointed, -1 the other way).
    Actions: 0 forward, 1 back, 2 up, 3 down; the mask allows forward (and back past the start) in the corridor, up
    and down at the junction. The observation is the cue (first step only) and where the agent stands: start,
    corridor or junction, so the corridor's cells look alike. Episodes are cut after ``max_steps`` (4 corridor
    lengths by default) with reward 0. Optimal return 1; without memory, or with a memory shorter than the corridor,
    0 at best.

    :param corridor_length: steps from the start to the junction
    :param max_steps: steps before an episode is cut
    """

    FORWARD, BACK, UP, DOWN = range(4)

    def __init__(self, corridor_length: int = 4, max_steps: int | None = None):
        if corridor_length < 1:
            raise ValueError("The corridor needs at least one step.")
        super().__init__(n_actions=4, n_features=3)
        self.corridor_length = corridor_length
        self.max_steps = max_steps or 4 * corridor_length
        self.position = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        self.position = 0
        return super().reset(seed=seed, options=options)

    def _enter_state(self) -> None:
        at_junction = self.position == self.corridor_length
        self._mask[:] = [not at_junction, 0 < self.position < self.corridor_length, at_junction, at_junction]

    def _move(self, action: int) -> tuple[float, bool, bool]:
        if action in (self.UP, self.DOWN):
            return self._decision(action - self.UP), True, False
        self.position += 1 if action == self.FORWARD else -1
        return 0.0, False, self.t >= self.max_steps

    def _features(self) -> np.ndarray:
        place = 0 if self.position == 0 else 2 if self.position == self.corridor_length else 1
        return np.eye(3, dtype=np.float32)[place]


# Registered on import, so that RL Zoo finds them: sb3-gpg train --algo gpg_mask_lstm --env MaskedCue-v0
# --gym-packages sb3_gpg.common.envs
for _name in ("MaskedCue", "MaskedTMaze"):
    if f"{_name}-v0" not in gym.registry:
        gym.register(f"{_name}-v0", entry_point=f"{__name__}:{_name}Env")
