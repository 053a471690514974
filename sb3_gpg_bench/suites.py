"""
What the suites run: the tasks and the settings of each grid of ``sb3_gpg_bench.suite`` (``scripts/zoo_suite.py
--suite``), with the candidates tried against gpg.yml's entries and its ``default:``.
"""

import copy
import functools
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from sb3_gpg.estimator.options import PAPER_ESTIMATOR

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"
# gpg.yml's entries as the committed grids ran them, by name (see the file)
PINNED_ENTRIES_FILE = Path(__file__).parent / "pinned_entries.yml"


class Setting(NamedTuple):
    """
    An algorithm with its hyperparameter file's entry and extra ``-params``.

    :param base: the name of the pinned entries (``pinned_entries.yml``) the ``-params`` apply to, as the setting's
        runs ran them; None: the algorithm's hyperparameter file as it is now (GPG's reference ``gpg``, RL Zoo's PPO)
    """

    name: str
    algo: str
    params: tuple[str, ...] = ()
    base: str | None = None


class Suite(NamedTuple):
    """
    :param tasks: the env ids
    :param settings: what runs on each
    :param reference: the setting the table compares the others with
    :param eval_seed_offset: the evaluation envs' seed is the run's plus this (``--eval-seed``); None: rl_zoo3's, the
        training seed itself
    """

    tasks: list[str]
    settings: list[Setting]
    reference: str
    eval_seed_offset: int | None


@functools.cache
def parsed_yaml(path: Path) -> Any:
    """:return: the YAML file parsed, once per process (libyaml's parser where PyYAML has it); callers copy what they change"""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def pinned_entry(base: str, env_id: str) -> dict[str, Any]:
    """
    :return: the entry for ``env_id`` of the pinned entries ``base`` (a copy: the file is read once)
    :raises KeyError: where they have none for it (a setting run on a task its base was never run on)
    """
    entries = parsed_yaml(PINNED_ENTRIES_FILE)[base]
    if env_id not in entries:
        raise KeyError(f"the pinned entries {base!r} have none for {env_id}: give the setting a base that has one.")
    return copy.deepcopy(entries[env_id])


@functools.cache
def _study(study: str) -> Any:
    import optuna

    from sb3_gpg_bench.journal import journal_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    journal = BENCHMARKS / "mujoco_search" / f"{study.split('_')[0]}_v5.log.gz"
    return optuna.load_study(study_name=study, storage=journal_storage(journal))


def trial_params(study: str, number: int, horizon_digits: bool = False) -> tuple[str, ...]:
    """
    A trial of a study of the MuJoCo search (``benchmarks/mujoco_search/<task>_v5.log.gz``) as ``-params``: its Optuna
    params turned into GPG's hyperparameters by the converter that rl_zoo3's ``--trial-id`` applies
    (``convert_gpg_params``), each number at 4 significant digits, the precision its confirmation runs ran at (the
    journal holds Optuna's full precision; ``study_text`` writes the values).

    :param study: the study's name, ``<task>_v5_...``
    :param number: the trial's number
    :param horizon_digits: gamma as 1 minus 1 - gamma at 4 significant digits (as the 600k studies' later confirmations
        ran it), not gamma itself at 4
    """
    from sb3_gpg.zoo.registry import convert_gpg_params

    optuna_params = _study(study).trials[number].params
    params = []
    for name, value in convert_gpg_params(optuna_params).items():
        if name == "baseline_kwargs" and value is None:
            continue  # the search's entry names none, so its trials and their confirmation runs ran without them
        text = study_text(value)
        if name == "gamma" and horizon_digits:
            text = f"{1 - float(study_text(optuna_params['one_minus_gamma'])):.10g}"
        quoted = isinstance(value, str | dict) or hasattr(value, "initial_value")
        params.append(f"{name}:'{text}'" if quoted else f"{name}:{text}")
    return tuple(params)


def study_text(value: Any) -> str:
    """:return: a hyperparameter as gpg.yml would write it: 4 significant digits, a linear schedule as lin_<start>"""
    if isinstance(value, dict):
        return "dict(" + ", ".join(f"{key}={study_text(item)}" for key, item in value.items()) + ")"
    if isinstance(value, type):
        return f"nn.{value.__name__}"
    if hasattr(value, "initial_value"):  # rl_zoo3's linear schedule
        return f"lin_{value.initial_value:.4g}"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


# the knn baseline fitted on at most 2,048 samples per rollout, the setting of the state-aware screen
KNN_KWARGS = "baseline_kwargs:{'max_samples':2048}"
STATE_AWARE = [
    Setting("ppo", "ppo"),
    *[
        Setting(
            f"gpg_{baseline}_lambda{gae_lambda}",
            "gpg",
            (f"baseline:'{baseline}'", f"gae_lambda:{gae_lambda}", *extra),
            "state_aware",
        )
        for baseline, extra in (("bins", ()), ("linear", ()), ("knn", (KNN_KWARGS,)))
        for gae_lambda in (1.0, 0.95)
    ],
]
ZOO_TASKS = ["CartPole-v1", "Acrobot-v1", "Pendulum-v1", "MountainCarContinuous-v0", "LunarLander-v3",
             "LunarLanderContinuous-v3", "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Swimmer-v5"]  # fmt: skip
STATE_AWARE_TASKS = ["HalfCheetah-v5", "Walker2d-v5", "Hopper-v5", "LunarLander-v3"]
# RL Zoo's PPO policy for HalfCheetah and Hopper (GPG has no value network: the policy's layers only)
ZOO_POLICY = "policy_kwargs:'dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU, net_arch=[256, 256])'"
# RL Zoo PPO's Walker2d optimiser settings, less its minibatch size
ZOO_WALKER2D_OPTIMISER = ("learning_rate:5.05e-05", "clip_range:0.1", "n_epochs:20", "ent_coef:5.85e-04", "max_grad_norm:1.0")
KNN = ("baseline:'knn'", KNN_KWARGS)
LINEAR_LAMBDA = ("baseline:'linear'", "gae_lambda:0.95")
MEMORY8 = (*LINEAR_LAMBDA, "truncated_returns:'bootstrap'", "baseline_kwargs:{'memory':8}")
FOURIER256_MEMORY8 = "baseline_kwargs:{'memory':8,'fourier':256}"
MEMORY8_FOURIER256 = (*LINEAR_LAMBDA, "truncated_returns:'bootstrap'", FOURIER256_MEMORY8)
# the linear baseline fitted on each rollout alone, named (the constructor's before its memory preset)
LINEAR_BOOTSTRAP = ("baseline:'linear'", "truncated_returns:'bootstrap'")
# Candidates against gpg.yml's entry ("gpg") on tuning seeds, each run on the tasks it was meant for (--envs), each
# on the entry it was tried against (its base)
ZOO_TUNING = [
    Setting("gpg", "gpg"),
    Setting("gpg_bins", "gpg", ("baseline:'bins'", "gae_lambda:1.0"), "zoo_tuning_first"),
    Setting("gpg_linear_lambda0.95", "gpg", LINEAR_LAMBDA, "zoo_tuning_first"),
    Setting("gpg_knn", "gpg", KNN, "zoo_tuning_first"),
    Setting("gpg_zoo_policy", "gpg", (ZOO_POLICY,), "zoo_tuning_first"),
    Setting("gpg_zoo_policy_linear_lambda0.95", "gpg", (ZOO_POLICY, *LINEAR_LAMBDA), "zoo_tuning_first"),
    Setting("gpg_zoo_policy_knn", "gpg", (ZOO_POLICY, *KNN), "zoo_tuning_first"),
    # the best of 40 trials of --optimize on Pendulum-v1 at its budget (seed 100; optuna/)
    Setting(
        "gpg_pendulum_optuna",
        "gpg",
        (
            "n_steps:512",
            "batch_size:512",
            "n_epochs:5",
            "gamma:0.9712",
            "learning_rate:0.00288",
            "clip_range:0.4",
            "ent_coef:0.0",
            "max_grad_norm:0.96",
            "leave_one_out:True",
            "baseline:'linear'",
            "gae_lambda:0.95",
            "policy_kwargs:'dict(activation_fn=nn.ReLU, net_arch=[256, 256])'",
        ),
        "zoo_tuning_first",
    ),
    # the best of 40 trials of --optimize on MountainCarContinuous-v0 at its budget (seed 100; optuna/)
    Setting(
        "gpg_mcc_optuna",
        "gpg",
        (
            "binning:'universal'",
            "n_steps:512",
            "batch_size:256",
            "n_epochs:10",
            "gamma:0.9842",
            "learning_rate:2e-5",
            "clip_range:0.4",
            "ent_coef:0.0",
            "max_grad_norm:0.48",
            "leave_one_out:True",
            "baseline:'bins'",
            "gae_lambda:0.98",
            "policy_kwargs:'dict(activation_fn=nn.Tanh, net_arch=[64, 64])'",
        ),
        "zoo_tuning_first",
    ),
    # trial 35 of the HalfCheetah-v5 search (benchmarks/mujoco_search), values rounded
    Setting(
        "gpg_halfcheetah_trial35",
        "gpg",
        (
            "policy_kwargs:'dict(net_arch=[64], activation_fn=nn.ReLU, ortho_init=False, log_std_init=-0.5146)'",
            "normalize:False",
            "binning:'spatial'",
            "learning_rate:'lin_0.000968'",
            "ent_coef:0.002227",
            "clip_range:0.3",
            "target_kl:None",
            "n_epochs:5",
            "max_grad_norm:0.7062",
            "leave_one_out:False",
            "baseline:'linear'",
            "gae_lambda:0.9",
            "truncated_returns:'bootstrap'",
            "bin_size:1",
            "n_envs:8",
            "gamma:0.9854",
            "n_steps:64",
            "batch_size:512",
        ),
        "search",
    ),
    # trial 52 of the HalfCheetah-v5 search (benchmarks/mujoco_search), values rounded
    Setting(
        "gpg_halfcheetah_trial52",
        "gpg",
        (
            "policy_kwargs:'dict(net_arch=[64], activation_fn=nn.ReLU, ortho_init=False, log_std_init=-1.1442)'",
            "normalize:False",
            "binning:'spatial'",
            "learning_rate:'lin_0.000615'",
            "ent_coef:0.01655",
            "clip_range:0.3",
            "target_kl:0.1",
            "n_epochs:10",
            "max_grad_norm:0.996",
            "leave_one_out:False",
            "baseline:'linear'",
            "gae_lambda:0.9",
            "truncated_returns:'bootstrap'",
            "bin_size:1",
            "n_envs:32",
            "gamma:0.9927",
            "n_steps:64",
            "batch_size:512",
        ),
        "search",
    ),
    # trial 88 of the HalfCheetah-v5 search (benchmarks/mujoco_search), values rounded
    Setting(
        "gpg_halfcheetah_trial88",
        "gpg",
        (
            "policy_kwargs:'dict(net_arch=[64], activation_fn=nn.ReLU, ortho_init=False, log_std_init=-1.0861)'",
            "normalize:False",
            "binning:'spatial'",
            "learning_rate:'lin_0.000504'",
            "ent_coef:0.0001769",
            "clip_range:0.3",
            "target_kl:0.1",
            "n_epochs:10",
            "max_grad_norm:0.8421",
            "leave_one_out:False",
            "baseline:'linear'",
            "gae_lambda:0.9",
            "truncated_returns:'bootstrap'",
            "bin_size:2",
            "n_envs:16",
            "gamma:0.9883",
            "n_steps:32",
            "batch_size:256",
        ),
        "search",
    ),
    Setting("gpg_walker2d_trial84", "gpg", trial_params("walker2d_v5_300k", 84), "search"),
    Setting("gpg_walker2d_trial91", "gpg", trial_params("walker2d_v5_300k", 91), "search"),
    Setting("gpg_walker2d_trial65", "gpg", trial_params("walker2d_v5_300k", 65), "search"),
    Setting("gpg_halfcheetah_trial26", "gpg", trial_params("halfcheetah_v5_500k_w3", 26), "search"),
    Setting("gpg_halfcheetah_trial32", "gpg", trial_params("halfcheetah_v5_500k_w3", 32), "search"),
    Setting("gpg_halfcheetah_trial19", "gpg", trial_params("halfcheetah_v5_500k_w3", 19), "search"),
    Setting("gpg_swimmer_trial30", "gpg", trial_params("swimmer_v5_600k", 30), "search"),
    Setting("gpg_swimmer_trial58", "gpg", trial_params("swimmer_v5_600k", 58), "search"),
    Setting("gpg_swimmer_trial50", "gpg", trial_params("swimmer_v5_600k", 50), "search"),
]
HC_TRIAL26 = next(s.params for s in ZOO_TUNING if s.name == "gpg_halfcheetah_trial26")
# Walker2d-v5 candidates from what moved HalfCheetah and RL Zoo's PPO: a small initial action noise; RL Zoo PPO's
# Walker2d optimiser settings (larger minibatches) with its HalfCheetah and Hopper policy; HalfCheetah's trial 26
ZOO_TUNING += [
    Setting("gpg_walker2d_std-1", "gpg", ("policy_kwargs:'dict(log_std_init=-1)'",), "walker2d_8x512"),
    Setting(
        "gpg_walker2d_zoo_ppo",
        "gpg",
        (ZOO_POLICY, *ZOO_WALKER2D_OPTIMISER),
        "walker2d_8x512",
    ),
    Setting("gpg_walker2d_hc_trial26", "gpg", HC_TRIAL26, "search"),
    # Walker2d: one lever each against the entry, at the full budget on three tuning seeds
    Setting("gpg_walker2d_lin_lr", "gpg", ("learning_rate:'lin_3e-4'",), "walker2d_8x512"),
    Setting("gpg_walker2d_gamma0.995", "gpg", ("gamma:0.995",), "walker2d_8x512"),
    Setting("gpg_walker2d_16envs", "gpg", ("n_envs:16", "n_steps:256"), "walker2d_8x512"),
    Setting("gpg_walker2d_128steps", "gpg", ("n_steps:128",), "walker2d_8x512"),
    Setting("gpg_walker2d_1024steps", "gpg", ("n_steps:1024",), "walker2d_8x512"),
    Setting("gpg_walker2d_2048steps", "gpg", ("n_steps:2048",), "walker2d_8x512"),
    # on the 8 x 1,024 entry: faster learning, as its evaluations still rise at 1M steps
    Setting("gpg_walker2d_lr6e-4", "gpg", ("learning_rate:6e-4",), "walker2d_8x1024"),
    Setting("gpg_walker2d_epochs20", "gpg", ("n_epochs:20",), "walker2d_8x1024"),
    # on the 8 x 1,024 entry: the returns that the rollout's end cuts completed by the fitted baseline's value, so that
    # the last samples of each env's rollout are not scored as if the episode ended there; and with it, more updates
    Setting("gpg_walker2d_bootstrap", "gpg", ("truncated_returns:'bootstrap'",), "walker2d_8x1024"),
    Setting("gpg_walker2d_bootstrap_512", "gpg", ("truncated_returns:'bootstrap'", "n_steps:512"), "walker2d_8x1024"),
    Setting("gpg_walker2d_bootstrap_256", "gpg", ("truncated_returns:'bootstrap'", "n_steps:256"), "walker2d_8x1024"),
    # on the bootstrapped entry, whose runs can fall from a good gait to a short one for good: smaller policy steps
    Setting("gpg_walker2d_lr1e-4", "gpg", ("learning_rate:1e-4",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_clip0.1", "gpg", ("clip_range:0.1",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_kl0.02", "gpg", ("target_kl:0.02",), "walker2d_bootstrap"),
    # on the bootstrapped entry, where the fitted baseline explains most of the returns: how far GAE looks (lambda,
    # gamma) and a baseline that is not linear in the observation
    Setting("gpg_walker2d_lambda0.9", "gpg", ("gae_lambda:0.9",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_lambda0.98", "gpg", ("gae_lambda:0.98",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_bootstrap_gamma0.995", "gpg", ("gamma:0.995",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_knn", "gpg", KNN, "walker2d_bootstrap"),
    # on the bootstrapped entry, whose runs can fall from a good gait to a short one for good: an entropy bonus that
    # keeps the policy exploring after a fall, and a smaller initial action noise (quieter Monte-Carlo returns)
    Setting("gpg_walker2d_ent0.001", "gpg", ("ent_coef:0.001",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_bootstrap_std-1", "gpg", ("policy_kwargs:'dict(log_std_init=-1)'",), "walker2d_bootstrap"),
    # HalfCheetah's entry as a whole failed here under its truncated_returns 'keep' (32 x 64 steps: most returns are
    # cut); the same with the cut returns bootstrapped
    Setting(
        "gpg_walker2d_hc_trial26_bootstrap",
        "gpg",
        tuple("truncated_returns:'bootstrap'" if param.startswith("truncated_returns:") else param for param in HC_TRIAL26),
        "search",
    ),
    # on the bootstrapped entry, whose runs fall late: the same mean learning rate annealed to 0 (large steps early,
    # small ones once a gait is found); a longer horizon, under which staying up outweighs a lunge forward; a wider
    # policy; and RL Zoo PPO's Walker2d optimiser (its update count per sample) with the entry's own policy
    Setting("gpg_walker2d_lin_lr6e-4", "gpg", ("learning_rate:'lin_6e-4'",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_gamma0.999", "gpg", ("gamma:0.999",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_256x256", "gpg", ("policy_kwargs:'dict(net_arch=[256, 256])'",), "walker2d_bootstrap"),
    # on the bootstrapped entry: the linear baseline fitted on the last rollouts too (PPO's critic carries every earlier
    # rollout in its weights; the fit on one rollout alone explains less of the returns)
    Setting("gpg_walker2d_memory8", "gpg", ("baseline_kwargs:{'memory':8}",), "walker2d_bootstrap"),
    Setting("gpg_walker2d_memory32_recency0.9", "gpg", ("baseline_kwargs:{'memory':32,'recency':0.9}",), "walker2d_bootstrap"),
    # the same with 256 random Fourier features of the observation, which the larger fit affords
    Setting("gpg_walker2d_memory8_fourier256", "gpg", (FOURIER256_MEMORY8,), "walker2d_bootstrap"),
    # HalfCheetah's entry (the second study's trial 26; its linear baseline fits 2,048 samples a rollout) with a memory
    Setting("gpg_halfcheetah_memory8", "gpg", ("baseline_kwargs:{'memory':8}",), "halfcheetah_trial26"),
    Setting(
        "gpg_halfcheetah_memory32_recency0.9", "gpg", ("baseline_kwargs:{'memory':32,'recency':0.9}",), "halfcheetah_trial26"
    ),
    # CartPole's and LunarLander's entries (the time bins) against the same counterpart to PPO's critic: the linear
    # baseline with a memory of the last 8 rollouts (and Fourier features), the cut returns it completes and GAE over it
    Setting("gpg_cartpole_memory8", "gpg", MEMORY8, "cartpole_lunarlander"),
    Setting("gpg_cartpole_memory8_fourier256", "gpg", MEMORY8_FOURIER256, "cartpole_lunarlander"),
    Setting("gpg_lunarlander_memory8", "gpg", MEMORY8, "cartpole_lunarlander"),
    Setting("gpg_lunarlander_memory8_fourier256", "gpg", MEMORY8_FOURIER256, "cartpole_lunarlander"),
    Setting("gpg_walker2d_ppo_optimiser", "gpg", ("batch_size:32", *ZOO_WALKER2D_OPTIMISER), "walker2d_bootstrap"),
    Setting("gpg_walker2d_trial87", "gpg", trial_params("walker2d_v5_600k_w3", 87, horizon_digits=True), "search"),
    Setting("gpg_walker2d_trial75", "gpg", trial_params("walker2d_v5_600k_w3", 75, horizon_digits=True), "search"),
    Setting("gpg_walker2d_trial30", "gpg", trial_params("walker2d_v5_600k_w3", 30, horizon_digits=True), "search"),
    Setting("gpg_swimmer_trial99", "gpg", trial_params("swimmer_v5_600k", 99, horizon_digits=True), "search"),
    Setting("gpg_swimmer_trial96", "gpg", trial_params("swimmer_v5_600k", 96, horizon_digits=True), "search"),
    Setting("gpg_swimmer_trial89", "gpg", trial_params("swimmer_v5_600k", 89, horizon_digits=True), "search"),
    # CartPole: one lever each against the entry, on five tuning seeds
    Setting("gpg_cartpole_epochs20", "gpg", ("n_epochs:20",), "cartpole_lunarlander"),
    Setting("gpg_cartpole_gamma0.98", "gpg", ("gamma:0.98",), "cartpole_lunarlander"),
    Setting("gpg_cartpole_linear_lambda0.95", "gpg", LINEAR_LAMBDA, "cartpole_lunarlander"),
    Setting("gpg_cartpole_clip_lin", "gpg", ("clip_range:'lin_0.2'",), "cartpole_lunarlander"),
    # the returns that the rollout's end cuts, completed by the bins' value of the state after it, or left out
    Setting("gpg_cartpole_bootstrap", "gpg", ("truncated_returns:'bootstrap'",), "cartpole_lunarlander"),
    Setting("gpg_cartpole_mask", "gpg", ("truncated_returns:'mask'",), "cartpole_lunarlander"),
    Setting("gpg_lunarlander_bootstrap", "gpg", ("truncated_returns:'bootstrap'",), "cartpole_lunarlander"),
    # RL Zoo's PPO entry for CartPole, its rollout of 8 x 32 steps with the cut returns completed by the bins
    Setting(
        "gpg_cartpole_zoo_ppo",
        "gpg",
        ("n_steps:32", "n_epochs:20", "gamma:0.98", "gae_lambda:0.8", "clip_range:'lin_0.2'", "truncated_returns:'bootstrap'"),
        "cartpole_lunarlander",
    ),
]
SMOKE = [Setting("ppo", "ppo"), Setting("gpg_linear", "gpg", ("baseline:'linear'",))]
# The base of a setting that runs rl_zoo3's PPO entry for the task with another algorithm: a user's one-word swap
PPO_ENTRY = "rl_zoo3_ppo"
# What GPG's constructor gave before its defaults changed, the paper's estimator and Monte-Carlo advantages: the suite
# gives them where a setting's base names none, so that a setting goes on meaning what its committed runs ran
BEFORE_DEFAULTS_CHANGED = {**PAPER_ESTIMATOR, "gae_lambda": 1.0}
# The constructor's estimator named as the suite must name it: a PPO entry names none, and the suite gives such an
# entry the paper's estimator otherwise (and lambda 1: gpg_swap_lambda_auto names the constructor's lambda). It is the
# estimator of the code a run ran on: runs made before the linear baseline's target defaulted to its own lambda-returns
# where gae_lambda is below 1 fitted the returns there, and before its optimism defaulted to on ran without it
CONSTRUCTOR_ESTIMATOR = ("baseline:'auto'", "truncated_returns:None")
# 32 rollouts remembered, each weighing recency ** k without the cap at the current rollout's weight
UNCAPPED_MEMORY = "baseline_kwargs:{'memory':32,'recency':0.9,'memory_weight':None}"
# the same at one pooled level
POOLED_LONG = "'memory':32,'recency':0.9,'memory_weight':None,'level':'pooled'"
TREND_LONG = "'memory':32,'recency':0.9,'memory_weight':None,'level':'trend'"
RETURNS_EXPLAINED = "sb3_gpg_bench.critic_variants.ReturnsExplained"
# the episode time as the observation's last entry, for the critics that read it
TIME_AWARE = "env_wrapper:'gymnasium.wrappers.TimeAwareObservation'"
ADVANTAGE_SIGNAL = "sb3_gpg_bench.critic_variants.AdvantageSignal"
BASELINE_VARIANTS = "sb3_gpg_bench.baseline_variants.BaselineVariants"
SAVED_ROLLOUTS = "sb3_gpg_bench.baseline_variants.SavedRollouts"
TIME_CRITIC = "sb3_gpg_bench.critic_variants.TimeCritic"
MC_CRITIC = "sb3_gpg_bench.critic_variants.MonteCarloCritic"
LINEAR_CRITIC_CALLBACK = "sb3_gpg_bench.critic_variants.LinearCritic"
WITHOUT_TIME = "sb3_gpg_bench.critic_variants.BaselineWithoutTime"
GOAL_LAPSES = "sb3_gpg_bench.critic_variants.GoalLapses"


def both_lambdas(name: str, baseline_kwargs: str) -> list[Setting]:
    """
    :param baseline_kwargs: the linear baseline's arguments, as a dict's items
    :return: the constructor's estimator with them, under its own ``gae_lambda="auto"`` (``<name>_auto``, for an entry
        that leaves gae_lambda unset) and under the entry's (``name``)
    """
    kwargs = f"baseline_kwargs:{{{baseline_kwargs}}}"
    return [
        Setting(f"{name}_auto", "gpg", (*CONSTRUCTOR_ESTIMATOR, "gae_lambda:'auto'", kwargs), PPO_ENTRY),
        Setting(name, "gpg", (*CONSTRUCTOR_ESTIMATOR, kwargs), PPO_ENTRY),
    ]


# The one-word swap: GPG with PPO's entry and the constructor's estimator defaults, and with the linear baseline
SWAP = [
    Setting("ppo", "ppo"),
    Setting("gpg_swap", "gpg", (), PPO_ENTRY),
    Setting("gpg_swap_linear", "gpg", LINEAR_BOOTSTRAP, PPO_ENTRY),
    # the next candidate: the linear baseline fitted on the last 8 rollouts with 256 random Fourier features
    Setting("gpg_swap_memory", "gpg", (*LINEAR_BOOTSTRAP, FOURIER256_MEMORY8), PPO_ENTRY),
    # a candidate default of GPG's Gaussian policies: a smaller initial noise, for the tasks whose PPO entry leaves
    # log_std_init at PPO's 0 (this policy_kwargs would replace an entry's own)
    Setting("gpg_swap_linear_logstd-0.5", "gpg", (*LINEAR_BOOTSTRAP, "policy_kwargs:'dict(log_std_init=-0.5)'"), PPO_ENTRY),
    # the noise at which an untrained Ant-v5 policy earns more per step than its actions cost (the swap guide's fix)
    Setting("gpg_swap_linear_logstd-1", "gpg", (*LINEAR_BOOTSTRAP, "policy_kwargs:'dict(log_std_init=-1)'"), PPO_ENTRY),
    # the memory's variants, for Swimmer-v5 (gamma 0.9999: the remembered returns of older policies, in VecNormalize's
    # older scale): the older rollouts weighed less, or without the Fourier features
    Setting(
        "gpg_swap_memory_recency0.5",
        "gpg",
        (*LINEAR_BOOTSTRAP, "baseline_kwargs:{'memory':8,'fourier':256,'recency':0.5}"),
        PPO_ENTRY,
    ),
    # between the two: the older rollouts weighed less than the memory's 1, more than 0.5's (Hopper-v5's 512-step rollouts)
    Setting(
        "gpg_swap_memory_recency0.8",
        "gpg",
        (*LINEAR_BOOTSTRAP, "baseline_kwargs:{'memory':8,'fourier':256,'recency':0.8}"),
        PPO_ENTRY,
    ),
    Setting("gpg_swap_memory8", "gpg", (*LINEAR_BOOTSTRAP, "baseline_kwargs:{'memory':8}"), PPO_ENTRY),
    # RL Zoo's PPO logging how much of the returns its critic explains on the footing of GPG's held-out baseline: the
    # reference of the swap's diagnosis (sb3_gpg_bench.dynamics)
    Setting("ppo_diagnosis", "ppo", ("callback:'sb3_gpg_bench.critic_variants.ReturnsExplained'",)),
    # both with what sets how far an update moves the policy's noise (critic_variants.AdvantageSignal): the swap's
    # diagnosis's next runs
    Setting("ppo_signal", "ppo", (f"callback:[{RETURNS_EXPLAINED!r},{ADVANTAGE_SIGNAL!r}]",)),
    # PPO with GPG's linear baseline fitted on its rollouts in variants beside its critic (baseline_variants)
    Setting("ppo_baseline_variants", "ppo", (f"callback:[{RETURNS_EXPLAINED!r},{BASELINE_VARIANTS!r}]",)),
    # the same PPO keeping its rollouts (SAVED_ROLLOUTS, SAVED_ROLLOUTS_STEPS), for variants scored without training
    Setting("ppo_saved_rollouts", "ppo", (f"callback:[{RETURNS_EXPLAINED!r},{SAVED_ROLLOUTS!r}]",)),
    Setting("gpg_swap_signal", "gpg", (*CONSTRUCTOR_ESTIMATOR, f"callback:{ADVANTAGE_SIGNAL!r}"), PPO_ENTRY),
    # one-change runs of the diagnosis: GAE's lambda at PPO's default 0.95, or at 0.98, over the constructor's estimator,
    # for the tasks whose PPO entry leaves gae_lambda at its default (this would replace an entry's own)
    *(
        Setting(
            f"gpg_swap_lambda{value}",
            "gpg",
            (*CONSTRUCTOR_ESTIMATOR, f"gae_lambda:{value}", f"callback:{ADVANTAGE_SIGNAL!r}"),
            PPO_ENTRY,
        )
        for value in ("0.95", "0.98")
    ),
    # the constructor's estimator made sound (the linear fit's features capped, its bootstrap cross-fitted, its
    # memory re-completing the cut returns): what a one-word swap gets since (the suite gives a PPO entry the paper's
    # estimator where it names none, as gpg_swap's runs had it: the constructor's defaults are named here)
    Setting("gpg_swap_sound", "gpg", CONSTRUCTOR_ESTIMATOR, PPO_ENTRY),
    # the same arguments on the code of branch cap_rollout: the memory capped at the current rollout's samples rather
    # than the fold's share of them (benchmarks/swap/memory_cap)
    Setting("gpg_swap_cap_rollout", "gpg", CONSTRUCTOR_ESTIMATOR, PPO_ENTRY),
    # the same arguments on the code of branch no_cap: the remembered rollouts weighed by recency alone, not capped
    # (benchmarks/swap/memory_cap)
    Setting("gpg_swap_no_cap", "gpg", CONSTRUCTOR_ESTIMATOR, PPO_ENTRY),
    # the swap with a baseline that ranks nearby states (the mean return of the nearest samples of other trajectories):
    # the diagnosis's test of the linear baseline's differences between states (benchmarks/swap/diagnosis)
    Setting("gpg_swap_knn", "gpg", ("baseline:'knn'", "truncated_returns:None"), PPO_ENTRY),
    # what PPO's walk needs of its critic (benchmarks/swap/diagnosis/critic_need): PPO whose critic is never trained
    # (its values stay at SB3's initialisation), and the swap with one constant baseline (GAE over it reads the next
    # steps' rewards alone), each against its own algorithm's runs
    Setting("ppo_frozen_critic", "ppo", ("vf_coef:0.0", f"callback:[{RETURNS_EXPLAINED!r},{ADVANTAGE_SIGNAL!r}]")),
    Setting(
        "gpg_swap_constant",
        "gpg",
        ("baseline:'bins'", "binning:'universal'", "truncated_returns:'bootstrap'", f"callback:{ADVANTAGE_SIGNAL!r}"),
        PPO_ENTRY,
    ),
    # what the episode time in a value does (benchmarks/swap/diagnosis/critic_need): PPO's critic reading it (its actor
    # not), and the swap's linear baseline without it
    Setting(
        "ppo_time_critic",
        "ppo",
        (
            TIME_AWARE,
            f"callback:[{RETURNS_EXPLAINED!r},{ADVANTAGE_SIGNAL!r},{TIME_CRITIC!r}]",
        ),
    ),
    # PPO's critic fitted on the Monte-Carlo returns, as GPG's baseline is, rather than on lambda-returns over itself
    Setting("ppo_mc_critic", "ppo", (f"callback:[{RETURNS_EXPLAINED!r},{ADVANTAGE_SIGNAL!r},{MC_CRITIC!r}]",)),
    # PPO's critic linear in the linear baseline's features without the Fourier ones (time-aware), trained as PPO's
    Setting(
        "ppo_linear_critic",
        "ppo",
        (TIME_AWARE, f"callback:[{RETURNS_EXPLAINED!r},{ADVANTAGE_SIGNAL!r},{LINEAR_CRITIC_CALLBACK!r}]"),
    ),
    Setting(
        "gpg_swap_no_time", "gpg", (*CONSTRUCTOR_ESTIMATOR, f"callback:[{ADVANTAGE_SIGNAL!r},{WITHOUT_TIME!r}]"), PPO_ENTRY
    ),
    # the constructor's estimator with the linear baseline fitted on its own lambda-returns (GAE's lambda of the
    # entry), as PPO's critic is, rather than on the returns (benchmarks/swap/diagnosis/critic_need)
    Setting(
        "gpg_swap_lambda_target",
        "gpg",
        (*CONSTRUCTOR_ESTIMATOR, "baseline_kwargs:{'target':'lambda_returns'}", f"callback:{ADVANTAGE_SIGNAL!r}"),
        PPO_ENTRY,
    ),
    # the same without the diagnostics' callback (which reads Gaussian policies only): the candidate default of the
    # 17-task rule (benchmarks/swap/lambda_target), run where the entry sets gae_lambda below 1
    Setting("gpg_swap_lambda", "gpg", (*CONSTRUCTOR_ESTIMATOR, "baseline_kwargs:{'target':'lambda_returns'}"), PPO_ENTRY),
    # the constructor's estimator once the rule adopted that target where gae_lambda is below 1 (the returns' at 1): the
    # swap's fresh seeds (benchmarks/swap/fresh_seeds)
    Setting("gpg_swap_lambda_default", "gpg", CONSTRUCTOR_ESTIMATOR, PPO_ENTRY),
    # GAE's lambda chosen per rollout from the baselines' explained variance (gae_lambda="auto"), the candidate default
    # where an entry leaves gae_lambda unset (Ant-v5, Pusher-v5; benchmarks/swap/diagnosis)
    Setting("gpg_swap_lambda_auto", "gpg", (*CONSTRUCTOR_ESTIMATOR, "gae_lambda:'auto'"), PPO_ENTRY),
    # the same, named apart for its runs on the code where "auto" takes PPO's lambda while the optimism waits for a goal
    # (benchmarks/swap/optimism_auto)
    Setting("gpg_swap_lambda_auto_optimism", "gpg", (*CONSTRUCTOR_ESTIMATOR, "gae_lambda:'auto'"), PPO_ENTRY),
    # the same, named apart for its runs on the code of 8bba8b46, where "auto" took PPO's lambda on every rollout of one
    # cost per step: not adopted, reverted (benchmarks/swap/optimism_auto)
    Setting("gpg_swap_lambda_auto_cost", "gpg", (*CONSTRUCTOR_ESTIMATOR, "gae_lambda:'auto'"), PPO_ENTRY),
    # the constructor's estimator remembering 32 rollouts: for an entry whose rollout is short (one env x 128 steps on
    # InvertedDoublePendulum-v5), as many remembered samples as 8 rollouts of 512 steps
    Setting("gpg_swap_memory32", "gpg", (*CONSTRUCTOR_ESTIMATOR, "baseline_kwargs:{'memory':32}"), PPO_ENTRY),
    # the same memory allowed to outweigh the rollout: each remembered rollout weighs recency ** k, uncapped (the
    # memory32 screen's memory weighed at most what the rollout does)
    Setting(
        "gpg_swap_memory_uncapped",
        "gpg",
        (*CONSTRUCTOR_ESTIMATOR, UNCAPPED_MEMORY),
        PPO_ENTRY,
    ),
    # the same under the constructor's gae_lambda, for an entry that leaves it unset (Ant-v5)
    Setting(
        "gpg_swap_memory_uncapped_auto",
        "gpg",
        (*CONSTRUCTOR_ESTIMATOR, "gae_lambda:'auto'", UNCAPPED_MEMORY),
        PPO_ENTRY,
    ),
    # the saved rollouts' candidates: the remembered rollouts at one pooled level, with the long uncapped memory, and
    # with 8 folds
    Setting(
        "gpg_swap_pooled_long_auto",
        "gpg",
        (*CONSTRUCTOR_ESTIMATOR, "gae_lambda:'auto'", f"baseline_kwargs:{{{POOLED_LONG}}}"),
        PPO_ENTRY,
    ),
    # and where the entry sets gae_lambda (InvertedDoublePendulum-v5's 0.8), which the suite then keeps
    *both_lambdas("gpg_swap_pooled_long_folds8", f"{POOLED_LONG},'n_folds':8"),
    # the remembered rollouts' levels on a trend in their age (an option of the linear baseline), with the long
    # uncapped memory and the default's folds; where the entry sets gae_lambda, the entry's
    *both_lambdas("gpg_swap_trend_long", TREND_LONG),
    # the same with 8 folds: the pooled screen's candidate with the level alone changed
    *both_lambdas("gpg_swap_trend_long_folds8", f"{TREND_LONG},'n_folds':8"),
    # the default's memory with 8 folds: the part of the trend rule's candidate that neither the memory nor the level is
    Setting("gpg_swap_folds8", "gpg", (*CONSTRUCTOR_ESTIMATOR, "baseline_kwargs:{'n_folds':8}"), PPO_ENTRY),
    # the default's memory at one pooled level: the level's part of the pooled screen's candidate alone
    Setting("gpg_swap_pooled", "gpg", (*CONSTRUCTOR_ESTIMATOR, "baseline_kwargs:{'level':'pooled'}"), PPO_ENTRY),
    # every fold fitted on all the features, not on the size its held-out halves' returns choose (which may be the
    # time's cubic alone where the time explains the returns)
    Setting("gpg_swap_all_sizes", "gpg", (*CONSTRUCTOR_ESTIMATOR, "baseline_kwargs:{'choose_size':False}"), PPO_ENTRY),
    # the trend rule's candidate with the linear baseline's optimism while a constant cost per step hides the goal (as
    # gpg_swap_optimism's, below)
    *both_lambdas("gpg_swap_trend_long_folds8_optimism", f"{TREND_LONG},'n_folds':8,'optimism':True"),
    # each fold choosing, with its size, between the default's level and one level over the last 32 rollouts, uncapped
    # (the pooled screen's memory), by its held-out halves' returns
    *both_lambdas("gpg_swap_pooled32", "'pooled_memory':32"),
    # the same with 8 folds, as the pooled screen's candidate had: each fold fits on seven eighths of the trajectories
    *both_lambdas("gpg_swap_pooled32_folds8", "'pooled_memory':32,'n_folds':8"),
    # the same, every fold taking the candidate whose folds predicted the previous rollout best (a choice on a whole
    # rollout's evidence, where each fold's halves hold few trajectories)
    *both_lambdas("gpg_swap_pooled32_previous_folds8", "'pooled_memory':32,'pooled_choice':'previous','n_folds':8"),
    # and with the default's 2 folds
    *both_lambdas("gpg_swap_pooled32_previous", "'pooled_memory':32,'pooled_choice':'previous'"),
    # the optimism's goal lapsing under the entry's lambda too (as under "auto"), alone and with 8 folds, whose first
    # goal on Acrobot-v1 comes later
    Setting("gpg_swap_lapse", "gpg", (*CONSTRUCTOR_ESTIMATOR, f"callback:{GOAL_LAPSES!r}"), PPO_ENTRY),
    Setting(
        "gpg_swap_folds8_lapse",
        "gpg",
        (*CONSTRUCTOR_ESTIMATOR, "baseline_kwargs:{'n_folds':8}", f"callback:{GOAL_LAPSES!r}"),
        PPO_ENTRY,
    ),
    # and the lagged choice of the pooled candidate with 8 folds, with the lapse
    Setting(
        "gpg_swap_pooled32_previous_folds8_lapse",
        "gpg",
        (
            *CONSTRUCTOR_ESTIMATOR,
            "baseline_kwargs:{'pooled_memory':32,'pooled_choice':'previous','n_folds':8}",
            f"callback:{GOAL_LAPSES!r}",
        ),
        PPO_ENTRY,
    ),
    # the constructor's gae_lambda with the linear baseline fitted on the returns whatever lambda a rollout takes
    # (Ant-v5: does the lambda-returns' fit or the policy explain less of the returns?)
    Setting(
        "gpg_swap_returns_target_auto",
        "gpg",
        (*CONSTRUCTOR_ESTIMATOR, "gae_lambda:'auto'", "baseline_kwargs:{'target':'returns'}"),
        PPO_ENTRY,
    ),
    # the constructor's estimator with the linear baseline's optimism while a constant cost per step hides the goal
    # (MountainCar-v0, Acrobot-v1, and MountainCarContinuous-v0's rollouts whose one env's action cost moves by at most
    # 1% a step), named so that its runs mean the same on code from before the optimism became the default
    Setting("gpg_swap_optimism", "gpg", (*CONSTRUCTOR_ESTIMATOR, "baseline_kwargs:{'optimism':True}"), PPO_ENTRY),
    # with the memory: a rollout of long episodes holds too few trajectories to fit the baseline on alone
    Setting(
        "gpg_swap_memory_logstd-1",
        "gpg",
        (*LINEAR_BOOTSTRAP, FOURIER256_MEMORY8, "policy_kwargs:'dict(log_std_init=-1)'"),
        PPO_ENTRY,
    ),
]
# Tasks gpg.yml has no entry for (continuous control, and a sparse reward): GPG's ``default:`` against RL Zoo's PPO
# entry for each, and candidate defaults (on tuning seeds)
DEFAULT_TASKS = ["Ant-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "MountainCar-v0", "InvertedPendulum-v5",
                 "Pusher-v5", "BipedalWalker-v3", "FrozenLake-v1"]  # fmt: skip
STD_HALF = "policy_kwargs:'dict(log_std_init=-0.5)'"
DEFAULT_SETTINGS = [
    Setting("ppo", "ppo"),
    Setting("gpg", "gpg", (), "defaults_first"),
    Setting("gpg_normalize", "gpg", ("normalize:True",), "defaults_first"),
    Setting("gpg_normalize_std", "gpg", ("normalize:True", "policy_kwargs:'dict(log_std_init=-1)'"), "defaults_first"),
    # the smaller initial action noise alone: VecNormalize refuses Discrete observations, which a default must accept
    Setting("gpg_std", "gpg", ("policy_kwargs:'dict(log_std_init=-1)'",), "defaults_first"),
    # halfway between the two: the next candidate under the same rule
    Setting("gpg_std_half", "gpg", (STD_HALF,), "defaults_first"),
    # its estimator: the linear baseline of one rollout with the cut returns bootstrapped, or the memory entries'
    Setting("gpg_std_half_linear", "gpg", (STD_HALF, *LINEAR_BOOTSTRAP), "defaults_first"),
    Setting("gpg_std_half_memory", "gpg", (STD_HALF, *MEMORY8_FOURIER256), "defaults_first"),
    # For low-dimensional observations only (MountainCar): a baseline of the state's cell, blind to the time, so that
    # lambda-returns over it reward moving into cells whose returns are higher, as PPO's critic does before any
    # trajectory reaches the goal
    Setting("gpg_spatial_lambda", "gpg", ("normalize:True", "binning:'spatial'", "gae_lambda:0.95"), "defaults_first"),
]
# PPO with every setting it shares with GPG's entry for the task (gpg.yml's, written out so that a later entry does not
# change what these runs ran), and SB3's vf_coef: what PPO's critic adds to GPG's settings. The HalfCheetah runs, made
# after the Walker2d ones, also log their values' explained variance of the Monte-Carlo returns (ReturnsExplained)
PPO_GPG_WALKER2D = ("normalize:True", "n_envs:8", "n_steps:512", "batch_size:128", "n_epochs:10", "gamma:0.99",
                    "gae_lambda:0.95", "learning_rate:0.0003", "ent_coef:0.0", "clip_range:0.2", "max_grad_norm:0.5",
                    "vf_coef:0.5", "policy_kwargs:'dict()'")  # fmt: skip
PPO_GPG_HALFCHEETAH = ("normalize:True", "n_envs:32", "n_steps:64", "batch_size:64", "n_epochs:10", "gamma:0.9978",
                       "gae_lambda:0.95", "learning_rate:4.93e-05", "ent_coef:5.252e-05", "clip_range:0.1",
                       "target_kl:0.1", "max_grad_norm:0.6599", "vf_coef:0.5",
                       "policy_kwargs:'dict(net_arch=[256, 256], activation_fn=nn.Tanh, ortho_init=True, "
                       "log_std_init=-2.219)'",
                       "callback:'sb3_gpg_bench.critic_variants.ReturnsExplained'")  # fmt: skip
# The same PPO without its critic's memory, or without its capacity (sb3_gpg_bench.critic_variants)
FRESH_CRITIC = ("callback:'sb3_gpg_bench.critic_variants.FreshCritic'",)
LINEAR_CRITIC = (f"callback:{LINEAR_CRITIC_CALLBACK!r}", TIME_AWARE)
# Each setting is for one task (--envs): the PPO settings are written for theirs
CRITIC_DIAGNOSIS = [
    Setting("gpg", "gpg", (), "critic_diagnosis"),
    Setting("ppo_gpg_settings_walker2d", "ppo", PPO_GPG_WALKER2D),
    Setting("ppo_gpg_settings_halfcheetah", "ppo", PPO_GPG_HALFCHEETAH),
    Setting("ppo_fresh_critic_walker2d", "ppo", (*PPO_GPG_WALKER2D, *FRESH_CRITIC)),
    Setting("ppo_linear_critic_walker2d", "ppo", (*PPO_GPG_WALKER2D, *LINEAR_CRITIC)),
]
SUITES = {
    # GPG against RL Zoo's own PPO, each with its own entry, evaluated on seeds apart from training
    "zoo": Suite(ZOO_TASKS, [Setting("ppo", "ppo"), Setting("gpg", "gpg")], "ppo", 10_000),
    # the first look at GPG's state-aware estimator options against the time bins and RL Zoo's PPO
    "state_aware": Suite(STATE_AWARE_TASKS, STATE_AWARE, "gpg_bins_lambda1.0", None),
    # the tuning of gpg.yml's entries for the zoo suite, on seeds 100 and above
    "zoo_tuning": Suite(ZOO_TASKS, ZOO_TUNING, "gpg", 10_000),
    # GPG's default entry on tasks without an entry of their own, against RL Zoo's PPO
    "defaults": Suite(DEFAULT_TASKS, DEFAULT_SETTINGS, "ppo", 10_000),
    # which part of PPO's critic GPG lacks: PPO with GPG's settings against GPG's entry, on tuning seeds
    "critic_diagnosis": Suite(["Walker2d-v5", "HalfCheetah-v5"], CRITIC_DIAGNOSIS, "gpg", 10_000),
    # the constructor's estimator defaults, as a one-word swap in a PPO script gets them, on tuning seeds
    "swap": Suite(ZOO_TASKS + DEFAULT_TASKS, SWAP, "ppo", 10_000),
    # a tiny grid for the tests
    "smoke": Suite(["CartPole-v1"], SMOKE, "ppo", 10_000),
}
