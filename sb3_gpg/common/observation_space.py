"""
What GPG's estimator needs of an observation space, checked when a group buffer is built: whether the binning and the
fitted baseline can read its observations, its flattened size, and the Box parts the fitted baselines read; and the
spaces no GPG algorithm takes (Tuple spaces, which SB3's policies do not support).
"""

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.preprocessing import get_obs_shape, is_image_space

from sb3_gpg.estimator.binning import Binning
from sb3_gpg.estimator.options import GroupOptions
from sb3_gpg.estimator.rollout_keys import OBSERVATION_BINNINGS


def has_tuple_space(space: spaces.Space) -> bool:
    """
    :return: whether the space is a Tuple space or holds one (a Dict's part, at any depth)
    """
    if isinstance(space, spaces.Dict):
        return any(has_tuple_space(subspace) for subspace in space.spaces.values())
    return isinstance(space, spaces.Tuple)


def check_observation_space(space: spaces.Space, algorithm_name: str = "GPG's group buffer") -> None:
    """
    Refuse the observation spaces no GPG algorithm takes, before SB3 fails on them deeper in (its ``get_obs_shape`` or
    its policies' preprocessing raise a bare ``NotImplementedError``).

    :param space: the observation space the algorithm, or its group buffer, is built on
    :param algorithm_name: who refuses it, named in the message (the algorithm's class name)
    :raises ValueError: for a Tuple space, or a Dict space with a Tuple part, naming what to use instead
    """
    if not has_tuple_space(space):
        return
    if isinstance(space, spaces.Dict):
        parts = [key for key, subspace in space.spaces.items() if has_tuple_space(subspace)]
        given = f"a Dict observation space whose {', '.join(map(repr, parts))} part is a Tuple space"
    else:
        given = "a Tuple observation space"
    raise ValueError(
        f"{algorithm_name} got {given} ({space}): Tuple spaces are not supported by SB3's policies (nor by GPG's "
        "rollout buffers). Use a Dict space instead: a gymnasium.ObservationWrapper that maps the tuple's parts to "
        "keys of a Dict (each part its own top-level key: nested spaces are not supported either), with "
        "'MultiInputPolicy'; or gymnasium.wrappers.FlattenObservation, which makes the whole observation one Box, "
        "with 'MlpPolicy'."
    )


def is_discrete_space(space: spaces.Space) -> bool:
    """
    :return: whether every observation of the space is integer-valued
    """
    if isinstance(space, spaces.Dict):
        return all(is_discrete_space(subspace) for subspace in space.spaces.values())
    if isinstance(space, spaces.Box):
        return np.issubdtype(space.dtype, np.integer)
    return isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary))


def has_image_space(space: spaces.Space) -> bool:
    """
    :return: whether the space, or one of a Dict space's subspaces, holds images
    """
    if isinstance(space, spaces.Dict):
        return any(has_image_space(subspace) for subspace in space.spaces.values())
    return is_image_space(space, check_channels=False)


def flat_obs_dim(space: spaces.Space) -> int:
    """
    :return: the number of values of one flattened observation (all keys' of a Dict space)
    """
    if isinstance(space, spaces.Dict):
        return sum(flat_obs_dim(subspace) for subspace in space.spaces.values())
    return int(np.prod(get_obs_shape(space)))  # type: ignore[arg-type]  # a Dict's shape is a dict; handled above


def check_observation_binning(binning: Binning, observation_space: spaces.Space, baseline: str = "bins") -> None:
    """
    :raises ValueError: for a binning or a fitted baseline that reads observations the space cannot give it (images;
        continuous values for state binning), naming what works
    """
    if baseline != "bins" and not has_features(observation_space):
        raise ValueError(
            f"baseline={baseline!r} fits the returns on the Box observations (a Dict's Box parts), which "
            f"{observation_space} does not give usable features for (images, or no Box part). Use baseline='bins' "
            "with binning='time', 'universal' or 'rollout_step' ('state' for discrete observations), or a callable "
            "binning f(obs, t) -> keys on features you choose."
        )
    if callable(binning) or binning not in OBSERVATION_BINNINGS:
        return
    if has_image_space(observation_space):
        if isinstance(observation_space, spaces.Dict):
            images = [key for key, space in observation_space.spaces.items() if has_image_space(space)]
            observations = f"a Dict observation whose {', '.join(map(repr, images))} part holds images"
            choose = "on the Box parts you choose (obs is a dict of arrays)"
        else:
            observations, choose = "image observations", "on features you choose"
        raise ValueError(
            f"{binning} binning on {observations} puts almost every sample in a bin of its own (one cell per "
            f"pixel value), so the baselines equal the returns and the advantages vanish. Use binning='time', or "
            f"a callable f(obs, t) -> keys {choose}."
        )
    if binning == "state" and not is_discrete_space(observation_space):
        raise ValueError(
            f"state binning needs a discrete observation space (Discrete, MultiDiscrete, MultiBinary or an integer "
            f"Box), got {observation_space}. For continuous observations use binning='spatial' or 'spatial_time' "
            "with a bin_size."
        )


def has_features(observation_space: spaces.Space) -> bool:
    """
    :return: whether the fitted baselines can read the space's observations: Box values (a Dict's Box parts), no images
    """
    return not has_image_space(observation_space) and bool(box_keys(observation_space))


def box_keys(observation_space: spaces.Space) -> list[str | None]:
    """
    :return: the keys of a Dict space's Box parts ([None] for a Box space itself): what the fitted baselines read
    """
    if isinstance(observation_space, spaces.Dict):
        return [key for key, space in observation_space.spaces.items() if isinstance(space, spaces.Box)]
    return [None] if isinstance(observation_space, spaces.Box) else []


def options_for_space(options: GroupOptions, observation_space: spaces.Space) -> GroupOptions:
    """
    :param options: the estimator's options, as given
    :param observation_space: the observations the estimator will read
    :return: the options made concrete for these observations (``baseline="auto"`` resolved) and checked
    :raises ValueError: for an option these observations cannot serve, naming what works; for a Tuple space
        (``check_observation_space``)
    """
    check_observation_space(observation_space)
    resolved = options.resolved(has_features(observation_space)).checked(flat_obs_dim(observation_space))
    check_observation_binning(resolved.binning, observation_space, resolved.baseline)
    return resolved
