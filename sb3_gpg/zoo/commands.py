"""
The ``sb3-gpg`` commands: rl_zoo3's train, enjoy, record_video, record_training and plot scripts, run in this process
with GPG registered (``sb3_gpg.zoo.run`` registers it), under the command's name, with sb3_gpg's extra options and
one-line errors for the mistakes rl_zoo3 answers with a traceback. What else of rl_zoo3 is replaced while one runs is
named where it is done.
"""

import argparse
import contextlib
import functools
import importlib
import io
import os
import runpy
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg.common.env_util import check_env_id
from sb3_gpg.common.swap_guards.foreign_policies import check_saved_policy
from sb3_gpg.common.vec_env.envpool import check_envpool_env_id
from sb3_gpg.gpg_mask.gpg_mask import MaskableGPG
from sb3_gpg.gpg_mask_recurrent.gpg_mask_recurrent import MaskableRecurrentGPG
from sb3_gpg.zoo.cli import CHANGED_TRAIN_OPTIONS, OWN_TRAIN_OPTIONS, ZooError, zoo_argparse
from sb3_gpg.zoo.experiment import EnvPoolExperimentManager, ZooExperimentManager
from sb3_gpg.zoo.extensions import check_n_envs, plots, replaced, run_script
from sb3_gpg.zoo.registry import GPG_ALGOS, algo_names

__all__ = ["enjoy", "plots", "record_training", "record_video", "train"]

# Where rl_zoo3's train writes without -f
TRAIN_LOG_FOLDER = "logs"


def _parse_early_arguments(argv: list[str]) -> argparse.Namespace:
    """
    Read the train flags that rl_zoo3 rejects, or fails on with a traceback, before it builds its ExperimentManager
    (an unknown env, ``--vec-env envpool``, a ``-params`` value that is not Python); it parses all of them itself.

    :param argv: rl_zoo3's train arguments
    :return: ``env``, ``gym_packages``, ``vec_env``, ``hyperparams``, and ``num_threads`` and ``n_timesteps`` (as
        given, strings)
    :raises ZooError: for a ``-params`` value that is not Python
    """
    from rl_zoo3.utils import StoreDict

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--gym-packages", nargs="+", default=[])
    parser.add_argument("--vec-env", default="dummy")
    parser.add_argument("-params", "--hyperparams", nargs="+", action=StoreDict)
    # not integers: rl_zoo3's parser says so
    parser.add_argument("--num-threads")
    parser.add_argument("-n", "--n-timesteps")
    try:
        return parser.parse_known_args(argv)[0]
    except (SyntaxError, NameError) as error:  # StoreDict evaluates each value as Python
        raise ZooError(f"-params: {error}; write values as Python, e.g. -params binning:\"'time'\" n_steps:256") from None


def _check_env(env_id: str, gym_packages: list[str]) -> None:
    """
    :param env_id: the ``--env`` to train on
    :param gym_packages: the modules that register more envs (``--gym-packages``)
    :raises ZooError: for an env that no module registers, with the closest id
    """
    import rl_zoo3.import_envs  # noqa: F401 (registers RL Zoo's envs)

    for package in gym_packages:
        importlib.import_module(package)
    try:
        check_env_id(env_id)
    except ValueError as error:
        raise ZooError(str(error)) from None


def _take_own_arguments(argv: list[str], program: str) -> tuple[argparse.Namespace, list[str]]:
    """
    :param argv: the train arguments
    :param program: the name the usage and error messages give
    :return: ``eval_seed`` (``--eval-seed``, None where not given) and ``trial_score_window``
        (``--trial-score-window``, 1 where not given), and the arguments for rl_zoo3, which knows neither
    :raises ZooError: for a negative evaluation seed or a window below 1
    """
    parser = argparse.ArgumentParser(prog=program, add_help=False, allow_abbrev=False)
    for option, kwargs in OWN_TRAIN_OPTIONS.items():
        parser.add_argument(option, **kwargs)
    own, rest = parser.parse_known_args(argv)
    if own.eval_seed is not None and own.eval_seed < 0:
        raise ZooError(
            f"--eval-seed {own.eval_seed}: Gymnasium seeds an env with 0 or more; leave it out for the training seed"
        )
    if own.trial_score_window < 1:
        raise ZooError(
            f"--trial-score-window {own.trial_score_window}: a trial's score is the mean of its last N evaluations, "
            "N at least 1 (1 scores the last evaluation, as rl_zoo3 does)"
        )
    return own, rest


def _experiment_manager(*args: Any, vec_env_type: str = "dummy", **kwargs: Any) -> ZooExperimentManager:
    """
    :param args: rl_zoo3's ``ExperimentManager`` arguments, as its train() passes them
    :param vec_env_type: ``--vec-env``
    :param kwargs: rl_zoo3's keyword arguments and sb3_gpg's (``eval_seed``, ``trial_score_window``)
    :return: the ExperimentManager for ``--vec-env``: EnvPool's for ``envpool``, which rl_zoo3 does not know
    """
    manager = EnvPoolExperimentManager if vec_env_type == "envpool" else ZooExperimentManager
    return manager(*args, vec_env_type=vec_env_type, **kwargs)


def train(argv: list[str], program: str = "sb3-gpg train") -> None:
    """
    ``rl_zoo3.train`` with GPG registered and checked (see ``ZooExperimentManager``), one torch thread unless
    ``--num-threads`` says otherwise; ``--vec-env envpool`` (any ``--algo``) trains on EnvPool's envs and evaluates on
    Gymnasium's; ``--eval-seed N`` (any ``--algo``) seeds the evaluation envs with N instead of the training seed; with
    ``-optimize``, ``--trial-score-window N`` (any ``--algo``) scores each trial by the mean of its last N evaluations
    instead of the last one.

    :param argv: rl_zoo3's train arguments, ``--eval-seed`` and ``--trial-score-window``
    :param program: the name the usage and error messages give
    :raises ZooError: for an unknown env, a missing entry, an unknown key, a bad GPG value or update setting, a bad
        ``--trial-score-window``, a negative ``--num-threads`` other than -1, an ``-n`` of 0 or below -1, or a
        ``-params n_envs`` below 1
    """
    from rl_zoo3 import train as zoo_train

    own, argv = _take_own_arguments(argv, program)
    args = _parse_early_arguments(argv)
    # rl_zoo3 reads any number below 1 as its default, so a mistyped sign or a 0 would pass silently
    if _below(args.num_threads, -1):
        raise ZooError(
            f"--num-threads {args.num_threads}: pass a number of torch threads (1, the default, or more), or -1 "
            "or 0 for torch's default (one per core)"
        )
    if _below(args.n_timesteps, 1) and int(args.n_timesteps) != -1:
        raise ZooError(
            f"-n {args.n_timesteps}: pass a number of training steps (1 or more), or -1 (the default) for the "
            "hyperparameters file's n_timesteps"
        )
    if args.hyperparams and "n_envs" in args.hyperparams:  # before rl_zoo3 says "Using -1 environments" and GPG fails
        check_n_envs(args.hyperparams["n_envs"], "-params")
    _check_env(args.env, args.gym_packages)
    if args.vec_env == "envpool":
        try:
            check_envpool_env_id(args.env)
        except (ImportError, ValueError) as error:
            raise ZooError(f"--vec-env envpool: {error}") from None
    # rl_zoo3's train() parses sys.argv with the argparse its module imported, and takes no ExperimentManager: it
    # builds the one its module names
    parser_module = zoo_argparse(program, CHANGED_TRAIN_OPTIONS, added=OWN_TRAIN_OPTIONS)
    with (
        replaced(vars(zoo_train), "argparse", parser_module),
        replaced(vars(zoo_train), "ExperimentManager", functools.partial(_experiment_manager, **vars(own))),
    ):
        run_script(program, argv, zoo_train.train)


def _below(value: str | None, least: int) -> bool:
    """
    :param value: a command-line argument as given, None where not given
    :param least: the smallest value it may take
    :return: whether it is an integer below ``least``
    """
    return value is not None and value.lstrip("-").isdigit() and int(value) < least


def _check_model(argv: list[str], command: str) -> None:
    """
    Find the model that rl_zoo3's enjoy or record_video would load, where rl_zoo3 answers a missing one with a
    traceback (enjoy first tries to download RL Zoo's pretrained agent from the Hugging Face hub, which has no GPG and
    refuses to unpickle without ``TRUST_REMOTE_CODE=True``).

    :param argv: the script's arguments
    :param command: ``enjoy`` or ``record_video``
    :raises ZooError: for fewer than one env, where no model is found, naming where it was looked for and what to
        pass, or where GPG's ``--algo`` finds another algorithm's model
    """
    from huggingface_sb3 import EnvironmentName
    from rl_zoo3.utils import get_model_path

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("-f", "--folder", default="rl-trained-agents")
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--exp-id", type=int, default=0)
    parser.add_argument("--load-best", action="store_true")
    parser.add_argument("--load-checkpoint", type=int)
    parser.add_argument("--load-last-checkpoint", action="store_true")
    parser.add_argument("--n-envs", type=int, default=1)
    try:
        args = parser.parse_known_args(argv)[0]
    except SystemExit:  # a value of the wrong type: rl_zoo3's parser says which
        return
    if args.n_envs < 1:  # rl_zoo3 fails on its first step with an IndexError
        raise ZooError(f"--n-envs {args.n_envs}: play in 1 env (the default) or more")
    model = (args.exp_id, args.folder, args.algo, EnvironmentName(args.env))
    loading = (args.load_best, args.load_checkpoint, args.load_last_checkpoint)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # "Loading latest experiment": rl_zoo3 says it again
            _, model_path, _ = get_model_path(*model, *loading)
    except (AssertionError, ValueError) as error:
        missing = str(error)
    else:
        if args.algo in GPG_ALGOS:
            # another GPG class's file (an --algo gpg run played with --algo gpg_mask) fails in rl_zoo3's load
            algorithm = GPG_ALGOS[args.algo][0]
            try:
                check_saved_policy(model_path, algorithm.__name__, algorithm.policy_base, None)
            except ValueError as error:
                raise ZooError(f"{error} (on the command line, {algo_names()})") from None
        return
    default_folder = args.folder == "rl-trained-agents"
    hub = command == "enjoy" and "rl-trained-agents" in args.folder and args.algo not in GPG_ALGOS  # as rl_zoo3 tests
    if hub and os.environ.get("TRUST_REMOTE_CODE", "").lower() == "true":
        return  # rl_zoo3 downloads the pretrained agent
    log_path = Path(args.folder, args.algo)
    runs = sorted(path.name for path in log_path.glob(f"{args.env}_*") if path.is_dir())
    found = f"runs in {log_path}: {', '.join(runs)}" if runs else f"no run of {args.algo} on {args.env} in {log_path}"
    if default_folder:
        fix = f"pass -f with the folder sb3-gpg train wrote to (its -f, {TRAIN_LOG_FOLDER} by default)"
        if hub:
            fix += f", or set TRUST_REMOTE_CODE=True to download RL Zoo's pretrained {args.algo} agent"
    else:
        fix = "check -f, --algo, --env and --exp-id (0: the latest run)"
    raise ZooError(f"{missing.rstrip('.')} ({found}): {fix}")


def enjoy(argv: list[str], program: str = "sb3-gpg enjoy") -> None:
    """
    ``rl_zoo3.enjoy`` with GPG registered; ``--algo gpg_mask`` and ``gpg_mask_lstm`` predict every action with the
    env's masks (rl_zoo3 carries the LSTM states).

    :param argv: rl_zoo3's enjoy arguments
    :param program: the name the usage and error messages give
    :raises ZooError: where there is no model to load
    """
    from rl_zoo3 import enjoy as zoo_enjoy
    from rl_zoo3.utils import ALGOS
    from sb3_contrib.common.maskable.utils import get_action_masks

    if not {"-h", "--help"} & set(argv):
        _check_model(argv, "enjoy")
    # rl_zoo3's enjoy() predicts without action masks and keeps its env to itself: the env it makes is kept here, and
    # the maskable GPG it loads takes that env's masks
    envs: list[VecEnv] = []
    create_test_env = zoo_enjoy.create_test_env

    def create_and_keep_test_env(*args: Any, **kwargs: Any) -> VecEnv:
        envs.append(create_test_env(*args, **kwargs))
        return envs[-1]

    class PlayingWithMasks:
        def predict(self, *args: Any, action_masks: np.ndarray | None = None, **kwargs: Any) -> tuple[np.ndarray, Any]:
            if action_masks is None:
                action_masks = get_action_masks(envs[-1])
            # a mixin: the next class in the MRO is the algorithm
            return super().predict(*args, action_masks=action_masks, **kwargs)  # type: ignore[misc]

    class PlayingMaskableGPG(PlayingWithMasks, MaskableGPG):
        pass

    class PlayingMaskableRecurrentGPG(PlayingWithMasks, MaskableRecurrentGPG):
        pass

    with (
        replaced(vars(zoo_enjoy), "create_test_env", create_and_keep_test_env),
        replaced(ALGOS, "gpg_mask", PlayingMaskableGPG),
        replaced(ALGOS, "gpg_mask_lstm", PlayingMaskableRecurrentGPG),
    ):
        run_script(program, argv, zoo_enjoy.enjoy)


def record_video(argv: list[str], program: str = "sb3-gpg record_video") -> None:
    """
    ``rl_zoo3.record_video`` (a ``__main__`` script) run in this process, with GPG registered.

    :param argv: rl_zoo3's record_video arguments
    :param program: the name the usage and error messages give
    :raises ZooError: where there is no model to load
    """
    if not {"-h", "--help"} & set(argv):
        _check_model(argv, "record_video")
    run_script(program, argv, lambda: runpy.run_module("rl_zoo3.record_video", run_name="__main__"))


def record_training(argv: list[str], program: str = "sb3-gpg record_training") -> None:
    """
    ``rl_zoo3.record_training`` (a ``__main__`` script) run in this process, with GPG registered. It records each
    checkpoint with a ``python -m rl_zoo3.record_video`` subprocess and captions and joins the videos with ``ffmpeg``,
    both found on the PATH: a ``python`` that sends the former to ``sb3_gpg.record_video`` with this interpreter (a
    new rl_zoo3 process would not know GPG) goes first on it, and, where no ``ffmpeg`` is on it, the binary that
    imageio-ffmpeg (a moviepy dependency) ships.

    :param argv: rl_zoo3's record_training arguments
    :param program: the name the usage and error messages give
    :raises ZooError: where there is neither an ``ffmpeg`` on the PATH nor imageio-ffmpeg (but for the help)
    """
    with tempfile.TemporaryDirectory() as tools:
        python = Path(tools, "python")
        python.write_text(
            "#!/bin/sh\n"
            '[ "$1 $2" = "-m rl_zoo3.record_video" ] && shift 2 && set -- -m sb3_gpg.record_video "$@"\n'
            f'exec {shlex.quote(sys.executable)} "$@"\n'
        )
        python.chmod(0o755)
        if shutil.which("ffmpeg") is None:
            try:
                import imageio_ffmpeg
            except ImportError:
                if not {"-h", "--help"} & set(argv):  # the help needs no ffmpeg
                    raise ZooError(
                        "record_training joins its videos with ffmpeg: none is on the PATH and imageio-ffmpeg is not "
                        "installed. pip install moviepy (which brings imageio-ffmpeg and records the videos), or install "
                        "ffmpeg"
                    ) from None
            else:
                os.symlink(imageio_ffmpeg.get_ffmpeg_exe(), os.path.join(tools, "ffmpeg"))
        with replaced(os.environ, "PATH", tools + os.pathsep + os.environ["PATH"]):
            run_script(program, argv, lambda: runpy.run_module("rl_zoo3.record_training", run_name="__main__"))
