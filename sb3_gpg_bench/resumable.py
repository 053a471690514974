"""
An RL Zoo training that pauses and resumes, exactly: ``python -m sb3_gpg_bench.resumable --state PATH [--pause-at T]
[--pause-at-step N] -- <train's arguments>`` runs ``python -m sb3_gpg.train <train's arguments>`` until the first
rollout that starts at or after the pause, then writes the training's whole state to ``PATH`` and ends with status
``EXIT_PAUSED``; the same command then goes on from there, as often as it pauses, until the training ends. It pauses
at a rollout's start, so up to one rollout, update and evaluation after the time: leave that margin.

A paused run resumed gives the run that never paused: the same actions, updates and evaluations (the tests check it).
The state is everything that a run that goes on carries: the model (its policy, optimizer, rollout buffer and the
estimator's memory, its last observations), the training and evaluation envs whole (a MuJoCo env's simulator state,
each wrapper's counters, ``VecNormalize``'s statistics and running returns), the callbacks (the evaluations so far),
RL Zoo's experiment (which saves the trained model at the end) and the random generators' states (torch's, NumPy's
and Python's global ones, each env's own). Only the logger is built again (as ``learn`` builds it), with the values
the last update logged; the update count and the times SB3's table shows (``time/iterations``, ``time/fps``) start
again, and a Monitor file's episode times (``t``) count the pause.
Envs in subprocesses (``SubprocVecEnv``) cannot be paused.
"""

import argparse
import csv
import hashlib
import inspect
import os
import pickle
import random
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cloudpickle
import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, ProgressBarCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.monitor import ResultsWriter
from stable_baselines3.common.vec_env import SubprocVecEnv, VecEnv, VecEnvWrapper

if TYPE_CHECKING:
    from rl_zoo3.exp_manager import ExperimentManager

# EX_TEMPFAIL: not done, run the same command again
EXIT_PAUSED = 75


def _bare(cls: type) -> Any:
    return object.__new__(cls)


def _set_dict(obj: Any, state: dict[str, Any]) -> None:
    obj.__dict__.update(state)


def _set_wrapper_dict(wrapper: VecEnvWrapper, state: dict[str, Any]) -> None:
    wrapper.__dict__.update(state, class_attributes=dict(inspect.getmembers(type(wrapper))))  # as VecEnvWrapper's init


def _appending_writer(filename: str, fieldnames: tuple[str, ...], size: int) -> ResultsWriter:
    """
    A Monitor's ``ResultsWriter`` that goes on writing its file (without a second header), from where it was when the
    state was saved: the episodes of a part that ended without saving its state are dropped, as its state is.
    """
    with open(filename, "r+b") as file:
        file.truncate(size)
    writer = _bare(ResultsWriter)
    writer.file_handler = open(filename, "a", newline="\n")  # open while the Monitor lives, as SB3's
    writer.logger = csv.DictWriter(writer.file_handler, fieldnames=fieldnames)
    return writer


def provenance(argv: list[str]) -> dict[str, Any]:
    """
    :return: what a paused training must be resumed with: train's arguments, the files they name (their digests), the
        versions of the packages that train, and sb3_gpg's own code (its digest: an install of a checkout keeps one
        version number as its code changes)
    """
    import sb3_gpg

    package = Path(sb3_gpg.__file__).parent
    code = hashlib.sha256()
    for source in sorted([*package.rglob("*.py"), *package.rglob("*.yml")]):
        code.update(source.relative_to(package).as_posix().encode() + source.read_bytes())
    versions: dict[str, str | None] = {}
    for name in ("stable-baselines3", "sb3-contrib", "rl_zoo3", "torch", "numpy", "gymnasium", "mujoco", "box2d"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    files = {arg: hashlib.sha256(Path(arg).read_bytes()).hexdigest() for arg in argv if Path(arg).is_file()}
    return {"arguments": argv, "files": files, "versions": versions, "sb3_gpg": code.hexdigest()}


def _no_logger() -> None:
    return None


class _StatePickler(cloudpickle.Pickler):
    """
    Pickles envs and vector envs as they are (their own pickling makes a fresh env from its spec, or leaves out the
    wrapped envs), a Monitor's open file as the file to append to, no logger (``learn`` configures one) and callbacks
    without the variables of the frames that last called them.
    """

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, SubprocVecEnv):
            raise ValueError("A training whose envs run in subprocesses (SubprocVecEnv) cannot pause: use DummyVecEnv.")
        if isinstance(obj, VecEnvWrapper):  # less what it gathers from its class
            state = {name: value for name, value in obj.__dict__.items() if name != "class_attributes"}
            return _bare, (type(obj),), state, None, None, _set_wrapper_dict
        if isinstance(obj, (gym.Env, VecEnv)):
            return _bare, (type(obj),), dict(obj.__dict__), None, None, _set_dict
        if isinstance(obj, ResultsWriter):
            obj.file_handler.flush()
            return _appending_writer, (obj.file_handler.name, tuple(obj.logger.fieldnames), obj.file_handler.tell())
        if isinstance(obj, Logger):
            return _no_logger, ()
        if isinstance(obj, BaseCallback):  # without the frames' variables it last saw (learn gives them again)
            return _bare, (type(obj),), {**obj.__dict__, "locals": {}, "globals": {}}, None, None, _set_dict
        return super().reducer_override(obj)


def _random_states() -> dict[str, Any]:
    return {"torch": th.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
            "torch_threads": th.get_num_threads()}  # fmt: skip


def _set_random_states(states: dict[str, Any]) -> None:
    th.set_num_threads(states["torch_threads"])  # a float sum's order depends on the threads
    th.set_rng_state(states["torch"])
    np.random.set_state(states["numpy"])
    random.setstate(states["python"])


class Pause(BaseCallback):
    """
    At the first rollout that starts at or after the pause, write the training's state to ``path`` and end the
    process with ``EXIT_PAUSED``. In a resumed training, its first rollout start sets back what starting ``learn`` again
    changed: the random generators (gSDE's noise is drawn again before it) and the logged values not yet printed.

    :param path: where the state goes
    :param manager: RL Zoo's experiment, whose callbacks this one is among (it saves the trained model where train does)
    :param argv: train's arguments (a resume with other arguments, files or code is refused: ``provenance``)
    :param pause_at: seconds since the epoch, or None
    :param pause_at_step: a step count, or None
    """

    def __init__(self, path: Path, manager: "ExperimentManager", argv: list[str], pause_at: float | None,
                 pause_at_step: int | None) -> None:  # fmt: skip
        super().__init__()
        self.path, self.manager, self.argv = path, manager, argv
        self.pause_at, self.pause_at_step = pause_at, pause_at_step
        self.learn_kwargs: dict[str, Any] = {}
        self.total_timesteps = 0
        self.resumed: dict[str, Any] | None = None

    def _on_training_start(self) -> None:
        # learn's arguments, and its total (after _setup_learn, which adds the steps already taken when resuming)
        self.learn_kwargs = {name: self.locals[name] for name in ("log_interval", "tb_log_name", "progress_bar")}
        self.total_timesteps = int(self.locals["total_timesteps"])
        if any(isinstance(callback, ProgressBarCallback) for callback in self.manager.callbacks):
            raise ValueError("A training that pauses cannot keep a progress bar's state: train without -P (--progress).")

    def _on_rollout_start(self) -> None:
        if self.resumed is not None:
            _set_random_states(self.resumed["random"])
            if self.resumed["sde_noise"] is not None:
                self.model.policy.action_dist.__dict__.update(self.resumed["sde_noise"])
            for name, values in self.resumed["logged"].items():
                getattr(self.logger, name).update(values)
            self.resumed = None
            return
        due = (self.pause_at is not None and time.time() >= self.pause_at) or (
            self.pause_at_step is not None and self.num_timesteps >= self.pause_at_step
        )
        if due and self.num_timesteps < self.total_timesteps:
            self.save()
            sys.exit(EXIT_PAUSED)

    def save(self) -> None:
        dist = self.model.policy.action_dist
        noise = ("exploration_mat", "exploration_matrices")
        logged = ("name_to_value", "name_to_count", "name_to_excluded")
        state = {
            "manager": self.manager,
            "random": _random_states(),
            "sde_noise": {name: getattr(dist, name) for name in noise} if self.model.use_sde else None,
            "logged": {name: dict(getattr(self.logger, name)) for name in logged},
        }
        partial = self.path.with_name(self.path.name + ".tmp")
        with open(partial, "wb") as file:
            pickle.dump(provenance(self.argv), file)  # read first: what a resume must match
            _StatePickler(file, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
            file.flush()
            os.fsync(file.fileno())
        partial.replace(self.path)  # whole or not at all

    def _on_step(self) -> bool:
        return True


def resume(path: Path, argv: list[str], pause_at: float | None, pause_at_step: int | None) -> None:
    """
    Go on with the training paused in ``path`` until it ends or pauses again.

    :raises ValueError: where the state was made with other arguments, files or code (``provenance``)
    """
    import rl_zoo3.import_envs  # noqa: F401 (registers RL Zoo's envs, as train does)

    from sb3_gpg.zoo.registry import register_gpg

    register_gpg()
    with open(path, "rb") as file:
        made_by, now = pickle.load(file), provenance(argv)
        if made_by != now:
            changed = {key: (made_by[key], now[key]) for key in now if made_by.get(key) != now[key]}
            raise ValueError(
                f"{path} holds a training run made with other arguments, files or code, so going on with it would "
                f"give neither run (then, now): {changed}. Resume it as it was made, or remove it to start again."
            )
        state = pickle.load(file)
    manager = state["manager"]
    (pause,) = [callback for callback in manager.callbacks if isinstance(callback, Pause)]
    pause.path, pause.pause_at, pause.pause_at_step, pause.resumed = path, pause_at, pause_at_step, state
    model = pause.model
    try:
        model.learn(pause.total_timesteps - model.num_timesteps, callback=manager.callbacks, reset_num_timesteps=False,
                    **pause.learn_kwargs)  # fmt: skip
    finally:
        if model.env is not None:
            model.env.close()
    manager.save_trained_model(model)


def start(path: Path, argv: list[str], pause_at: float | None, pause_at_step: int | None) -> None:
    """``python -m sb3_gpg.train <argv>``, with ``Pause`` among its callbacks."""
    from rl_zoo3.exp_manager import ExperimentManager

    from sb3_gpg.zoo import run

    learn = ExperimentManager.learn

    def pausing_learn(manager: ExperimentManager, model: Any) -> None:
        manager.callbacks.append(Pause(path, manager, argv, pause_at, pause_at_step))
        learn(manager, model)

    ExperimentManager.learn = pausing_learn  # type: ignore[method-assign,assignment]
    try:
        run("train", argv, program="python -m sb3_gpg_bench.resumable")
    finally:
        ExperimentManager.learn = learn  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sb3_gpg_bench.resumable", description=__doc__.split("\n\n")[0].strip())
    parser.add_argument("--state", type=Path, required=True, help="the paused training's state (written on pausing)")
    parser.add_argument("--pause-at", type=float, help="pause at the first rollout from this time (seconds since the epoch)")
    parser.add_argument("--pause-at-step", type=int, help="pause at the first rollout from this step")
    parser.add_argument("train", nargs=argparse.REMAINDER, help="-- then python -m sb3_gpg.train's arguments")
    args = parser.parse_args(argv)
    train_argv = args.train[1:] if args.train[:1] == ["--"] else args.train
    if args.state.exists():
        resume(args.state, train_argv, args.pause_at, args.pause_at_step)
    else:
        start(args.state, train_argv, args.pause_at, args.pause_at_step)


if __name__ == "__main__":
    from sb3_gpg_bench import resumable  # so that the state names this module's Pause, not __main__'s

    resumable.main()
