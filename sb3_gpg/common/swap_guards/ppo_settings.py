"""
PPO's settings under GPG. PPO code and hyperparameter files pass the critic's settings: GPG, which has no critic,
accepts and ignores them with one warning that names them. The settings PPO refuses, the critic's included, GPG
refuses too, with the exception type PPO raises, so that a swap fails where PPO fails.
"""

import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

from sb3_gpg.estimator.auto_lambda import AUTO_LAMBDA
from sb3_gpg.estimator.values import check_real

# Constructor arguments that only PPO's critic reads
CRITIC_ARGUMENTS = ("vf_coef", "clip_range_vf")
# policy_kwargs that only a critic reads; the last two are RecurrentPPO's
CRITIC_POLICY_KWARGS = ("share_features_extractor", "shared_lstm", "enable_critic_lstm")
# Why GPG refuses a setting it ignores, in each message
REFUSES_TOO = "GPG ignores the critic's settings but refuses what {} refuses"


class PPOSettingError(ValueError, AssertionError):
    """
    A setting that PPO, MaskablePPO or RecurrentPPO refuses with an ``AssertionError``: GPG refuses it as well. Also a
    ``ValueError``, so that it is raised under ``python -O`` too (which removes asserts) and caught as bad input.
    """


def check_critic_settings(policy_kwargs: dict[str, Any] | None, clip_range_vf: Any) -> None:
    """
    The checks of the critic's settings in PPO's, MaskablePPO's and RecurrentPPO's constructors and in
    ``RecurrentActorCriticPolicy``'s: GPG ignores these settings, but a value the anchor refuses is a mistake in the
    user's code.

    :param policy_kwargs: the policy keyword arguments given to the algorithm
    :param clip_range_vf: the constructor's ``clip_range_vf``
    :raises PPOSettingError: where the anchor raises an ``AssertionError``
    """
    if clip_range_vf is not None:
        if not isinstance(clip_range_vf, (float, int)) and not callable(clip_range_vf):
            raise PPOSettingError(
                f"clip_range_vf={clip_range_vf!r} is neither a number nor a schedule (a function of the progress "
                f"remaining), which PPO refuses; {REFUSES_TOO.format('PPO')}. Pass a positive float, a schedule, or None."
            )
        if isinstance(clip_range_vf, (float, int)) and clip_range_vf <= 0:
            raise PPOSettingError(
                f"clip_range_vf={clip_range_vf}: PPO refuses a value-function clip range that is not positive; "
                f"{REFUSES_TOO.format('PPO')}. Pass a positive value, or None for no value clipping."
            )
    policy_kwargs = policy_kwargs or {}
    if not policy_kwargs.get("shared_lstm", False):
        return
    if policy_kwargs.get("enable_critic_lstm", True):
        raise PPOSettingError(
            "policy_kwargs shared_lstm=True with enable_critic_lstm=True (RecurrentPPO's default): RecurrentPPO refuses "
            f"a critic that both shares the actor's LSTM and has its own; {REFUSES_TOO.format('RecurrentPPO')}. Add "
            "enable_critic_lstm=False, or remove shared_lstm."
        )
    if not policy_kwargs.get("share_features_extractor", True):
        raise PPOSettingError(
            "policy_kwargs shared_lstm=True with share_features_extractor=False: RecurrentPPO refuses to share the LSTM "
            f"when the features extractor is not shared; {REFUSES_TOO.format('RecurrentPPO')}. Remove one of the two."
        )


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
    :raises PPOSettingError: for a critic setting that PPO refuses (see ``check_critic_settings``)
    """
    check_critic_settings(policy_kwargs, critic_arguments.get("clip_range_vf"))
    policy_kwargs, ignored = drop_critic_policy_kwargs(policy_kwargs)
    ignored = [f"{name}={value}" for name, value in critic_arguments.items() if value is not None] + ignored
    if ignored:
        warnings.warn(
            f"GPG has no critic, so it ignores these PPO settings: {', '.join(ignored)}. Remove them to silence this warning.",
            UserWarning,
            stacklevel=3,
        )
    return policy_kwargs


# check_update_settings' arguments, also the names of the algorithm's attributes that hold them
UPDATE_SETTINGS = ("learning_rate", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef", "max_grad_norm", "target_kl")


def check_update_settings(
    learning_rate: float | Callable[[float], float],
    n_epochs: int,
    gamma: float = 0.99,
    gae_lambda: float | str = 1.0,
    clip_range: float | Callable[[float], float] = 0.2,
    ent_coef: float = 0.0,
    max_grad_norm: float = 0.5,
    target_kl: float | None = None,
) -> None:
    """
    Refuse settings that cannot train (GPG's constructor, before anything is built, and ``learn``): PPO passes a
    negative rate on to torch's Adam, which refuses it from deep in the policy's constructor, trains nothing with a
    zero rate or no epoch, fails at the first update on a fractional number of epochs or on text where a number belongs
    (YAML's ``1e-3``), and trains silently on a discount outside [0, 1] (returns that grow with the horizon, or
    alternate in sign), on a negative clip range (a clamp whose bounds cross, which fixes the ratio at
    ``1 - clip_range``), on a negative ``max_grad_norm`` (torch then scales the gradient by a negative factor: ascent),
    on a negative ``target_kl`` (every epoch stops after its first minibatch) and on an entropy coefficient that is not
    finite (a NaN loss).

    :param learning_rate: the constructor's learning rate, a number or a schedule of the progress remaining (1 to 0)
    :param n_epochs: the constructor's number of epochs
    :param gamma: the discount factor
    :param gae_lambda: GAE's lambda over the baselines, or ``"auto"`` (``sb3_gpg.estimator.auto_lambda``)
    :param clip_range: the clip range, a number or a schedule
    :param ent_coef: the entropy coefficient
    :param max_grad_norm: the gradient's largest norm
    :param target_kl: the approximate KL divergence that stops an update's epochs early, or None
    :raises ValueError: for a setting that is not a number, a rate that is not positive and finite, fewer than one or a
        fractional number of epochs, a ``gamma`` or ``gae_lambda`` outside [0, 1], a negative ``clip_range``,
        ``max_grad_norm`` or ``target_kl``, and an ``ent_coef`` that is not finite; a schedule is read where training
        starts and ends (progress remaining 1 and 0)
    """
    numbers_given: dict[str, Any] = {"gamma": gamma, "ent_coef": ent_coef, "max_grad_norm": max_grad_norm}
    if isinstance(gae_lambda, str) and gae_lambda != AUTO_LAMBDA:
        raise ValueError(
            f"gae_lambda={gae_lambda!r}: pass a number in [0, 1] (1.0: Monte-Carlo advantages) or 'auto' (PPO's 0.95 "
            "where the fitted baselines explain too little of the returns, else 1)."
        )
    if gae_lambda != AUTO_LAMBDA:
        numbers_given["gae_lambda"] = gae_lambda
    for name, value in (("learning_rate", learning_rate), ("clip_range", clip_range), ("target_kl", target_kl)):
        if not callable(value) and value is not None:
            numbers_given[name] = value
    for name, value in numbers_given.items():
        check_real(name, value)
    for name in ("gamma", "gae_lambda"):
        if name not in numbers_given:  # gae_lambda="auto", a valid choice (checked above)
            continue
        value = numbers_given[name]
        if not 0.0 <= value <= 1.0:  # NaN too
            raise ValueError(f"{name}={value!r}: {name} must be in [0, 1] (PPO accepts any value and trains on it).")
    start = learning_rate(1.0) if callable(learning_rate) else learning_rate
    if not (start > 0 and math.isfinite(start)):  # NaN too
        given = f"a schedule whose value at progress 1 is {start!r}" if callable(learning_rate) else repr(learning_rate)
        raise ValueError(
            f"learning_rate={given}: the learning rate must be positive and finite where training starts (a schedule "
            "is read at progress 1, the first update). Pass a positive rate, e.g. 3e-4 (the default), or a schedule "
            "that starts positive."
        )
    if not callable(clip_range) and not clip_range >= 0:  # NaN too
        raise ValueError(
            f"clip_range={clip_range!r}: the clip range must be >= 0, e.g. 0.2 (PPO accepts a negative one and trains on it)."
        )
    _check_schedule_ends("learning_rate", learning_rate)
    _check_schedule_ends("clip_range", clip_range)
    if isinstance(n_epochs, bool) or not isinstance(n_epochs, numbers.Integral) or n_epochs < 1:
        raise ValueError(
            f"n_epochs={n_epochs!r}: each update needs a whole number of epochs over the rollout. Pass n_epochs >= 1."
        )
    if not max_grad_norm >= 0:  # NaN too
        raise ValueError(
            f"max_grad_norm={max_grad_norm!r}: the gradient's norm is clipped to it, so it must be >= 0, e.g. 0.5 (torch "
            "scales the gradient by a negative factor otherwise, and PPO trains on it)."
        )
    if target_kl is not None and not target_kl >= 0:  # NaN too
        raise ValueError(
            f"target_kl={target_kl!r}: pass None (no early stop) or a divergence >= 0, e.g. 0.01 (a negative one stops "
            "every epoch after its first minibatch)."
        )
    if not math.isfinite(ent_coef):
        raise ValueError(
            f"ent_coef={ent_coef!r}: the entropy coefficient must be a finite number, e.g. 0.0 (the loss is NaN otherwise, "
            "and NaN weights train nothing)."
        )


def _check_schedule_ends(name: str, schedule: float | Callable[[float], float]) -> None:
    """
    A schedule at both ends of training: one that turns negative (a linear one given a negative end) is trained on
    silently by PPO (ascent, or a clamp whose bounds cross). One annealed to 0 is accepted, also where it ends a
    rounding error below 0 (SB3's ``LinearSchedule``).

    :param name: the setting (``"learning_rate"``, ``"clip_range"``)
    :param schedule: a number (checked elsewhere) or a schedule of the progress remaining (1 to 0)
    :raises ValueError: for a schedule that starts or ends below 0
    """
    if not callable(schedule):
        return
    start, end = schedule(1.0), schedule(0.0)
    if not (start >= 0 and end >= -1e-9 * abs(start)):  # NaN too
        raise ValueError(
            f"{name}=a schedule from {start!r} (progress remaining 1) to {end!r} (0): the {name.replace('_', ' ')} must "
            "stay >= 0 over training (PPO trains on a negative one). Pass a schedule that stays >= 0, e.g. a linear one "
            "from a positive value to 0."
        )


def check_minibatch_size(
    batch_size: int, n_steps: int, n_envs: int | None, normalize_advantage: bool, warn: bool = True
) -> None:
    """
    PPO's checks of the minibatch size: advantage normalisation of a single sample gives NaN, and a minibatch size
    that does not divide the rollout leaves a truncated minibatch. GPG also refuses a one-sample rollout without
    normalisation, which PPO accepts: it has no group.

    :param batch_size: minibatch size
    :param n_steps: rollout length per env
    :param n_envs: number of envs, None without an env (a model being loaded)
    :param normalize_advantage: whether the advantages are normalised per minibatch
    :param warn: whether to warn, as PPO does, of a minibatch size that does not divide the rollout (once is enough)
    :raises PPOSettingError: for a minibatch or a rollout of one sample with ``normalize_advantage``
    :raises ValueError: for a minibatch of no sample, and for a rollout of one sample without normalisation
    """
    if normalize_advantage and batch_size <= 1:
        raise PPOSettingError(
            f"batch_size must be greater than 1 when normalize_advantage=True, got {batch_size}: the advantages of one "
            "sample normalise to NaN. Pass a larger batch_size, or normalize_advantage=False. "
            "See https://github.com/DLR-RM/stable-baselines3/issues/440"
        )
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: a minibatch needs at least one sample. Pass batch_size >= 1.")
    if n_envs is None:
        return
    buffer_size = n_envs * n_steps
    if buffer_size <= 1:
        raise (PPOSettingError if normalize_advantage else ValueError)(
            f"n_steps * n_envs must be greater than 1, got n_steps={n_steps} and n_envs={n_envs}: GPG's group is the "
            "rollout, and a one-sample rollout has no group (its baseline is its own return, its advantage 0). Pass a "
            "longer n_steps, or more envs."
        )
    untruncated_batches = buffer_size // batch_size
    if warn and buffer_size % batch_size > 0:
        warnings.warn(
            f"You have specified a mini-batch size of {batch_size},"
            f" but because the `RolloutBuffer` is of size `n_steps * n_envs = {buffer_size}`,"
            f" after every {untruncated_batches} untruncated mini-batches,"
            f" there will be a truncated mini-batch of size {buffer_size % batch_size}\n"
            f"We recommend using a `batch_size` that is a factor of `n_steps * n_envs`.\n"
            f"Info: (n_steps={n_steps} and n_envs={n_envs})",
            stacklevel=3,
        )
