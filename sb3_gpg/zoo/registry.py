"""
GPG, MaskableGPG and RecurrentGPG in rl_zoo3's registries: the algorithm, the default hyperparameter file, the Optuna
search space and the checks of a hyperparameter entry.
"""

import difflib
import inspect
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gymnasium import spaces
from torch import nn

from sb3_gpg.common.observation_space import has_image_space
from sb3_gpg.common.swap_guards.foreign_policies import unknown_policy_name
from sb3_gpg.common.swap_guards.ppo_settings import UPDATE_SETTINGS, check_minibatch_size, check_update_settings
from sb3_gpg.estimator.fitted_baselines import BASELINES
from sb3_gpg.estimator.options import GROUP_OPTION_NAMES, GroupOptions
from sb3_gpg.estimator.values import check_real
from sb3_gpg.gpg.gpg import GPG
from sb3_gpg.gpg_mask.gpg_mask import MaskableGPG
from sb3_gpg.gpg_mask_recurrent.gpg_mask_recurrent import MaskableRecurrentGPG
from sb3_gpg.gpg_recurrent.gpg_recurrent import RecurrentGPG
from sb3_gpg.zoo.cli import ZooError

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


# The group sizes and the largest rollout the search tries: a rollout of 64 envs x 2,048 steps would leave a trial of a
# few hundred thousand steps with one or two updates
SEARCHED_N_ENVS_POW = (2, 6)
MAX_ROLLOUT_POW = 15


def sample_gpg_rollout(trial: Any, observation_space: spaces.Space) -> dict[str, Any]:
    """
    Optuna sampler for the RL Zoo keys that shape GPG's group: ``n_envs`` (the group size) and ``normalize`` (only for
    Box observations, which VecNormalize can scale). rl_zoo3 builds the envs from these before it calls
    ``sample_gpg_params``, so ``ZooExperimentManager`` samples them first.

    :param trial: the Optuna trial
    :param observation_space: the observation space of the env the search trains on
    :return: ``n_envs`` and, for Box observations, ``normalize``
    """
    sampled: dict[str, Any] = {"n_envs_pow": trial.suggest_int("n_envs_pow", *SEARCHED_N_ENVS_POW)}
    if isinstance(observation_space, spaces.Box) and not has_image_space(observation_space):
        sampled["normalize"] = trial.suggest_categorical("normalize", [False, True])
    return convert_gpg_params(sampled)


def sample_gpg_params(
    trial: Any,
    n_actions: int,
    n_envs: int,
    additional_args: dict,
    binnings: Sequence[str] = SEARCHED_BINNINGS,
    baselines: Sequence[str] = BASELINES,
) -> dict[str, Any]:
    """
    Optuna sampler for GPG, wide enough to hold RL Zoo's PPO entries: n_steps (the rollout of all envs capped at
    ``2**MAX_ROLLOUT_POW``), batch_size, n_epochs, gamma (0.9-0.9999), learning rate and its schedule, clip_range,
    target_kl, ent_coef, max_grad_norm, binning, bin_size, leave_one_out, baseline (bins or fitted; their arguments keep
    their defaults), gae_lambda, truncated_returns, network size and activation, orthogonal initialisation and the
    Gaussian's initial log std. Every combination is valid: ``batch_size`` is the largest power of two up to the sampled one
    that divides the rollout, and ``bin_size`` is only sampled for spatial binnings.

    :param trial: the Optuna trial
    :param n_actions: number of actions (unused, RL Zoo's signature)
    :param n_envs: number of envs, which caps n_steps
    :param additional_args: RL Zoo's extra arguments (unused)
    :param binnings: the binnings to choose from (see ``searched_binnings``)
    :param baselines: the baselines to choose from (see ``searched_baselines``)
    :return: GPG keyword arguments
    """
    binning = trial.suggest_categorical("binning", list(binnings))
    sampled = {
        "n_envs": n_envs,
        "n_steps_pow": trial.suggest_int("n_steps_pow", 5, 11),
        "batch_size_pow": trial.suggest_int("batch_size_pow", 5, 12),
        "one_minus_gamma": trial.suggest_float("one_minus_gamma", 0.0001, 0.1, log=True),
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 3e-3, log=True),
        "lr_schedule": trial.suggest_categorical("lr_schedule", ["constant", "linear"]),
        "ent_coef": trial.suggest_float("ent_coef", 1e-8, 0.1, log=True),
        "clip_range": trial.suggest_categorical("clip_range", [0.1, 0.2, 0.3, 0.4]),
        "target_kl": trial.suggest_categorical("target_kl", [None, 0.01, 0.03, 0.1]),
        "n_epochs": trial.suggest_categorical("n_epochs", [1, 5, 10, 20]),
        "max_grad_norm": trial.suggest_float("max_grad_norm", 0.3, 5.0, log=True),
        "binning": binning,
        "leave_one_out": trial.suggest_categorical("leave_one_out", [False, True]),
        "baseline": trial.suggest_categorical("baseline", list(baselines)),
        "gae_lambda": trial.suggest_categorical("gae_lambda", [0.8, 0.9, 0.95, 0.98, 1.0]),
        "truncated_returns": trial.suggest_categorical("truncated_returns", ["keep", "mask", "bootstrap"]),
        "net_arch": trial.suggest_categorical("net_arch", list(NET_ARCHS)),
        "activation_fn": trial.suggest_categorical("activation_fn", list(ACTIVATIONS)),
        "ortho_init": trial.suggest_categorical("ortho_init", [False, True]),
        "log_std_init": trial.suggest_float("log_std_init", -3.0, 0.0),
    }
    if binning.startswith("spatial"):
        sampled["bin_size"] = trial.suggest_categorical("bin_size", [0.2, 0.5, 1.0, 2.0])
    hyperparams = convert_gpg_params(sampled)
    hyperparams.pop("n_envs")
    # Show the true values in Optuna's dashboard
    for name in ("gamma", "n_steps", "batch_size"):
        trial.set_user_attr(name, hyperparams[name])
    return hyperparams


def convert_gpg_params(sampled_params: dict[str, Any]) -> dict[str, Any]:
    """
    Turn sampled values (as Optuna stores them) into GPG keyword arguments, and the RL Zoo keys ``n_envs`` and
    ``normalize`` where they were sampled (rl_zoo3 reads a trial's params back with this for ``--trial-id``).

    :param sampled_params: values from ``sample_gpg_rollout`` and ``sample_gpg_params``; ``n_envs`` may be given as
        it is, to cap ``n_steps``
    :return: GPG keyword arguments, with ``n_envs`` where it was sampled or given and ``normalize`` where sampled;
        ``baseline_kwargs=None`` where the baseline was sampled, so that neither a search nor ``--trial-id`` gives it
        the entry's
    """
    from rl_zoo3.utils import linear_schedule

    hyperparams = dict(sampled_params)
    if "n_envs_pow" in hyperparams:
        hyperparams["n_envs"] = 2 ** hyperparams.pop("n_envs_pow")
    if "n_steps_pow" not in hyperparams:  # the rollout's keys alone
        return hyperparams
    n_envs = hyperparams.get("n_envs", 1)
    hyperparams["gamma"] = 1 - hyperparams.pop("one_minus_gamma")
    hyperparams["n_steps"] = min(2 ** hyperparams.pop("n_steps_pow"), max(2**MAX_ROLLOUT_POW // n_envs, 1))
    # The largest power of two up to the sampled one that divides the rollout
    hyperparams["batch_size"] = math.gcd(2 ** hyperparams.pop("batch_size_pow"), hyperparams["n_steps"] * n_envs)
    if "baseline" in hyperparams:  # the sampled baseline's own arguments, not the entry's (maybe another baseline's)
        hyperparams["baseline_kwargs"] = None
    if hyperparams.pop("lr_schedule", "constant") == "linear":
        hyperparams["learning_rate"] = linear_schedule(hyperparams["learning_rate"])
    policy_kwargs = {
        "net_arch": NET_ARCHS[hyperparams.pop("net_arch")],
        "activation_fn": ACTIVATIONS[hyperparams.pop("activation_fn")],
    }
    for name in ("ortho_init", "log_std_init"):
        if name in hyperparams:
            policy_kwargs[name] = hyperparams.pop(name)
    return {"policy_kwargs": policy_kwargs, **hyperparams}


def gpg_parameter_names(algorithm: type[GPG] = GPG) -> set[str]:
    """
    :param algorithm: GPG, MaskableGPG or RecurrentGPG
    :return: the keyword arguments the algorithm's constructor accepts from a hyperparameter file
    """
    return set(inspect.signature(algorithm.__init__).parameters) - {"self", "env", "_init_setup_model"}


def check_gpg_hyperparams(hyperparams: dict[str, Any], where: str, algorithm: type[GPG] = GPG) -> GroupOptions:
    """
    :param hyperparams: one entry of a hyperparameter file, with the command line's overrides
    :param where: what to name in the error (file and entry)
    :param algorithm: GPG, MaskableGPG or RecurrentGPG
    :return: the entry's estimator options, as given (what the observations can serve is checked once the envs exist)
    :raises ZooError: for a key the algorithm does not know or a bad value of GPG's own options
    """
    known = gpg_parameter_names(algorithm)
    unknown = sorted(set(hyperparams) - ZOO_KEYS - known)
    if unknown:
        close = {key: difflib.get_close_matches(key, known | ZOO_KEYS, n=1) for key in unknown}
        hints = ", ".join(f"{key!r}" + (f" (did you mean {match[0]!r}?)" if match else "") for key, match in close.items())
        raise ZooError(f"{where}: {algorithm.__name__} does not know {hints}.")
    options = GroupOptions(**{name: value for name, value in hyperparams.items() if name in GROUP_OPTION_NAMES})
    try:
        for name in ("learning_rate", "clip_range"):
            # rl_zoo3 reads text as a linear schedule ("lin_3e-4"), and fails with a traceback on text without "_", as
            # YAML's "3e-4"
            if isinstance(hyperparams.get(name), str) and "_" not in hyperparams[name]:
                check_real(name, hyperparams[name])
        options.checked()
    except ValueError as error:
        raise ZooError(f"{where}: {error}") from None
    return options


def algo_names() -> str:
    """:return: which ``--algo`` each of GPG's classes is, for an error on the command line that names a class"""
    return ", ".join(f"{algorithm.__name__} is --algo {algo}" for algo, (algorithm, _) in GPG_ALGOS.items())


def check_gpg_settings(hyperparams: dict[str, Any], n_envs: int, where: str, algorithm: type[GPG] = GPG) -> None:
    """
    The algorithm's own checks of its update settings, on an entry whose schedules rl_zoo3 has built, before any env:
    the constructor would refuse the same values with a traceback once the envs are made.

    :param hyperparams: the entry, preprocessed by rl_zoo3 (schedules as callables, ``n_envs`` taken out)
    :param n_envs: the number of training envs
    :param where: what to name in the error (file and entry)
    :param algorithm: GPG, MaskableGPG, RecurrentGPG or MaskableRecurrentGPG, whose defaults fill what the entry leaves out
    :raises ZooError: for a value the algorithm refuses, with its reason
    """
    defaults = {name: parameter.default for name, parameter in inspect.signature(algorithm.__init__).parameters.items()}

    def value(name: str) -> Any:
        return hyperparams.get(name, defaults[name])

    policy = hyperparams.get("policy")
    if isinstance(policy, str) and policy not in algorithm.policy_aliases:
        raise ZooError(f"{where}: {unknown_policy_name(algorithm, policy)} ({algo_names()})")
    try:
        check_update_settings(**{name: value(name) for name in UPDATE_SETTINGS})
        check_minibatch_size(value("batch_size"), value("n_steps"), n_envs, value("normalize_advantage"))
    except ValueError as error:
        raise ZooError(f"{where}: {error}") from None
