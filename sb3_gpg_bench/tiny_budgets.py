"""
The tiny-budgets grid of ``scripts/small_grids.py``: SB3's identity tests and sb3-contrib's masked identity test, each
with its env, budget, settings and reward threshold, run with the anchor (PPO, MaskablePPO) and with GPG (MaskableGPG)
under its defaults and its options, and evaluated as the test evaluates.
"""

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sb3_contrib import MaskablePPO
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from sb3_contrib.common.maskable.evaluation import evaluate_policy as maskable_evaluate_policy
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.envs import IdentityEnv, IdentityEnvBox, IdentityEnvMultiBinary, IdentityEnvMultiDiscrete
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_gpg import GPG, MaskableGPG
from sb3_gpg.common.observation_space import has_features
from sb3_gpg.estimator.options import GROUP_OPTION_NAMES, GroupOptions
from sb3_gpg_bench.experiments import read_csv

TINY_EVAL_EPISODES = 20
# The identity tests' settings: PPO's in test_discrete (gamma and learning rate shared with A2C and DQN there) and in
# test_continuous (whose gamma=0.95 PPO's kwargs replace, so PPO's default 0.99)
IDENTITY_DISCRETE = dict(gamma=0.4, learning_rate=0.002, n_epochs=4, n_steps=256)
IDENTITY_BOX = dict(learning_rate=1e-3, n_epochs=4, n_steps=256)


@dataclass
class Task:
    """
    An anchor test: its env, algorithms, settings, budget and threshold.

    :param make_env: the env, made anew for each run (its spaces are seeded by the model's seed)
    :param anchor: the algorithm of the test
    :param gpg: its GPG counterpart
    :param kwargs: the test's constructor arguments
    :param timesteps: the test's training budget
    :param threshold: the test's reward threshold (``evaluate_policy`` asserts a mean reward above it)
    :param evaluate: the test's evaluation function
    """

    make_env: Callable[[], Any]
    anchor: type[BaseAlgorithm]
    gpg: type[GPG]
    kwargs: dict[str, Any]
    timesteps: int
    threshold: float = 90.0
    evaluate: Callable[..., Any] = field(default=evaluate_policy)


TINY_TASKS = {
    "IdentityEnv(4)": Task(lambda: IdentityEnv(4), PPO, GPG, IDENTITY_DISCRETE, 1200),
    "IdentityEnvMultiDiscrete(4)": Task(lambda: IdentityEnvMultiDiscrete(4), PPO, GPG, IDENTITY_DISCRETE, 1200),
    "IdentityEnvMultiBinary(4)": Task(lambda: IdentityEnvMultiBinary(4), PPO, GPG, IDENTITY_DISCRETE, 1200),
    "IdentityEnvBox(eps=0.5)": Task(lambda: IdentityEnvBox(eps=0.5), PPO, GPG, IDENTITY_BOX, 1000),
    "InvalidActionEnvDiscrete(70, 55)": Task(
        lambda: InvalidActionEnvDiscrete(dim=70, n_invalid_actions=55),
        MaskablePPO,
        MaskableGPG,
        dict(gamma=0.1, clip_range=0.4, n_epochs=2),
        2048,
        evaluate=maskable_evaluate_policy,
    ),
}
# GPG's options tried on top of the test's settings (None: the anchor itself), the state-aware estimator's, and a short
# discount: the identity tasks reward each action at once, and only the discrete tests set gamma=0.4. The bins' options
# name the bins, which the defaults give on Box observations only with another binning
TINY_SETTINGS: dict[str, dict[str, Any] | None] = {
    "anchor": None,
    "defaults": {},
    "baseline=bins": dict(baseline="bins"),
    "binning=universal": dict(binning="universal"),
    "binning=rollout_step": dict(binning="rollout_step"),
    "leave_one_out": dict(baseline="bins", leave_one_out=True),
    "leave_one_out, min_bin_count=2": dict(baseline="bins", leave_one_out=True, min_bin_count=2),
    "baseline=linear": dict(baseline="linear"),
    "baseline=knn": dict(baseline="knn"),
    "gae_lambda=0.95": dict(gae_lambda=0.95),
    "gamma=0.4": dict(gamma=0.4),
    "gamma=0.4, binning=universal": dict(gamma=0.4, binning="universal"),
}


def distinct_settings(task: Task, names: list[str]) -> list[str]:
    """
    :param task: the anchor test
    :param names: names of TINY_SETTINGS
    :return: those that configure the task otherwise than the ones before them (one the test already has repeats another,
        one that GPG's defaults resolve to repeats them) and that GPG accepts on the task's observations
    """
    configs: list[dict[str, Any] | None] = []
    distinct = []
    readable = has_features(task.make_env().observation_space)
    for name in names:
        options = TINY_SETTINGS[name]
        config = None
        if options is not None:
            config = {**task.kwargs, **options}
            group = {key: config.pop(key) for key in GROUP_OPTION_NAMES if key in config}
            resolved = GroupOptions.from_kwargs("GPG", group).resolved(readable)
            if resolved.baseline != "bins" and not readable:
                continue  # GPG refuses the fitted baselines on observations they cannot read
            config.update(resolved.as_kwargs())
        if config not in configs:
            configs.append(config)
            distinct.append(name)
    return distinct


def train_tiny(env_name: str, setting: str, seed: int) -> dict[str, Any]:
    """
    :param env_name: a key of TINY_TASKS
    :param setting: a key of TINY_SETTINGS
    :param seed: the model's seed
    :return: the run's row: its evaluation (mean and std of the episode rewards), whether it passes, its training time
    """
    task, options = TINY_TASKS[env_name], TINY_SETTINGS[setting]
    algorithm = task.anchor if options is None else task.gpg
    start = time.perf_counter()
    model = algorithm("MlpPolicy", task.make_env(), seed=seed, **{**task.kwargs, **(options or {})}).learn(task.timesteps)
    train_seconds = time.perf_counter() - start
    mean, std = task.evaluate(model, model.get_env(), n_eval_episodes=TINY_EVAL_EPISODES, warn=False)
    return dict(env=env_name, setting=setting, seed=seed, mean_reward=float(mean), std_reward=float(std),
                passed=bool(mean > task.threshold), train_seconds=round(train_seconds, 2))  # fmt: skip


def tiny_report(out: Path) -> str:
    """
    :param out: the grid's folder, with ``runs.csv`` and ``made_by.json``
    :return: results.md of the runs in ``runs.csv``, made by the command and at the commit of ``made_by.json``
    """
    rows = read_csv(out / "runs.csv")
    made_by = json.loads((out / "made_by.json").read_text())
    seeds = sorted({row["seed"] for row in rows})
    lines = [
        "# Learning at tiny budgets",
        "",
        f"Made by `{made_by['command']}` (commit {made_by['commit'] or 'unknown'}, seeds {', '.join(map(str, seeds))}).",
        "The anchor tests' envs, budgets, settings and thresholds (SB3's tests/test_identity.py, sb3-contrib's",
        f"tests/test_invalid_actions.py::test_identity), 1 env, evaluated over {TINY_EVAL_EPISODES} deterministic episodes;",
        "a seed passes when its mean reward exceeds the threshold, as `evaluate_policy(..., reward_threshold=...)` asserts.",
        "A setting the test already has (gamma=0.4 in the discrete identity tests), or that GPG's defaults gave when",
        "these ran (as `distinct_settings` resolves them at the commit above), is not run again; the bins' options name",
        "the bins. The fitted baselines read Box observations, so baseline=knn runs on IdentityEnvBox alone.",
        "Every run: runs.csv.",
        "",
        "| env | budget | threshold | setting | mean ± std over seeds | seeds passing |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for env_name, task in TINY_TASKS.items():
        for setting in TINY_SETTINGS:
            runs = [row for row in rows if row["env"] == env_name and row["setting"] == setting]
            if not runs:
                continue
            means = np.array([float(row["mean_reward"]) for row in runs])
            passing = sum(row["passed"] == "True" for row in runs)
            label = task.anchor.__name__ if setting == "anchor" else f"{task.gpg.__name__}: {setting}"
            lines.append(
                f"| {env_name} | {task.timesteps} | {task.threshold:g} | {label} | {means.mean():.1f} ± {means.std():.1f} "
                f"| {passing}/{len(runs)} |"
            )
    return "\n".join(lines) + "\n"
