"""
GPG, MaskableGPG and RecurrentGPG in rl_zoo3's registries: the algorithm, the default hyperparameter file, the Optuna
search space and the checks of a hyperparameter entry.
"""

import difflib
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gymnasium import spaces
from torch import nn

from sb3_gpg.common.fitted_baselines import BASELINES
from sb3_gpg.common.group_options import GROUP_OPTION_NAMES, GroupOptions
from sb3_gpg.common.rollout_keys import has_image_space
from sb3_gpg.gpg.gpg import GPG
from sb3_gpg.gpg_mask.gpg_mask import MaskableGPG
from sb3_gpg.gpg_mask_recurrent.gpg_mask_recurrent import MaskableRecurrentGPG
from sb3_gpg.gpg_recurrent.gpg_recurrent import RecurrentGPG

HYPERPARAMS_FOLDER = Path(__file__).parent.parent / "hyperparams"
GPG_HYPERPARAMS = HYPERPARAMS_FOLDER / "gpg.yml"
# --algo name -> the algorithm and its default hyperparameter file
GPG_ALGOS: dict[str, tuple[type[GPG], Path]] = {
    "gpg": (GPG, GPG_HYPERPARAMS),
    "gpg_mask": (MaskableGPG, HYPERPARAMS_FOLDER / "gpg_mask.yml"),
    "gpg_lstm": (RecurrentGPG, HYPERPARAMS_FOLDER / "gpg_lstm.yml"),
    "gpg_mask_lstm": (MaskableRecurrentGPG, HYPERPARAMS_FOLDER / "gpg_mask_lstm.yml"),
}
# Keys of a YAML entry that RL Zoo consumes itself instead of passing them to the algorithm
ZOO_KEYS = {
    "n_envs",
    "n_timesteps",
    "policy",
    "normalize",
    "env_wrapper",
    "vec_env_wrapper",
    "frame_stack",
    "callback",
    "env_kwargs",
    "monitor_kwargs",
}
NET_ARCHS = {"tiny": [64], "small": [64, 64], "medium": [256, 256]}
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
SEARCHED_BINNINGS = ("time", "universal", "spatial", "spatial_time")


class ZooError(Exception):
    """A mistake in the command line or the hyperparameter file, reported in one line."""


def register_gpg() -> None:
    """
    Add GPG, MaskableGPG and RecurrentGPG to rl_zoo3's algorithm, sampler and converter dicts (idempotent; rl_zoo3's
    files are not edited). All three search GPG's space (the LSTM's size is left as the entry sets it).
    """
    from rl_zoo3 import hyperparams_opt, utils

    for name, (algorithm, _) in GPG_ALGOS.items():
        utils.ALGOS[name] = algorithm
        hyperparams_opt.HYPERPARAMS_SAMPLER[name] = sample_gpg_params
        hyperparams_opt.HYPERPARAMS_CONVERTER[name] = convert_gpg_params


def searched_binnings(observation_space: spaces.Space) -> tuple[str, ...]:
    """
    :param observation_space: the observation space of the env the search trains on
    :return: the binnings the search tries: spatial bins round every pixel of an image, so they are left out for
        image observations (see ``GroupRolloutBuffer``)
    """
    return ("time", "universal") if has_image_space(observation_space) else SEARCHED_BINNINGS


def searched_baselines(observation_space: spaces.Space) -> tuple[str, ...]:
    """
    :param observation_space: the observation space of the env the search trains on
    :return: the baselines the search tries: the fitted ones read observations, which images give no features for
    """
    return ("bins",) if has_image_space(observation_space) else BASELINES


def sample_gpg_params(
    trial: Any,
    n_actions: int,
    n_envs: int,
    additional_args: dict,
    binnings: Sequence[str] = SEARCHED_BINNINGS,
    baselines: Sequence[str] = BASELINES,
) -> dict[str, Any]:
    """
    Optuna sampler for GPG: learning rate, n_steps, batch_size, n_epochs, gamma, clip_range, ent_coef, max_grad_norm,
    binning, bin_size, leave_one_out, baseline (bins or fitted; their arguments keep their defaults), gae_lambda and
    network size. Every combination is valid: ``batch_size`` is capped at
    ``n_steps`` (so it fits the rollout of any number of envs and divides it), and ``bin_size`` is only sampled for
    spatial binnings.

    :param trial: the Optuna trial
    :param n_actions: number of actions (unused, RL Zoo's signature)
    :param n_envs: number of envs (unused: every sampled batch size fits one env's rollout)
    :param additional_args: RL Zoo's extra arguments (unused)
    :param binnings: the binnings to choose from (see ``searched_binnings``)
    :param baselines: the baselines to choose from (see ``searched_baselines``)
    :return: GPG keyword arguments
    """
    binning = trial.suggest_categorical("binning", list(binnings))
    sampled = {
        "n_steps_pow": trial.suggest_int("n_steps_pow", 5, 11),
        "batch_size_pow": trial.suggest_int("batch_size_pow", 5, 10),
        "one_minus_gamma": trial.suggest_float("one_minus_gamma", 0.0001, 0.03, log=True),
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 3e-3, log=True),
        "ent_coef": trial.suggest_float("ent_coef", 1e-8, 0.1, log=True),
        "clip_range": trial.suggest_categorical("clip_range", [0.1, 0.2, 0.3, 0.4]),
        "n_epochs": trial.suggest_categorical("n_epochs", [1, 5, 10, 20]),
        "max_grad_norm": trial.suggest_float("max_grad_norm", 0.3, 2.0),
        "binning": binning,
        "leave_one_out": trial.suggest_categorical("leave_one_out", [False, True]),
        "baseline": trial.suggest_categorical("baseline", list(baselines)),
        "gae_lambda": trial.suggest_categorical("gae_lambda", [0.9, 0.95, 0.98, 1.0]),
        "net_arch": trial.suggest_categorical("net_arch", list(NET_ARCHS)),
        "activation_fn": trial.suggest_categorical("activation_fn", list(ACTIVATIONS)),
    }
    if binning.startswith("spatial"):
        sampled["bin_size"] = trial.suggest_categorical("bin_size", [0.2, 0.5, 1.0, 2.0])
    hyperparams = convert_gpg_params(sampled)
    # Show the true values in Optuna's dashboard
    for name in ("gamma", "n_steps", "batch_size"):
        trial.set_user_attr(name, hyperparams[name])
    return hyperparams


def convert_gpg_params(sampled_params: dict[str, Any]) -> dict[str, Any]:
    """
    Turn sampled values (as Optuna stores them) into GPG keyword arguments.

    :param sampled_params: values from ``sample_gpg_params``
    :return: GPG keyword arguments
    """
    hyperparams = dict(sampled_params)
    hyperparams["gamma"] = 1 - hyperparams.pop("one_minus_gamma")
    hyperparams["n_steps"] = 2 ** hyperparams.pop("n_steps_pow")
    hyperparams["batch_size"] = min(2 ** hyperparams.pop("batch_size_pow"), hyperparams["n_steps"])
    policy_kwargs = {
        "net_arch": NET_ARCHS[hyperparams.pop("net_arch")],
        "activation_fn": ACTIVATIONS[hyperparams.pop("activation_fn")],
    }
    return {"policy_kwargs": policy_kwargs, **hyperparams}


def gpg_parameter_names(algorithm: type[GPG] = GPG) -> set[str]:
    """
    :param algorithm: GPG, MaskableGPG or RecurrentGPG
    :return: the keyword arguments the algorithm's constructor accepts from a hyperparameter file
    """
    named = set(inspect.signature(algorithm.__init__).parameters) - {"self", "env", "_init_setup_model", "group_options"}
    return named | set(GROUP_OPTION_NAMES)


def check_gpg_hyperparams(hyperparams: dict[str, Any], where: str, algorithm: type[GPG] = GPG) -> None:
    """
    :param hyperparams: one entry of a hyperparameter file, with the command line's overrides
    :param where: what to name in the error (file and entry)
    :param algorithm: GPG, MaskableGPG or RecurrentGPG
    :raises ZooError: for a key the algorithm does not know or a bad value of GPG's own options
    """
    known = gpg_parameter_names(algorithm)
    unknown = sorted(set(hyperparams) - ZOO_KEYS - known)
    if unknown:
        close = {key: difflib.get_close_matches(key, known | ZOO_KEYS, n=1) for key in unknown}
        hints = ", ".join(f"{key!r}" + (f" (did you mean {match[0]!r}?)" if match else "") for key, match in close.items())
        raise ZooError(f"{where}: {algorithm.__name__} does not know {hints}.")
    try:
        GroupOptions(**{name: value for name, value in hyperparams.items() if name in GROUP_OPTION_NAMES}).check()
    except ValueError as error:
        raise ZooError(f"{where}: {error}") from None
