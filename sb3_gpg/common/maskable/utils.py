import numpy as np
from gymnasium import spaces


def mask_sizes(action_space: spaces.Space) -> list[int]:
    """
    :return: the number of mask entries of each sub-action, in sb3-contrib's layout: one per choice of a Discrete
        action, of every MultiDiscrete dimension, and two (0 and 1) per MultiBinary dimension
    """
    if isinstance(action_space, spaces.Discrete):
        return [int(action_space.n)]
    if isinstance(action_space, spaces.MultiDiscrete):
        return [int(n) for n in np.ravel(action_space.nvec)]
    if isinstance(action_space, spaces.MultiBinary) and isinstance(action_space.n, int):
        return [2] * action_space.n
    raise ValueError(
        f"Action masking needs a Discrete, MultiDiscrete or one-dimensional MultiBinary action space, got {action_space}."
    )


def check_action_masks(action_masks: np.ndarray, action_space: spaces.Space, n_envs: int) -> np.ndarray:
    """
    :param action_masks: the masks of ``n_envs`` states (True or 1: the action is allowed)
    :return: the masks as a boolean array of shape (n_envs, total mask size)
    :raises ValueError: if the masks do not fit the action space, or if they allow no action in some state
    """
    sizes = mask_sizes(action_space)
    masks = np.asarray(action_masks)
    if masks.size != n_envs * sum(sizes):
        raise ValueError(
            f"Action masks of shape {masks.shape} do not fit {n_envs} env(s) with action space {action_space}: "
            f"expected {sum(sizes)} entries per env ({' + '.join(map(str, sizes))}: one per choice of each sub-action"
            f"{', two per binary dimension' if isinstance(action_space, spaces.MultiBinary) else ''}), shape "
            f"({n_envs}, {sum(sizes)}). Fix the env's action_masks() method (or the mask function of ActionMasker)."
        )
    masks = masks.reshape(n_envs, sum(sizes)).astype(bool)
    for sub_action, group in enumerate(np.split(masks, np.cumsum(sizes)[:-1], axis=1)):
        stuck = np.flatnonzero(~group.any(axis=1))
        if len(stuck):
            where = f" of sub-action {sub_action}" if len(sizes) > 1 else ""
            raise ValueError(
                f"The action masks allow no action{where} in env(s) {stuck.tolist()}: the masked distribution would "
                "then pick any action, an invalid one included. Let the env's action_masks() allow at least one "
                "action in every state (e.g. a no-op), or end the episode when none is left."
            )
    return masks
