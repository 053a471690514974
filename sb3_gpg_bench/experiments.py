"""
What the benchmark scripts of ``scripts/`` share: the paper's shared hyperparameters, the vectorised envs, periodic
evaluation through SB3's EvalCallback, the run files (CSV) and their plots. matplotlib is imported only where a plot
is drawn.
"""

import csv
import textwrap
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_gpg.common.env_util import make_vec_env_on

# The paper's shared hyperparameters of GPG and PPO. Classic control: CleanRL's PPO defaults; MuJoCo: CleanRL's, with
# observation and reward normalisation; LunarLander: RL Zoo's PPO entry, a fixed minibatch of 64 samples whatever the
# number of envs
CLASSIC = dict(n_steps=128, n_epochs=4, n_minibatches=4, learning_rate=("lin", 2.5e-4), gamma=0.99, clip_range=0.2,
               ent_coef=0.01, max_grad_norm=0.5)  # fmt: skip
MUJOCO = dict(n_steps=2048, n_epochs=10, n_minibatches=32, learning_rate=("const", 3e-4), gamma=0.99, clip_range=0.2,
              ent_coef=0.0, max_grad_norm=0.5, normalize=True)  # fmt: skip
LUNAR = dict(n_steps=1024, n_epochs=4, batch_size=64, learning_rate=("const", 3e-4), gamma=0.999, clip_range=0.2,
             ent_coef=0.01, max_grad_norm=0.5)  # fmt: skip
SETTINGS: dict[str, dict[str, Any]]
SETTINGS = {"CartPole-v1": CLASSIC, "CliffWalking-v1": CLASSIC, "Acrobot-v1": CLASSIC, "LunarLander-v3": LUNAR,
            "HalfCheetah-v5": MUJOCO, "Hopper-v5": MUJOCO}  # fmt: skip
# VecNormalize's settings for evaluation envs: frozen statistics (synced from the training envs), true rewards
EVAL_NORMALIZE = {"training": False, "norm_reward": False}


def shared_hyperparameters(
    env_id: str,
    n_envs: int,
    n_steps: int | None,
    n_minibatches: int | None = None,
    gamma: float | None = None,
    lr_schedule: str | None = None,
) -> tuple[dict[str, Any], bool]:
    """
    The keyword arguments GPG and PPO share on ``env_id``, and whether to normalise observations and rewards.

    :param env_id: one of ``SETTINGS``
    :param n_envs: number of envs (the minibatch size follows from it where the settings fix the number of minibatches)
    :param n_steps: steps per env per rollout, instead of the settings'
    :param n_minibatches: minibatches per epoch (CleanRL's ``num_minibatches``), instead of the settings' minibatches
        or minibatch size: the minibatch then grows with ``n_envs`` and the number of updates per iteration does not
    :param gamma: discount factor, instead of the settings'
    :param lr_schedule: ``"lin"`` (annealed linearly to 0 over the run) or ``"const"``, at the settings' rate,
        instead of the settings' schedule
    """
    settings = dict(SETTINGS[env_id])
    n_steps = n_steps or settings["n_steps"]
    settings.pop("n_steps")
    normalize = settings.pop("normalize", False)
    kind, learning_rate = settings.pop("learning_rate")
    kind = lr_schedule or kind
    batch_size = settings.pop("batch_size", None)  # a fixed minibatch (RL Zoo's LunarLander entry), or
    minibatches_of_settings = settings.pop("n_minibatches", None)  # a fixed number of them (CleanRL)
    n_minibatches = n_minibatches or minibatches_of_settings
    if n_minibatches:
        batch_size = max(n_steps * n_envs // n_minibatches, 2)
    kwargs = dict(settings, n_steps=n_steps, batch_size=batch_size)
    if gamma is not None:
        kwargs["gamma"] = gamma
    kwargs["learning_rate"] = LinearSchedule(learning_rate, 0.0, 1.0) if kind == "lin" else learning_rate
    return kwargs, normalize


def make_envs(
    env: str | Callable[[], gym.Env],
    *args: Any,
    normalize: dict[str, Any] | None = None,
    normalizer: str | Path | None = None,
    **kwargs: Any,
) -> VecEnv:
    """
    The vectorised envs of every script: ``sb3_gpg``'s ``make_vec_env_on`` (``env``, ``args`` and ``kwargs`` are its
    arguments), in VecNormalize where asked.

    :param normalize: VecNormalize's keyword arguments (e.g. ``gamma``, or ``EVAL_NORMALIZE`` for evaluation envs), or None
        for no VecNormalize
    :param normalizer: a saved VecNormalize (statistics and settings) to wrap the envs in, instead of ``normalize``
    """
    envs = make_vec_env_on(env, *args, **kwargs)
    if normalizer is not None:
        return VecNormalize.load(str(normalizer), envs)
    return envs if normalize is None else VecNormalize(envs, **normalize)


class EpisodeSeeds(gym.Wrapper):
    """
    Seeds each episode after a seeded reset with the next seed: an env reseeded with ``s`` before an evaluation plays the
    episodes of seeds ``s``, ``s + 1``, ..., each as a one-episode evaluation on its own seed would.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.next_seed: int | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        seed = self.next_seed if seed is None else seed
        self.next_seed = None if seed is None else seed + 1
        return self.env.reset(seed=seed, options=options)


class PeriodicEvaluation(EvalCallback):
    """
    SB3's EvalCallback at the start of the rollout after every ``eval_every`` iterations, that is after that iteration's
    update (EvalCallback's own trigger, every ``eval_freq`` steps, falls inside a rollout, before the update), and when
    ``evaluate()`` is called, e.g. after ``learn()`` for the last iteration. Each evaluation appends ``row(self)`` to
    ``rows``.

    :param eval_env: the evaluation envs (in VecNormalize where the training envs are: EvalCallback syncs the statistics)
    :param eval_every: iterations (rollouts) between evaluations
    :param row: the curve's row of the evaluation just made, from this callback's ``iteration``, ``last_mean_reward``,
        ``episode_returns`` and ``training_seconds``
    :param eval_seed: where given, the evaluation envs are reseeded with it before each evaluation, so that every
        evaluation plays the same episodes
    :param rows: the curve so far (a resumed run's): its last iteration is not evaluated again
    :param kwargs: EvalCallback's other arguments, e.g. ``n_eval_episodes``
    """

    model: OnPolicyAlgorithm  # GPG or PPO: iterations are rollouts of n_steps per env

    def __init__(
        self,
        eval_env: VecEnv,
        eval_every: int,
        row: Callable[["PeriodicEvaluation"], dict[str, Any]],
        eval_seed: int | None = None,
        rows: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        # EvalCallback's _on_step evaluates where n_calls % eval_freq == 0: with 1, whenever this class calls it
        super().__init__(eval_env, eval_freq=1, verbose=0, **kwargs)
        self.eval_every, self.row, self.eval_seed = eval_every, row, eval_seed
        self.rows = list(rows or [])
        self.evaluated = self.rows[-1]["iteration"] if self.rows else 0
        self.episode_returns: list[float] = []
        # Wall time of learn() less the evaluations, up to the last evaluation
        self.training_seconds = 0.0
        self._started = self._evaluating = 0.0

    @property
    def iteration(self) -> int:
        """Iterations (rollouts and updates) trained so far."""
        return self.model.num_timesteps // (self.model.n_steps * self.model.n_envs)

    def _init_callback(self) -> None:
        # EvalCallback warns where the training envs are of another VecEnv class: EnvPool's are evaluated on Gymnasium's
        # on purpose
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Training and eval env are not of the same type")
            super()._init_callback()

    def _on_training_start(self) -> None:
        self._started = time.perf_counter()

    def _on_rollout_start(self) -> None:
        if self.iteration > self.evaluated and self.iteration % self.eval_every == 0:
            self.evaluate()

    def _on_step(self) -> bool:
        return True  # evaluations happen at rollout starts

    def _log_success_callback(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        # evaluate_policy calls this at every step: its list of episode returns, filled in place, gives an evaluation's
        # spread (EvalCallback keeps the returns only where it writes them to evaluations.npz)
        self.episode_returns = locals_["episode_rewards"]
        super()._log_success_callback(locals_, globals_)

    def evaluate(self) -> None:
        """Evaluate now (EvalCallback's evaluation, VecNormalize sync and logging) and append the curve's row."""
        started = time.perf_counter()
        self.training_seconds = started - self._started - self._evaluating
        if self.eval_seed is not None:
            self.eval_env.seed(self.eval_seed)
        super()._on_step()
        self.evaluated = self.iteration
        self.rows.append(self.row(self))
        self._evaluating += time.perf_counter() - started


class MaskablePeriodicEvaluation(PeriodicEvaluation, MaskableEvalCallback):
    """PeriodicEvaluation with sb3-contrib's evaluation under action masks (MaskableEvalCallback's)."""


def run_name(env_id: str, algo: str, n_envs: int, seed: int) -> str:
    return f"{env_id}__{algo}__{n_envs}envs__seed{seed}"


def run_file(runs_dir: Path, run: tuple[str, str, int, int], suffix: str) -> Path:
    """A run's file: ``csv`` once finished; while it trains, its checkpoint's (e.g. ``partial.csv``, its curve so far)."""
    return runs_dir / f"{run_name(*run)}.{suffix}"


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fieldnames = list(dict.fromkeys(key for row in rows for key in row))  # resumed runs add a resumed_at column
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)


def finished_runs(folder: Path, pattern: str = "*.csv") -> list[Path]:
    """The CSV files of the finished runs under ``folder`` that match ``pattern`` (a run in progress has a .partial.csv)."""
    return [path for path in sorted(folder.glob(pattern)) if not path.name.endswith(".partial.csv")]


def read_csv(path: Path) -> list[dict]:
    types = {"n_envs": int, "seed": int, "iteration": int, "env_steps": int, "wall_time": float, "eval_mean": float}
    with open(path) as file:
        return [{key: types.get(key, str)(value) for key, value in row.items() if value != ""} for row in csv.DictReader(file)]


# Panels per row of a plot, so that a figure stays readable at page width
PANELS_PER_ROW = 3


def pyplot():
    """matplotlib's pyplot, drawing into files only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def panel_grid(count: int):
    """A figure of ``count`` panels, at most PANELS_PER_ROW a row (readable at a page's width), the spare ones blank."""
    n_cols = min(PANELS_PER_ROW, count)
    n_rows = -(-count // n_cols)
    figure, axes = pyplot().subplots(n_rows, n_cols, figsize=(4.4 * n_cols, 3.4 * n_rows), squeeze=False)
    for axis in axes.ravel()[count:]:
        axis.axis("off")
    return figure, axes


def clipped_bottom(means: list[np.ndarray], lows: list[np.ndarray]) -> float | None:
    """
    Where a few low points (e.g. PPO's first LunarLander evaluations at 4 envs) stretch a panel's y axis to more than
    three times the range of the rest, the axis stops a little below the rest.

    :param means: the panel's mean curves
    :param lows: the panel's band bottoms (minimum over seeds)
    :return: the y axis' bottom, or None where nothing needs clipping
    """
    values = np.concatenate(means + lows)
    bulk_low, top, lowest = float(np.percentile(values, 5)), float(np.max(values)), float(np.min(values))
    bulk_range = max(top - bulk_low, 1.0)
    return bulk_low - 0.25 * bulk_range if top - lowest > 3 * bulk_range else None


def plot_panel(axis, rows: list[dict], algos: list[str], x_key: str) -> tuple[dict[str, int], list, list]:
    """
    One env count's curves: per algorithm, the mean evaluation over training seeds and a min-max band.

    :return: the seeds per algorithm, and the mean curves and band bottoms drawn
    """
    seeds: dict[str, int] = {}
    means, lows = [], []
    for index, algo in enumerate(algos):
        runs: defaultdict[Any, dict] = defaultdict(dict)
        for row in rows:
            if row["algo"] == algo:
                runs[row["seed"]][row[x_key]] = row["eval_mean"]
        if not runs:
            continue
        xs = sorted(set.intersection(*(set(run) for run in runs.values())))
        values = np.array([[run[x] for x in xs] for run in runs.values()])
        axis.plot(xs, values.mean(axis=0), label=algo, color=f"C{index}")
        axis.fill_between(xs, values.min(axis=0), values.max(axis=0), alpha=0.2, color=f"C{index}")
        seeds[algo] = len(runs)
        means.append(values.mean(axis=0))
        lows.append(values.min(axis=0))
    return seeds, means, lows


def plots(rows: list[dict], out: Path) -> list[Path]:
    """
    Per env, reward against iterations and against env steps: one panel per env count, one curve per algorithm.

    :param rows: the runs' evaluations (read_csv's rows)
    :param out: the folder of the PNG files
    :return: the files written
    """
    plt = pyplot()
    written = []
    for env_id in sorted({row["env"] for row in rows}):
        env_rows = [row for row in rows if row["env"] == env_id]
        counts = sorted({row["n_envs"] for row in env_rows})
        algos = sorted({row["algo"] for row in env_rows})
        for x_key, x_label, suffix in (("iteration", "iteration", "iterations"), ("env_steps", "environment steps", "steps")):
            figure, axes = panel_grid(len(counts))
            for axis, n_envs in zip(axes.ravel(), counts, strict=False):
                seeds, means, lows = plot_panel(axis, [row for row in env_rows if row["n_envs"] == n_envs], algos, x_key)
                per_algo = ", ".join(f"{algo}: {n}" for algo, n in seeds.items())
                if len(set(seeds.values())) == 1:
                    per_algo = f"{next(iter(seeds.values()))} each"
                axis.set_title(textwrap.fill(f"{n_envs} envs (seeds: {per_algo})", 60), fontsize=10)  # many variants: wrapped
                axis.set_xlabel(x_label)
                if x_key == "env_steps":
                    axis.set_xscale("log")
                bottom = clipped_bottom(means, lows) if means else None
                if bottom is not None:
                    lowest = float(np.min(np.concatenate(lows)))
                    axis.set_ylim(bottom=bottom)
                    axis.text(0.02, 0.02, f"y axis cut at {bottom:.0f} (lowest: {lowest:.0f})", transform=axis.transAxes,
                              fontsize=8, color="0.35")  # fmt: skip
            for axis in axes[:, 0]:
                axis.set_ylabel("evaluation return")
            handles = {
                label: handle for axis in axes.ravel() for handle, label in zip(*axis.get_legend_handles_labels(), strict=True)
            }
            spare = axes.ravel()[len(counts) :]
            figure.suptitle(f"{env_id}: mean over training seeds (band: min-max)")
            figure.tight_layout()
            if len(spare) > 0:  # in the empty panel
                spare[0].legend(handles.values(), handles.keys(), loc="center")
            else:  # outside the axes, so that many variants (the ablation) hide no curve
                figure.legend(handles.values(), handles.keys(), loc="center left", bbox_to_anchor=(1.0, 0.5))
            path = out / f"{env_id}_{suffix}.png"
            figure.savefig(path, dpi=100, bbox_inches="tight")
            plt.close(figure)
            written.append(path)
    return written
