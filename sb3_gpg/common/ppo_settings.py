"""
PPO's settings under GPG. PPO code and hyperparameter files pass the critic's settings: GPG, which has no critic,
accepts and ignores them with one warning that names them. The minibatch checks are PPO's own, so that a swap fails
where PPO fails.
"""

import warnings
from typing import Any

# Constructor arguments that only PPO's critic reads
CRITIC_ARGUMENTS = ("gae_lambda", "vf_coef", "clip_range_vf")
# policy_kwargs that only a critic reads; the last two are RecurrentPPO's
CRITIC_POLICY_KWARGS = ("share_features_extractor", "shared_lstm", "enable_critic_lstm")


def drop_critic_policy_kwargs(policy_kwargs: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """
    :param policy_kwargs: the policy keyword arguments given to the algorithm
    :return: the policy kwargs without the critic's settings, and the names of those settings
    """
    policy_kwargs = dict(policy_kwargs or {})
    dropped = []
    net_arch = policy_kwargs.get("net_arch")
    if isinstance(net_arch, list) and len(net_arch) > 0 and isinstance(net_arch[0], dict):
        net_arch = net_arch[0]  # SB3 < 1.8 style: [dict(pi=..., vf=...)]
    if isinstance(net_arch, dict):
        dropped += [f"net_arch['{key}']" for key in net_arch if key != "pi"]
        policy_kwargs["net_arch"] = list(net_arch.get("pi", []))
    for name in CRITIC_POLICY_KWARGS:
        if name in policy_kwargs:
            dropped.append(name)
            del policy_kwargs[name]
    return policy_kwargs, dropped


def ignore_critic_settings(policy_kwargs: dict[str, Any] | None, **critic_arguments: Any) -> dict[str, Any]:
    """
    Warn once about the critic's settings that were set, and remove them from the policy's keyword arguments.

    :param policy_kwargs: the policy keyword arguments given to the algorithm
    :param critic_arguments: the constructor's critic arguments (``CRITIC_ARGUMENTS``), None where not set
    :return: the policy keyword arguments without the critic's settings
    """
    policy_kwargs, ignored = drop_critic_policy_kwargs(policy_kwargs)
    ignored = [f"{name}={value}" for name, value in critic_arguments.items() if value is not None] + ignored
    if ignored:
        warnings.warn(
            f"GPG has no critic, so it ignores these PPO settings: {', '.join(ignored)}. Remove them to silence this warning.",
            UserWarning,
            stacklevel=3,
        )
    return policy_kwargs


def check_minibatch_size(batch_size: int, n_steps: int, n_envs: int | None, normalize_advantage: bool) -> None:
    """
    PPO's checks of the minibatch size: advantage normalisation of a single sample gives NaN, and a minibatch size
    that does not divide the rollout leaves a truncated minibatch.

    :param batch_size: minibatch size
    :param n_steps: rollout length per env
    :param n_envs: number of envs, None without an env (a model being loaded)
    :param normalize_advantage: whether the advantages are normalised per minibatch
    :raises ValueError: for a minibatch or a rollout of one sample with ``normalize_advantage``
    """
    if normalize_advantage and batch_size <= 1:
        raise ValueError(
            f"batch_size must be greater than 1 when normalize_advantage=True, got {batch_size}. "
            "See https://github.com/DLR-RM/stable-baselines3/issues/440"
        )
    if n_envs is None:
        return
    buffer_size = n_envs * n_steps
    if normalize_advantage and buffer_size <= 1:
        raise ValueError(
            f"n_steps * n_envs must be greater than 1 when normalize_advantage=True. "
            f"Currently n_steps={n_steps} and n_envs={n_envs}"
        )
    untruncated_batches = buffer_size // batch_size
    if buffer_size % batch_size > 0:
        warnings.warn(
            f"You have specified a mini-batch size of {batch_size},"
            f" but because the `RolloutBuffer` is of size `n_steps * n_envs = {buffer_size}`,"
            f" after every {untruncated_batches} untruncated mini-batches,"
            f" there will be a truncated mini-batch of size {buffer_size % batch_size}\n"
            f"We recommend using a `batch_size` that is a factor of `n_steps * n_envs`.\n"
            f"Info: (n_steps={n_steps} and n_envs={n_envs})",
            stacklevel=3,
        )
