"""
rl_zoo3's train, enjoy, record_video and record_training scripts, run in this process with GPG registered. They read
their arguments from ``sys.argv``; what else of rl_zoo3 is replaced while one runs is named where it is done.
"""

import argparse
import contextlib
import functools
import importlib
import os
import runpy
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg.common.env_util import check_env_id
from sb3_gpg.common.vec_env.envpool import check_envpool_env_id
from sb3_gpg.gpg_mask.gpg_mask import MaskableGPG
from sb3_gpg.gpg_mask_recurrent.gpg_mask_recurrent import MaskableRecurrentGPG
from sb3_gpg.zoo.registry import ZooError


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
    :param program: the name rl_zoo3's usage messages give
    :param argv: the script's arguments
    :param script: a function of rl_zoo3 that reads ``sys.argv``
    """
    with replaced(vars(sys), "argv", [program, *argv]):
        script()


def _parse_early_arguments(argv: list[str]) -> argparse.Namespace:
    """
    Read the train flags that rl_zoo3 rejects, or fails on with a traceback, before it builds its ExperimentManager
    (an unknown env, ``--vec-env envpool``, a ``-params`` value that is not Python); it parses all of them itself.

    :param argv: rl_zoo3's train arguments
    :return: ``env``, ``gym_packages``, ``vec_env`` and ``hyperparams``
    :raises ZooError: for a ``-params`` value that is not Python
    """
    from rl_zoo3.utils import StoreDict

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--gym-packages", nargs="+", default=[])
    parser.add_argument("--vec-env", default="dummy")
    parser.add_argument("-params", "--hyperparams", nargs="+", action=StoreDict)
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


def _take_own_arguments(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """
    :param argv: the train arguments
    :return: ``eval_seed`` (``--eval-seed``, None where not given) and ``trial_score_window``
        (``--trial-score-window``, 1 where not given), and the arguments for rl_zoo3, which knows neither
    :raises ZooError: for a window below 1
    """
    parser = argparse.ArgumentParser(prog="sb3_gpg.train", add_help=False, allow_abbrev=False)
    parser.add_argument("--eval-seed", type=int, default=None)
    parser.add_argument("--trial-score-window", type=int, default=1)
    own, rest = parser.parse_known_args(argv)
    if own.trial_score_window < 1:
        raise ZooError(
            f"--trial-score-window {own.trial_score_window}: a trial's score is the mean of its last N evaluations, "
            "N at least 1 (1 scores the last evaluation, as rl_zoo3 does)"
        )
    return own, rest


def train(argv: list[str]) -> None:
    """
    ``rl_zoo3.train`` with GPG registered and checked (see ``ZooExperimentManager``); ``--vec-env envpool`` (any
    ``--algo``) trains on EnvPool's envs and evaluates on Gymnasium's; ``--eval-seed N`` (any ``--algo``) seeds the
    evaluation envs with N instead of the training seed; with ``-optimize``, ``--trial-score-window N`` (any
    ``--algo``) scores each trial by the mean of its last N evaluations instead of the last one.

    :param argv: rl_zoo3's train arguments, ``--eval-seed`` and ``--trial-score-window``
    :raises ZooError: for an unknown env, a missing entry, an unknown key, a bad GPG value or a bad
        ``--trial-score-window``
    """
    from rl_zoo3 import train as zoo_train

    from sb3_gpg.zoo.experiment import EnvPoolExperimentManager, ZooExperimentManager

    own, argv = _take_own_arguments(argv)
    args = _parse_early_arguments(argv)
    _check_env(args.env, args.gym_packages)
    manager = ZooExperimentManager
    if args.vec_env == "envpool":
        try:
            check_envpool_env_id(args.env)
        except (ImportError, ValueError) as error:
            raise ZooError(f"--vec-env envpool: {error}") from None
        # rl_zoo3's --vec-env accepts dummy and subproc only: EnvPoolExperimentManager answers dummy with EnvPool
        argv = [
            "--vec-env=dummy" if arg == "--vec-env=envpool" else "dummy" if previous == "--vec-env" else arg
            for previous, arg in zip(["", *argv], argv, strict=False)
        ]
        manager = EnvPoolExperimentManager
    # rl_zoo3's train() takes no ExperimentManager: it builds the one its module names
    with replaced(vars(zoo_train), "ExperimentManager", functools.partial(manager, **vars(own))):
        run_script("sb3_gpg.train", argv, zoo_train.train)


def enjoy(argv: list[str]) -> None:
    """
    ``rl_zoo3.enjoy`` with GPG registered; ``--algo gpg_mask`` and ``gpg_mask_lstm`` predict every action with the
    env's masks (rl_zoo3 carries the LSTM states).

    :param argv: rl_zoo3's enjoy arguments
    """
    from rl_zoo3 import enjoy as zoo_enjoy
    from rl_zoo3.utils import ALGOS
    from sb3_contrib.common.maskable.utils import get_action_masks

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
        run_script("sb3_gpg.enjoy", argv, zoo_enjoy.enjoy)


def record_video(argv: list[str]) -> None:
    """
    ``rl_zoo3.record_video`` (a ``__main__`` script) run in this process, with GPG registered.

    :param argv: rl_zoo3's record_video arguments
    """
    run_script("sb3_gpg.record_video", argv, lambda: runpy.run_module("rl_zoo3.record_video", run_name="__main__"))


def record_training(argv: list[str]) -> None:
    """
    ``rl_zoo3.record_training`` (a ``__main__`` script) run in this process, with GPG registered. It records each
    checkpoint with a ``python -m rl_zoo3.record_video`` subprocess and captions and joins the videos with ``ffmpeg``,
    both found on the PATH: a ``python`` that sends the former to ``sb3_gpg.record_video`` with this interpreter (a
    new rl_zoo3 process would not know GPG) goes first on it, and, where no ``ffmpeg`` is on it, the binary that
    imageio-ffmpeg (a moviepy dependency) ships.

    :param argv: rl_zoo3's record_training arguments
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
            import imageio_ffmpeg

            os.symlink(imageio_ffmpeg.get_ffmpeg_exe(), os.path.join(tools, "ffmpeg"))
        with replaced(os.environ, "PATH", tools + os.pathsep + os.environ["PATH"]):
            run_script(
                "sb3_gpg.record_training", argv, lambda: runpy.run_module("rl_zoo3.record_training", run_name="__main__")
            )
