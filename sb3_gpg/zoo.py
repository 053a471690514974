"""
RL Zoo integration: registers GPG, MaskableGPG and RecurrentGPG in rl_zoo3, then runs rl_zoo3's own scripts.

RL Zoo has no plugin mechanism: its ``ALGOS``, ``HYPERPARAMS_SAMPLER`` and ``HYPERPARAMS_CONVERTER`` are plain dicts,
``--algo`` choices are read from ``ALGOS`` when the parser is built, and the default config is rl_zoo3's own
``hyperparams/<algo>.yml``. So, as RL Zoo's maintainers advise for new algorithms (see its SBX guide), this module
adds ``gpg``, ``gpg_mask`` and ``gpg_lstm`` to those dicts, points ``--conf-file`` at the YAML shipped with sb3_gpg, checks the
GPG-specific input so that mistakes give one-line errors, and then hands over to rl_zoo3 unchanged. Every other
algorithm keeps working through the same entry points.
"""

import argparse
import contextlib
import difflib
import functools
import importlib
import inspect
import os
import random
import runpy
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import gymnasium as gym
import yaml
from torch import nn

from sb3_gpg.common.binning import check_group_arguments
from sb3_gpg.common.buffers import has_image_space
from sb3_gpg.common.envpool import check_envpool_env_id, make_envpool_env
from sb3_gpg.gpg.gpg import GPG
from sb3_gpg.gpg_mask.gpg_mask import MaskableGPG
from sb3_gpg.gpg_recurrent.gpg_recurrent import RecurrentGPG

GPG_HYPERPARAMS = Path(__file__).parent / "hyperparams" / "gpg.yml"
# --algo name -> the algorithm and its default hyperparameter file
GPG_ALGOS = {
    "gpg": (GPG, GPG_HYPERPARAMS),
    "gpg_mask": (MaskableGPG, Path(__file__).parent / "hyperparams" / "gpg_mask.yml"),
    "gpg_lstm": (RecurrentGPG, Path(__file__).parent / "hyperparams" / "gpg_lstm.yml"),
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
# Spatial bins round every pixel of an image, so the search leaves them out for image observations (see GroupRolloutBuffer)
SEARCHED_BINNINGS = ["time", "universal", "spatial", "spatial_time"]


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


def sample_gpg_params(trial: Any, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """
    Optuna sampler for GPG: learning rate, n_steps, batch_size, n_epochs, gamma, clip_range, ent_coef, max_grad_norm,
    binning, bin_size, leave_one_out and network size. Every combination is valid: ``batch_size`` is capped at
    ``n_steps`` (so it fits the rollout of any number of envs and divides it), and ``bin_size`` is only sampled for
    spatial binnings.

    :param trial: the Optuna trial
    :param n_actions: number of actions (unused, RL Zoo's signature)
    :param n_envs: number of envs (unused: every sampled batch size fits one env's rollout)
    :param additional_args: RL Zoo's extra arguments (unused)
    :return: GPG keyword arguments
    """
    binning = trial.suggest_categorical("binning", SEARCHED_BINNINGS)
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
    :return: the keyword arguments the algorithm's constructor accepts from a hyperparameter file
    """
    return set(inspect.signature(algorithm.__init__).parameters) - {"self", "env", "_init_setup_model"}


def check_gpg_hyperparams(hyperparams: dict[str, Any], where: str, algorithm: type[GPG] = GPG) -> None:
    """
    :param hyperparams: one entry of a hyperparameter file, with the command line's overrides
    :param where: what to name in the error (file and entry)
    :param algorithm: GPG, MaskableGPG or RecurrentGPG
    :raises ZooError: for a key the algorithm does not know or a bad value of GPG's own arguments
    """
    known = gpg_parameter_names(algorithm)
    unknown = sorted(set(hyperparams) - ZOO_KEYS - known)
    if unknown:
        close = {key: difflib.get_close_matches(key, known | ZOO_KEYS, n=1) for key in unknown}
        hints = ", ".join(f"{key!r}" + (f" (did you mean {match[0]!r}?)" if match else "") for key, match in close.items())
        raise ZooError(f"{where}: {algorithm.__name__} does not know {hints}.")
    try:
        check_group_arguments(
            hyperparams.get("binning", "time"),
            hyperparams.get("bin_size", 1.0),
            hyperparams.get("min_bin_count", 1),
            hyperparams.get("truncated_returns", "keep"),
            advantage_scale=hyperparams.get("advantage_scale", "none"),
        )
    except ValueError as error:
        raise ZooError(f"{where}: {error}") from None


def _parse_train_arguments(argv: list[str]) -> argparse.Namespace:
    """
    Read the few rl_zoo3 train flags that the checks need, as rl_zoo3 defines them; the rest pass through.
    """
    from rl_zoo3.utils import StoreDict

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("-conf", "--conf-file", default=None)
    parser.add_argument("-params", "--hyperparams", nargs="+", action=StoreDict, default={})
    parser.add_argument("--gym-packages", nargs="+", default=[])
    parser.add_argument("-optimize", "--optimize-hyperparameters", action="store_true", default=False)
    parser.add_argument("--storage", default=None)
    parser.add_argument("--env-kwargs", nargs="+", action=StoreDict, default=None)
    parser.add_argument("--vec-env", default="dummy")
    try:
        return parser.parse_known_args(argv)[0]
    except (SyntaxError, NameError) as error:  # StoreDict evaluates each value as Python
        raise ZooError(f"-params: {error}; write values as Python, e.g. -params binning:\"'time'\" n_steps:256") from None


def _check_env(env_id: str, gym_packages: list[str]) -> None:
    import rl_zoo3.import_envs  # noqa: F401 (registers RL Zoo's envs)

    for package in gym_packages:
        importlib.import_module(package)
    if env_id not in gym.envs.registry:
        match = difflib.get_close_matches(env_id, list(gym.envs.registry), n=1)
        raise ZooError(f"Unknown environment {env_id!r}" + (f": did you mean {match[0]!r}?" if match else "."))


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


def prepare_train(argv: list[str]) -> list[str]:
    """
    Check a ``train`` command line and, for ``--algo gpg`` (``gpg_mask``, ``gpg_lstm``) without ``--conf-file``, add
    sb3_gpg's ``gpg.yml`` (``gpg_mask.yml``, ``gpg_lstm.yml``).

    :param argv: the rl_zoo3 train arguments
    :return: the arguments to give rl_zoo3
    :raises ZooError: for an unknown env, a missing entry, an unknown key or a bad GPG value
    """
    args = _parse_train_arguments(argv)
    _check_env(args.env, args.gym_packages)
    if args.algo not in GPG_ALGOS:
        return argv
    algorithm, default_file = GPG_ALGOS[args.algo]
    if args.conf_file is None:
        argv = [*argv, "--conf-file", str(default_file)]
        args.conf_file = str(default_file)
    if args.conf_file.endswith((".yml", ".yaml")):
        with open(args.conf_file) as file:
            entries = yaml.safe_load(file) or {}
        name = args.env if args.env in entries else "default"
        if name not in entries:
            raise ZooError(f"{args.conf_file} has no entry for {args.env} and no 'default' entry: add one.")
        where = f"{args.conf_file} [{name}]" + (" with -params" if args.hyperparams else "")
        check_gpg_hyperparams({**entries[name], **args.hyperparams}, where, algorithm)
        if "env_kwargs" in entries[name] and args.env_kwargs is None:
            # rl_zoo3 builds its evaluation env and saves args.yml (read by enjoy and record_video) from the command
            # line's env kwargs only: give it the entry's, or e.g. CliffWalking's time limit is missing in evaluation
            argv = [*argv, "--env-kwargs", *(f"{key}:{value!r}" for key, value in entries[name]["env_kwargs"].items())]
    else:
        check_gpg_hyperparams(args.hyperparams, "-params", algorithm)
    if args.optimize_hyperparameters and args.storage is not None:
        init_storage(args.storage)
    if args.optimize_hyperparameters and has_image_space(gym.make(args.env).observation_space):
        SEARCHED_BINNINGS[:] = ["time", "universal"]
    return argv


def _run_with_argv(program: str, argv: list[str], function: Callable[[], Any]) -> None:
    with mock.patch.object(sys, "argv", [program, *argv]):
        function()


def _envpool_make_vec_env(
    env_id: str, make_env: Any, n_envs: int = 1, seed=None, env_kwargs=None, monitor_dir=None, wrapper_class=None, **_
):
    """rl_zoo3's call of ``make_vec_env``, answered with EnvPool's envs and a ``VecMonitor`` writing ``monitor.csv``."""
    from stable_baselines3.common.vec_env import VecMonitor

    if wrapper_class is not None:
        raise ZooError(
            f"--vec-env envpool: the entry's env_wrapper ({wrapper_class}) cannot wrap EnvPool's C++ envs; "
            "drop it from the hyperparameters or train with --vec-env dummy."
        )
    env = make_envpool_env(env_id, n_envs=n_envs, seed=seed, **(env_kwargs or {}))
    if monitor_dir is None:
        return env
    with warnings.catch_warnings():  # "already wrapped with a Monitor": both write the same episode statistics
        warnings.simplefilter("ignore", UserWarning)
        return VecMonitor(env, filename=monitor_dir)


def _training_envs_from_envpool(create_envs: Callable) -> Callable:
    """
    Wrap rl_zoo3's ``ExperimentManager.create_envs`` so that training envs come from EnvPool (with the run's
    ``monitor.csv``, for ``plots train``); evaluation envs stay Gymnasium's, so that scores are measured on the
    reference env.
    """
    from rl_zoo3 import exp_manager

    def create_envs_with_envpool(manager, n_envs: int, eval_env: bool = False, no_log: bool = False):
        if eval_env:
            return create_envs(manager, n_envs, eval_env=eval_env, no_log=no_log)
        make_vec_env = functools.partial(_envpool_make_vec_env, manager.env_name.gym_id)
        with mock.patch.object(exp_manager, "make_vec_env", make_vec_env):
            return create_envs(manager, n_envs, eval_env=eval_env, no_log=no_log)

    return create_envs_with_envpool


def train(argv: list[str]) -> None:
    """
    ``rl_zoo3.train`` with GPG registered and checked; ``--vec-env envpool`` (any ``--algo``) trains on EnvPool's
    envs and evaluates on Gymnasium's.
    """
    from rl_zoo3.exp_manager import ExperimentManager
    from rl_zoo3.train import train as zoo_train

    argv = prepare_train(argv)
    args = _parse_train_arguments(argv)
    with contextlib.ExitStack() as patches:
        if args.algo == "gpg_mask":
            # RL Zoo evaluates with SB3's EvalCallback, which predicts without masks
            from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback

            patches.enter_context(mock.patch("rl_zoo3.exp_manager.EvalCallback", MaskableEvalCallback))
        if args.vec_env == "envpool":
            try:
                check_envpool_env_id(args.env)
            except (ImportError, ValueError) as error:
                raise ZooError(f"--vec-env envpool: {error}") from None
            # rl_zoo3 accepts dummy and subproc only: it builds the envs through dummy's path, answered by EnvPool
            argv = [{"envpool": "dummy", "--vec-env=envpool": "--vec-env=dummy"}.get(arg, arg) for arg in argv]
            envpool_envs = _training_envs_from_envpool(ExperimentManager.create_envs)
            patches.enter_context(mock.patch.object(ExperimentManager, "create_envs", envpool_envs))
        _run_with_argv("sb3_gpg.train", argv, zoo_train)


def enjoy(argv: list[str]) -> None:
    """``rl_zoo3.enjoy`` with GPG registered; for ``--algo gpg_mask``, every action is predicted with the env's masks."""
    from rl_zoo3.enjoy import enjoy as zoo_enjoy

    if _parse_train_arguments(argv).algo != "gpg_mask":
        _run_with_argv("sb3_gpg.enjoy", argv, zoo_enjoy)
        return
    from rl_zoo3 import enjoy as zoo_enjoy_module
    from sb3_contrib.common.maskable.utils import get_action_masks

    envs = []  # the env rl_zoo3's enjoy plays in
    create = zoo_enjoy_module.create_test_env

    def create_test_env(*args, **kwargs):
        envs.append(create(*args, **kwargs))
        return envs[-1]

    predict = MaskableGPG.predict

    def predict_with_masks(model, observation, state=None, episode_start=None, deterministic=False, action_masks=None):
        if action_masks is None and envs:
            action_masks = get_action_masks(envs[-1])
        return predict(model, observation, state, episode_start, deterministic, action_masks)

    with (
        mock.patch.object(zoo_enjoy_module, "create_test_env", create_test_env),
        mock.patch.object(MaskableGPG, "predict", predict_with_masks),
    ):
        _run_with_argv("sb3_gpg.enjoy", argv, zoo_enjoy)


def record_video(argv: list[str]) -> None:
    """``rl_zoo3.record_video`` (a ``__main__`` script) run in this process, with GPG registered."""
    _run_with_argv("sb3_gpg.record_video", argv, lambda: runpy.run_module("rl_zoo3.record_video", run_name="__main__"))


def record_training(argv: list[str]) -> None:
    """
    ``rl_zoo3.record_training``, whose ``python -m rl_zoo3.record_video`` subprocesses would not know GPG: they are
    sent to ``sb3_gpg.record_video`` with this interpreter instead. rl_zoo3 captions and joins the videos with an
    ``ffmpeg`` command; where none is on the PATH, the binary that imageio-ffmpeg (a moviepy dependency) ships is used.
    """
    original_call = subprocess.call

    def call(command: list[str], *args, **kwargs) -> int:
        if command[:3] == ["python", "-m", "rl_zoo3.record_video"]:
            command = [sys.executable, "-m", "sb3_gpg.record_video", *command[3:]]
        return original_call(command, *args, **kwargs)

    with tempfile.TemporaryDirectory() as ffmpeg_dir, mock.patch.object(subprocess, "call", call):
        path = os.environ["PATH"]
        if shutil.which("ffmpeg") is None:
            import imageio_ffmpeg

            os.symlink(imageio_ffmpeg.get_ffmpeg_exe(), os.path.join(ffmpeg_dir, "ffmpeg"))
            path = ffmpeg_dir + os.pathsep + path
        with mock.patch.dict(os.environ, {"PATH": path}):
            _run_with_argv(
                "sb3_gpg.record_training", argv, lambda: runpy.run_module("rl_zoo3.record_training", run_name="__main__")
            )


def plots(argv: list[str]) -> None:
    """
    rl_zoo3's plot scripts: ``plots train ...`` (``plot_train``: training curves of one run), ``plots all ...``
    (``all_plots``: evaluations of several algorithms and envs), ``plots file ...`` (``plot_from_file``).
    They only show their figures; ``--png PATH`` saves them instead (PATH, then PATH_2.png, ... for more figures),
    for machines without a display.
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
    if png_args.png is None:
        _run_with_argv(f"sb3_gpg.plots {argv[0]}", script_argv, scripts[argv[0]])
        return

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    saved: list[str] = []

    def save_figures(*args, **kwargs) -> None:
        stem = png_args.png.removesuffix(".png")
        for number in plt.get_fignums():
            path = f"{stem}.png" if not saved else f"{stem}_{len(saved) + 1}.png"
            plt.figure(number).savefig(path, bbox_inches="tight", dpi=120)
            saved.append(path)
        plt.close("all")

    with mock.patch.object(plt, "show", save_figures):
        _run_with_argv(f"sb3_gpg.plots {argv[0]}", script_argv, scripts[argv[0]])
    print("Saved " + ", ".join(saved) if saved else "No figure to save")


def _window_that_fits(argv: list[str]) -> list[str]:
    """
    ``plot_train`` draws a run only if it has at least ``-w`` episodes (100 by default), else silently nothing: with
    the default window, smooth over the shortest run's episodes instead and say so; with an explicit ``-w`` that is
    too long, a one-line error naming ``-w``.

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


COMMANDS: dict[str, Callable[[list[str]], None]] = {
    "train": train,
    "enjoy": enjoy,
    "record_video": record_video,
    "record_training": record_training,
    "plots": plots,
}


def run(command: str, argv: list[str] | None = None) -> None:
    """
    Run one RL Zoo command with GPG registered; a ``ZooError`` ends the process with a one-line message.

    :param command: one of ``COMMANDS``
    :param argv: its arguments (``sys.argv[1:]`` when None)
    """
    register_gpg()
    try:
        COMMANDS[command](sys.argv[1:] if argv is None else argv)
    except ZooError as error:
        sys.exit(f"sb3-gpg {command}: error: {error}")


def main(argv: list[str] | None = None) -> None:
    """
    The ``sb3-gpg`` console script: ``sb3-gpg {train,enjoy,record_video,record_training,plots} ...``.
    """
    argv = sys.argv[1:] if argv is None else argv
    usage = f"usage: sb3-gpg {{{','.join(COMMANDS)}}} [rl_zoo3 arguments]; e.g. sb3-gpg train --algo gpg --env CartPole-v1"
    if not argv:
        sys.exit(usage)
    if argv[0] in ("-h", "--help"):
        print(f"{usage}\nEach command takes rl_zoo3's arguments and lists them with --help, e.g. sb3-gpg train --help")
        return
    if argv[0] not in COMMANDS:
        close = difflib.get_close_matches(argv[0], COMMANDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        sys.exit(f"sb3-gpg: error: {argv[0]!r} is not a command{hint}; choose from {', '.join(COMMANDS)}\n{usage}")
    run(argv[0], argv[1:])
