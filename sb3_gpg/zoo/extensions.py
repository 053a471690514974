"""
What sb3_gpg adds to rl_zoo3 for every ``--algo``, GPG's or not: rl_zoo3's scripts run in this process under another
name (``run_script``, ``cli.zoo_argparse``), an evaluation seed apart from the training seed (``--eval-seed``), a trial
scored by its last few evaluations (``--trial-score-window``), Optuna's tables created before workers race on them
(``init_storage``) and plots saved as PNG files (``plots``). None of it knows GPG: its registration and checks are in
``registry`` and ``experiment``.
"""

import argparse
import contextlib
import functools
import random
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import numpy as np
from rl_zoo3 import exp_manager
from rl_zoo3.callbacks import TrialEvalCallback
from rl_zoo3.exp_manager import ExperimentManager
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg.zoo.cli import ZooError, zoo_argparse


@contextlib.contextmanager
def replaced(mapping: MutableMapping[str, Any], key: str, value: Any) -> Iterator[None]:
    """
    Set ``mapping[key]`` to ``value`` for the block: ``vars(sys)["argv"]``, ``os.environ["PATH"]``, an rl_zoo3 name.

    :param mapping: a dict, ``os.environ`` or a module's ``vars()``
    :param key: the entry to set
    :param value: its value within the block
    """
    saved = mapping[key]
    mapping[key] = value
    try:
        yield
    finally:
        mapping[key] = saved


def run_script(program: str, argv: list[str], script: Callable[[], Any]) -> None:
    """
    :param program: the name rl_zoo3's usage and error messages give (argparse's ``prog`` is ``sys.argv[0]``)
    :param argv: the script's arguments
    :param script: a function of rl_zoo3 that reads ``sys.argv``
    """
    with replaced(vars(sys), "argv", [program, *argv]):
        script()


def check_n_envs(n_envs: Any, where: str) -> None:
    """
    :param n_envs: the ``n_envs`` of a hyperparameter entry or of ``-params``
    :param where: what to name in the error (file and entry, or the option)
    :raises ZooError: for anything but an integer of 1 or more: rl_zoo3 would take it and fail later, naming something
        else (GPG: ``n_steps * n_envs``)
    """
    if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
        raise ZooError(f"{where}: n_envs {n_envs!r}: the number of training envs must be an integer, 1 or more")


def init_storage(storage: str, attempts: int = 10) -> None:
    """
    Create the tables of an Optuna RDB storage (SQLite, PostgreSQL, MySQL URL), retrying while another worker does
    the same: workers started together on a new database otherwise race on the schema and all but one fail.

    :param storage: an SQLAlchemy URL; journal files (``*.log``) need no set-up
    :param attempts: how many times to try
    """
    import sqlalchemy.exc
    from optuna.storages import RDBStorage

    if storage.endswith(".log"):
        return
    for attempt in range(attempts):
        try:
            RDBStorage(storage)
            return
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 + random.random())


class WindowedTrialEvalCallback(TrialEvalCallback):
    """
    rl_zoo3's ``TrialEvalCallback`` whose score, what it reports to the pruner and what the trial is worth, is the mean
    of the last ``window`` evaluations (of those so far, early on) instead of the last one: where one evaluation's
    return jumps with a fall or a lucky episode, a trial's rank then says more about its setting.

    :param window: how many evaluations the score averages; 1 gives rl_zoo3's score
    """

    def __init__(self, *args: Any, window: int = 1, **kwargs: Any):
        self.window = window
        self.scores: list[float] = []
        super().__init__(*args, **kwargs)
        self.scores.clear()  # EvalCallback's initial -inf is no evaluation
        # Each trial says how it was scored: a study resumed with another window mixes scores that do not compare
        self.trial.set_user_attr("score_window", window)

    # EvalCallback sets last_mean_reward after each evaluation, and TrialEvalCallback and rl_zoo3's objective read it
    @property
    def last_mean_reward(self) -> float:
        return float(np.mean(self.scores[-self.window :])) if self.scores else -np.inf

    @last_mean_reward.setter
    def last_mean_reward(self, value: float) -> None:
        self.scores.append(value)


class ExtendedExperimentManager(ExperimentManager):
    """
    rl_zoo3's ``ExperimentManager`` (same arguments) with an evaluation seed, windowed trial scores and Optuna's tables
    created before the search, for any algorithm.

    :param eval_seed: the seed of the evaluation envs (``--eval-seed``); None: the training seed, as in rl_zoo3, whose
        evaluation then starts from the first training episode's initial states
    :param trial_score_window: with ``-optimize``, a trial's score is the mean of its last this many evaluations
        (``--trial-score-window``); 1: rl_zoo3's, the last evaluation
    :raises ZooError: for a window above 1 without ``-optimize``
    """

    def __init__(
        self,
        args: argparse.Namespace,
        algo: str,
        *zoo_args: Any,
        eval_seed: int | None = None,
        trial_score_window: int = 1,
        **kwargs: Any,
    ):
        # Saved in args.yml with rl_zoo3's own arguments
        self.eval_seed = args.eval_seed = eval_seed
        self.trial_score_window = args.trial_score_window = trial_score_window
        super().__init__(args, algo, *zoo_args, **kwargs)
        if trial_score_window > 1 and not self.optimize_hyperparameters:
            raise ZooError(
                f"--trial-score-window {trial_score_window} scores the trials of a search: add -optimize, or leave it out"
            )

    def read_hyperparameters(self) -> tuple[dict[str, Any], dict[str, Any]]:
        hyperparams, saved_hyperparams = super().read_hyperparameters()
        if "n_envs" in hyperparams:  # before rl_zoo3 says "Using 0 environments" and fails further on
            where = f"{self.config} for {self.env_name.gym_id}" + (" with -params" if self.custom_hyperparams else "")
            check_n_envs(hyperparams["n_envs"], where)
        return hyperparams, saved_hyperparams

    # -optimize --n-jobs N makes envs from N threads, and create_envs swaps attributes the others read (re-entrant:
    # subclasses hold it around their own swaps)
    _create_envs_lock = threading.RLock()

    def create_envs(self, n_envs: int, eval_env: bool = False, no_log: bool = False) -> VecEnv:
        with self._create_envs_lock:
            if not eval_env or self.eval_seed is None:
                return super().create_envs(n_envs, eval_env=eval_env, no_log=no_log)
            # rl_zoo3 seeds every env it makes with self.seed
            seed, self.seed = self.seed, self.eval_seed
            try:
                return super().create_envs(n_envs, eval_env=True, no_log=no_log)
            finally:
                self.seed = seed

    def hyperparameters_optimization(self) -> None:
        if self.storage is not None:
            init_storage(self.storage)
        # rl_zoo3's objective builds the callback its module names
        trial_callback = functools.partial(WindowedTrialEvalCallback, window=self.trial_score_window)
        with replaced(vars(exp_manager), "TrialEvalCallback", trial_callback):
            return super().hyperparameters_optimization()


def plots(argv: list[str], program: str = "sb3-gpg plots") -> None:
    """
    rl_zoo3's plot scripts: ``plots train ...`` (``plot_train``: training curves of one run), ``plots all ...``
    (``all_plots``: evaluations of several algorithms and envs), ``plots file ...`` (``plot_from_file``).
    They only show their figures; ``--png PATH`` saves them instead (PATH, then PATH_2.png, ... for more figures),
    for machines without a display.

    :param argv: ``train``, ``all`` or ``file``, then that script's arguments
    :param program: the name the usage and error messages give
    """
    from rl_zoo3.plots import all_plots, plot_from_file, plot_train

    scripts = {"train": plot_train, "all": all_plots, "file": plot_from_file}
    if not argv or argv[0] not in scripts:
        raise ZooError(f"plots needs one of {', '.join(scripts)}: e.g. plots train --algo gpg --env CartPole-v1 -f logs")
    png_parser = argparse.ArgumentParser(add_help=False)
    png_parser.add_argument("--png", default=None)
    png_args, script_argv = png_parser.parse_known_args(argv[1:])
    if argv[0] == "train":
        script_argv = _window_that_fits(script_argv)
    module = sys.modules[scripts[argv[0]].__module__]
    program = f"{program} {argv[0]}"
    with replaced(vars(module), "argparse", zoo_argparse(program)):
        if png_args.png is None:
            run_script(program, script_argv, scripts[argv[0]])
            return

        import matplotlib

        # Drawn off-screen, the script's plt.show() does nothing and its figures stay open, to be saved here
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "FigureCanvasAgg is non-interactive")
            run_script(program, script_argv, scripts[argv[0]])
    stem = png_args.png.removesuffix(".png")
    saved: list[str] = []
    for number in plt.get_fignums():
        path = f"{stem}.png" if not saved else f"{stem}_{len(saved) + 1}.png"
        plt.figure(number).savefig(path, bbox_inches="tight", dpi=120)
        saved.append(path)
    plt.close("all")
    print("Saved " + ", ".join(saved) if saved else "No figure to save")


def _window_that_fits(argv: list[str]) -> list[str]:
    """
    ``plot_train`` draws a run only if it has at least ``-w`` episodes (100 by default), else silently nothing: with
    the default window, smooth over the shortest run's episodes instead and say so; with an explicit ``-w`` that is
    too long, a one-line error naming ``-w``.

    :param argv: ``plot_train``'s arguments
    :return: ``argv``, with ``-w`` added where the default window is too long
    """
    from stable_baselines3.common.monitor import LoadMonitorResultsError, load_results

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-a", "--algo")
    parser.add_argument("-e", "--env", nargs="+", default=[])
    parser.add_argument("-f", "--exp-folder")
    parser.add_argument("-w", "--episode-window", type=int)
    args, _ = parser.parse_known_args(argv)
    log_path = Path(args.exp_folder or ".") / (args.algo or "")
    if not (args.algo and args.exp_folder and log_path.is_dir()):
        return argv  # plot_train reports missing arguments itself
    episodes = {}
    for folder in sorted(path for path in log_path.iterdir() if path.is_dir() and any(env in path.name for env in args.env)):
        try:
            episodes[folder.name] = len(load_results(str(folder)))
        except LoadMonitorResultsError:
            continue
    if not episodes:
        raise ZooError(f"no run of {args.algo} on {' '.join(args.env)} with a monitor.csv under {log_path}")
    shortest, fewest = min(episodes.items(), key=lambda item: item[1])
    window = args.episode_window or 100
    if fewest >= window:
        return argv
    if args.episode_window is not None:
        raise ZooError(
            f"-w {window} is longer than run {shortest} ({fewest} episodes), which would not be drawn: "
            f"give -w {fewest} or less"
        )
    print(
        f"plots train: run {shortest} has {fewest} episodes, fewer than rl_zoo3's window of 100: "
        f"smoothing over {fewest} (-w sets it)"
    )
    return [*argv, "-w", str(fewest)]
