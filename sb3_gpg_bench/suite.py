"""
Grids of RL Zoo trainings run the way an RL Zoo user runs them (``python -m sb3_gpg.train``, i.e. ``sb3-gpg train``,
each algorithm with its own hyperparameter file), on this machine's cores or on a Ray cluster; ``scripts/zoo_suite.py``
is their command line and ``sb3_gpg_bench.suite_report`` their tables and plots.

Each run is one ``train`` subprocess with ``N_EVALUATIONS`` evaluations over its budget (RL Zoo's ``EvalCallback``:
``EVAL_EPISODES`` deterministic episodes each) and one torch thread. What a run leaves in ``<out>/runs/<run>/`` is
small: RL Zoo's ``evaluations.npz``, the resolved hyperparameters (``config.yml``, ``args.yml``) and ``meta.json``
(command, wall time, versions, the processor (``cpu``), the machine's load through the run and when each evaluation
was written), and ``training_log.json.gz`` (``LOGGED_KEYS``); model files are not kept.
"""

import copy
import gzip
import hashlib
import json
import platform
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import yaml
from tqdm import tqdm

from sb3_gpg_bench.grid import run_grid
from sb3_gpg_bench.resumable import EXIT_PAUSED
from sb3_gpg_bench.suites import BEFORE_DEFAULTS_CHANGED, PPO_ENTRY, Setting, parsed_yaml, pinned_entry
from sb3_gpg_bench.timing import run_watched

N_EVALUATIONS = 20
EVAL_EPISODES = 10
# rl_zoo3's ppo.yml has v4 (or v2) MuJoCo entries only: the v5 envs use them
OLDER_ENTRIES = {"HalfCheetah-v5": "HalfCheetah-v4", "Hopper-v5": "Hopper-v4", "Walker2d-v5": "Walker2d-v4",
              "Swimmer-v5": "Swimmer-v4", "Ant-v5": "Ant-v4", "InvertedDoublePendulum-v5": "InvertedDoublePendulum-v2",
              "Reacher-v5": "Reacher-v2", "InvertedPendulum-v5": "InvertedPendulum-v2"}  # fmt: skip
RUN_FILES = ("evaluations.npz", "config.yml", "args.yml", "meta.json")
# In a paused run's scratch folder: its state, and its parts so far (each one's wall time, load record and output)
PAUSED_STATE = "paused.pkl"
SEGMENTS = "segments.json.gz"
# A run's log of what each update logged, compressed (runs made before it was, ``training_log.json``)
TRAINING_LOG = "training_log.json.gz"
# The points a run's log keeps per key: a run of many short rollouts (InvertedPendulum's 31,250 updates) keeps every
# k-th update's, so that its log stays light (under the 512 KB a results file may weigh, with every key logged); the
# reports read quarter means and medians and 200-point curves
MAX_LOGGED_POINTS = 4000
# What a run records of its processor (``cpu``): the name, and Linux's /proc/cpuinfo keys
CPU_FIELDS = {"name": "model name", "family": "cpu family", "model": "model", "stepping": "stepping"}
# What each update logged that the runs are compared on (at most MAX_LOGGED_POINTS per key), read from the training's
# standard output (SB3's tables at ``verbose=1``), kept in the training log: how much of the returns the baseline or
# critic explains (PPO's train/explained_variance; GPG's train/baseline_explained_variance, held out, which runs before
# 0.1.0's release logged as gpg/baseline_explained_variance); the Gaussian policy's noise and the training episodes'
# length and return, which show a policy that learns to end its episodes
LOGGED_KEYS = (
    "train/explained_variance",
    "train/baseline_explained_variance",
    "gpg/baseline_explained_variance",
    "diagnosis/returns_explained_variance",
    "diagnosis/cut_returns_explained_variance",
    "train/std",
    "rollout/ep_len_mean",
    "rollout/ep_rew_mean",
    # the update's dynamics (sb3_gpg_bench.dynamics)
    "train/entropy_loss",
    "train/approx_kl",
    "train/clip_fraction",
    # what sets how far an update moves the policy's noise (critic_variants.AdvantageSignal)
    "diagnosis/advantage_std",
    "diagnosis/advantage_logstd_corr",
    "diagnosis/mean_gradient_agreement",
    "diagnosis/advantage_reward_corr",
    # the share of the linear baseline's folds that took its pooled candidate (``pooled_memory``)
    "gpg/pooled_share",
    # GPG's linear baseline on another algorithm's rollouts, in variants (baseline_variants.BaselineVariants)
    *(f"variants/{name}" for name in ("default", "returns", "no_memory", "no_fourier", "unprojected", "in_sample", "lambda")),
)


class Run(NamedTuple):
    env_id: str
    setting: Setting
    seed: int

    @property
    def name(self) -> str:
        return f"{self.env_id}__{self.setting.name}__seed{self.seed}"


def zoo_entry(algo: str, env_id: str) -> tuple[dict, dict | None]:
    """
    :return: the run's hyperparameter entry, and for an env that rl_zoo3's file lacks but has a v4 entry for, the file
        (as a dict) that gives the v5 env that entry
    """
    import rl_zoo3

    from sb3_gpg.zoo.registry import GPG_ALGOS

    path = GPG_ALGOS[algo][1] if algo in GPG_ALGOS else Path(rl_zoo3.__file__).parent / "hyperparams" / f"{algo}.yml"
    entries = parsed_yaml(Path(path))
    if env_id in entries or env_id not in OLDER_ENTRIES or OLDER_ENTRIES[env_id] not in entries:
        return copy.deepcopy(entries.get(env_id, entries.get("default"))), None
    older_entries = {v5: entries[older] for v5, older in OLDER_ENTRIES.items() if older in entries}
    return copy.deepcopy(entries[OLDER_ENTRIES[env_id]]), copy.deepcopy(older_entries)


def budget_of(env_id: str, budget: int | None) -> int:
    """
    :param budget: steps given for the grid, or None
    :return: the run's steps: ``budget``, else ``n_timesteps`` of RL Zoo's PPO entry for the env, for every setting
    """
    return budget if budget is not None else int(float(zoo_entry("ppo", env_id)[0]["n_timesteps"]))


def hyperparams_file(setting: Setting, env_id: str) -> tuple[dict | None, str]:
    """
    :return: the hyperparameter file a run of ``setting`` on ``env_id`` trains with (as a dict; None: the algorithm's
        own) and its name: a pinned base (the entry its runs ran on) or, for an env that rl_zoo3's file lacks, the file
        that gives it one
    """
    if setting.base is None:
        return zoo_entry(setting.algo, env_id)[1], f"{setting.algo}_v5.yml"
    base = zoo_entry("ppo", env_id)[0] if setting.base == PPO_ENTRY else pinned_entry(setting.base, env_id)
    # GPG gets the estimator and lambda the base's runs got from the constructor before its defaults changed, where the
    # base names none; a setting's -params still override them
    return {env_id: base if setting.algo == "ppo" else {**BEFORE_DEFAULTS_CHANGED, **base}}, f"{setting.base}.yml"


class Paused(RuntimeError):
    """A run that paused (``sb3_gpg_bench.resumable``): the same grid goes on with it."""


def training_arguments(run: Run, eval_seed: int | None, budget: int, scratch: str) -> list[str]:
    """
    :param eval_seed: the evaluation envs' seed (``--eval-seed``); None: rl_zoo3's
    :param scratch: the run's folder, where its entry's file is written (``hyperparams_file``) and RL Zoo logs
    :return: the arguments of ``python -m`` that train the run (``sb3_gpg.train`` and its own)
    """
    conf_file, conf_name = hyperparams_file(run.setting, run.env_id)
    conf = []
    if conf_file is not None:
        conf = ["--conf-file", str(Path(scratch, conf_name))]
        Path(conf[1]).write_text(yaml.safe_dump(conf_file, sort_keys=False))
    return ["sb3_gpg.train", "--algo", run.setting.algo, "--env", run.env_id,
            "--seed", str(run.seed), *([] if eval_seed is None else ["--eval-seed", str(eval_seed)]),
            "-n", str(budget), "--eval-freq", str(max(budget // N_EVALUATIONS, 1)),
            "--eval-episodes", str(EVAL_EPISODES), "--num-threads", "1", "--log-interval", "-1",
            "-f", str(Path(scratch, "logs")), *conf,
            *(["-params", *run.setting.params] if run.setting.params else [])]  # fmt: skip


def train(
    run: Run, eval_seed_offset: int | None, budget: int, paused_in: Path | None = None, pause_at: float | None = None
) -> dict[str, bytes]:
    """
    One RL Zoo training in a scratch folder. Runs where it is called: in a thread of this process or on a Ray worker,
    which returns the files to the machine that writes them.

    :param eval_seed_offset: see ``sb3_gpg_bench.suites.Suite``
    :param budget: steps
    :param paused_in: where the run's scratch folder lies while it is unfinished (``<paused_in>/<run>``), so that it may
        pause and go on (``sb3_gpg_bench.resumable``); None: a temporary folder, and the run goes through
    :param pause_at: with ``paused_in``, the time (seconds since the epoch) from which the run pauses at its next rollout
    :return: the run's small files by name (``RUN_FILES``)
    :raises Paused: where the run paused
    :raises RuntimeError: where the training fails, with the end of its output, or ends before its budget (RL Zoo
        saves a training stopped by Ctrl-C and exits as if it had finished)
    """
    with _scratch(run, paused_in) as scratch:
        eval_seed = None if eval_seed_offset is None else run.seed + eval_seed_offset
        command = [sys.executable, "-m", *training_arguments(run, eval_seed, budget, scratch)]
        segments: list[dict[str, Any]] = []
        watched = command
        if paused_in is not None:
            if Path(scratch, PAUSED_STATE).exists():
                segments = _segments(Path(scratch))
            else:  # what a first part left that ended before it paused (rl_zoo3 would log beside it)
                shutil.rmtree(Path(scratch, "logs"), ignore_errors=True)
            pause = [] if pause_at is None else ["--pause-at", str(pause_at)]
            watched = [sys.executable, "-m", "sb3_gpg_bench.resumable", "--state", str(Path(scratch, PAUSED_STATE)), *pause,
                       "--", *command[3:]]  # fmt: skip
        before = sum(segment["wall_time_s"] for segment in segments)
        start = time.perf_counter()
        result, load, evaluation_times = run_watched(watched, Path(scratch, "logs", run.setting.algo), before,
                                                     segments[-1]["evaluation_wall_s"] if segments else None)  # fmt: skip
        segments.append({"wall_time_s": round(time.perf_counter() - start, 1), "machine": platform.node(), "load": load,
                         "evaluation_wall_s": evaluation_times, "stdout": result.stdout})  # fmt: skip
        logged_steps = re.findall(r"total_timesteps\s*\|\s*(\d+)", result.stdout)
        steps = int(logged_steps[-1]) if logged_steps else 0
        if result.returncode == EXIT_PAUSED:
            _keep_segments(Path(scratch), segments)
            raise Paused(f"paused at step {steps} of {budget} (in {scratch}): the same command goes on")
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(watched)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
        if steps < budget:
            # RL Zoo saves a training stopped by Ctrl-C and exits 0, as if it had finished: such a run is not kept
            raise RuntimeError(
                f"{' '.join(watched)} stopped at step {steps} of {budget} (interrupted?): not kept, run the grid again to "
                f"train it through\n{result.stderr[-2000:]}"
            )
        wall_time = sum(segment["wall_time_s"] for segment in segments)
        load = _joined_loads([segment["load"] for segment in segments])
        (log,) = Path(scratch, "logs", run.setting.algo).iterdir()
        files = {name: (log / name).read_bytes() for name in RUN_FILES[:1]}
        # the scratch folder is gone once the run is kept: its paths (the v5 conf file) are written as <scratch>
        files |= {
            name: (log / run.env_id / name).read_bytes().replace(scratch.encode(), b"<scratch>") for name in RUN_FILES[1:3]
        }
        meta = {
            "command": " ".join(command[1:]).replace(scratch, "<scratch>"),
            "wall_time_s": round(wall_time, 1),
            "n_timesteps": budget,
            "eval_seed": eval_seed,
            "machine": platform.node(),
            # the processor: two of them round a MuJoCo task's arithmetic apart, and its runs apart with it
            "cpu": cpu(),
            # the machine's load through the run, and when each evaluation was written (seconds from the start)
            "load": load,
            "evaluation_wall_s": evaluation_times,
            # a run that paused: each part's wall time and machine
            **(
                {"segments": [{key: part[key] for key in ("wall_time_s", "machine")} for part in segments]}
                if len(segments) > 1
                else {}
            ),
            "versions": {
                "python": platform.python_version(),
                # the simulators too: a run of a MuJoCo task is reproduced on the same MuJoCo only
                **{
                    name: _version(name)
                    for name in ("torch", "stable_baselines3", "rl_zoo3", "sb3_gpg", "numpy", "gymnasium", "mujoco")
                },
            },
        }
    # compressed (mtime 0: the same log gives the same bytes), as every report reads it (read_training_log)
    stdout = "".join(segment["stdout"] for segment in segments)
    logged = (json.dumps(thinned(logged_series(stdout, LOGGED_KEYS))) + "\n").encode()
    files[TRAINING_LOG] = gzip.compress(logged, mtime=0)
    files["meta.json"] = (json.dumps(meta, indent=1) + "\n").encode()
    return files


@contextmanager
def _scratch(run: Run, paused_in: Path | None) -> Iterator[str]:
    """
    A temporary folder, or with ``paused_in`` the folder ``<paused_in>/<run>`` (``run_suite`` removes it once the run
    is kept)
    """
    if paused_in is None:
        with tempfile.TemporaryDirectory() as scratch:
            yield scratch
        return
    folder = paused_in / run.name
    folder.mkdir(parents=True, exist_ok=True)
    yield str(folder.resolve())


def _segments(scratch: Path) -> list[dict[str, Any]]:
    """:return: the parts a paused run has run so far, each with its output"""
    path = scratch / SEGMENTS
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else []


def _keep_segments(scratch: Path, segments: list[dict[str, Any]]) -> None:
    (scratch / f"{SEGMENTS}.tmp").write_bytes(gzip.compress(json.dumps(segments).encode()))
    (scratch / f"{SEGMENTS}.tmp").replace(scratch / SEGMENTS)


def _joined_loads(loads: list[dict[str, Any]]) -> dict[str, Any]:
    """:return: one load record of a run's parts' (``run_watched``'s), their samples in one list"""
    beside = [load["runs_beside_max"] for load in loads if load["runs_beside_max"] is not None]
    return {**loads[0], "end": loads[-1]["end"], "samples": [sample for load in loads for sample in load["samples"]],
            "runs_beside_max": max(beside) if beside else None}  # fmt: skip


def read_training_log(folder: Path) -> dict[str, list[list[float]]]:
    """
    :param folder: a finished run's folder
    :return: its training log (``logged_series``), compressed or not; empty where it kept none
    """
    if (folder / TRAINING_LOG).exists():
        return json.loads(gzip.decompress((folder / TRAINING_LOG).read_bytes()))
    path = folder / "training_log.json"
    return json.loads(path.read_text()) if path.exists() else {}


def logged_series(stdout: str, keys: tuple[str, ...]) -> dict[str, list[list[float]]]:
    """
    :param stdout: a training's standard output, with the tables SB3's logger prints at ``verbose=1``
    :param keys: the logged values to keep, as ``section/name``
    :return: per key, ``[total_timesteps, value]`` for every table that printed it (SB3 prints a value once, in the
        first table after it was logged: an update's in the next table, which may be an evaluation's)
    """
    series: dict[str, list[list[float]]] = {key: [] for key in keys}
    table: dict[str, float] = {}
    section = ""
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("-") and table:  # a table's last border
            for key in set(keys) & set(table):
                series[key].append([table.get("time/total_timesteps", float("nan")), table[key]])
            table = {}
        elif len(cells) == 2 and cells[0].endswith("/") and not cells[1]:
            section = cells[0]
        elif len(cells) == 2 and line.startswith("|    "):
            try:
                table[section + cells[0]] = float(cells[1])
            except ValueError:
                continue
    return series


def thinned(series: dict[str, list[list[float]]], max_points: int = MAX_LOGGED_POINTS) -> dict[str, list[list[float]]]:
    """
    :return: each series as it is where it has at most ``max_points`` points, else ``max_points`` of them evenly
        spaced, its first and last among them
    """
    kept = {}
    for key, points in series.items():
        rows = np.unique(np.linspace(0, len(points) - 1, max_points).round().astype(int))
        kept[key] = points if len(points) <= max_points else [points[row] for row in rows]
    return kept


def cpu() -> dict[str, str]:
    """
    :return: the processor's name, family, model and stepping as Linux reports them, and a digest of its instruction
        set's flags (which choose the vectorised paths of the arithmetic); empty where ``/proc/cpuinfo`` is not read
    """
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    pairs = (line.split(":", 1) for line in text.split("\n\n")[0].splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in pairs}
    described = {name: fields.get(key, "?") for name, key in CPU_FIELDS.items()}
    flags = " ".join(sorted(fields.get("flags", "").split()))
    return described | {"flags_digest": hashlib.sha256(flags.encode()).hexdigest()[:12]}


def _version(module: str) -> str:
    try:
        return str(getattr(__import__(module), "__version__", "?"))
    except ImportError:
        return "absent"


def finished(run: Run, out: Path, eval_seed_offset: int | None, budget: int) -> bool:
    """
    :return: whether ``out`` holds the run, finished
    :raises ValueError: where it holds it run with another budget or evaluation seed
    """
    path = out / "runs" / run.name / "meta.json"
    if not path.exists():
        return False
    meta = json.loads(path.read_text())
    eval_seed = None if eval_seed_offset is None else run.seed + eval_seed_offset
    kept = (meta["n_timesteps"], meta.get("eval_seed"))
    if kept != (budget, eval_seed):
        raise ValueError(
            f"{path.parent} ran {kept[0]} steps with evaluation seed {kept[1]}, this grid asks for {budget} and "
            f"{eval_seed}: give this grid another --out, or remove that run to run it again."
        )
    return True


def run_suite(
    runs: list[Run],
    out: Path,
    eval_seed_offset: int | None,
    budget: int | None = None,
    jobs: int = 1,
    ray_address: str | None = None,
    paused_in: Path | None = None,
    pause_at: float | None = None,
) -> None:
    """
    Run the runs of the grid that have not finished (no ``meta.json``) and write each one's files as it finishes
    (``run_grid``). PPO's runs go first (RL Zoo's PPO entries are the longest).

    :param budget: steps per run; None: RL Zoo's PPO budget for the env (``budget_of``)
    :param jobs: runs at once on this machine (without ``ray_address``), each a ``train`` subprocess
    :param ray_address: a Ray cluster to submit the runs to, one CPU each (``run_grid``)
    :param paused_in: keep the unfinished runs' scratch folders here, so that they may pause and go on (``train``)
    :param pause_at: with ``paused_in``, pause the runs at their first rollout from this time (seconds since the epoch)
    :raises ValueError: for ``pause_at`` without ``paused_in``, or ``paused_in`` with ``ray_address``
    :raises RuntimeError: naming the runs that failed or paused, with the end of their output
    """
    if pause_at is not None and paused_in is None:
        raise ValueError("A grid that pauses keeps its unfinished runs somewhere: give paused_in (--paused-in) too.")
    if paused_in is not None and ray_address is not None:
        raise ValueError("Paused runs are kept on this machine's disk: run the grid here, without a Ray address.")
    tasks = [(run, eval_seed_offset, budget_of(run.env_id, budget), paused_in, pause_at) for run in runs]
    tasks.sort(key=lambda task: task[0].setting.algo != "ppo")

    def keep(task: tuple[Run, int | None, int, Path | None, float | None], files: dict[str, bytes]) -> None:
        folder = out / "runs" / task[0].name
        folder.mkdir(parents=True, exist_ok=True)
        for name in (*RUN_FILES[:-1], TRAINING_LOG):
            (folder / name).write_bytes(files[name])
        # meta.json marks the run finished: written whole or not at all
        (folder / "meta.json.tmp").write_bytes(files["meta.json"])
        (folder / "meta.json.tmp").replace(folder / "meta.json")
        if task[3] is not None:  # the paused run's parts, now kept
            shutil.rmtree(task[3] / task[0].name)
        tqdm.write(f"{task[0].name}: {folder}")

    run_grid(tasks, train, keep, lambda task: finished(task[0], out, *task[1:3]), jobs, "thread", ray_address,
             name=lambda task: task[0].name)  # fmt: skip


def random_scores(tasks: list[str], seed: int, n_episodes: int = 100) -> dict[str, dict[str, Any]]:
    """
    The uniform-random policy's return on each task: the floor of the PPO-normalised score.

    :param seed: the first episode's seed (each episode its own: seed, seed + 1, ...); the action space is seeded with
        it too
    :return: per task, the mean and std of the episodes' returns and their number
    """
    import rl_zoo3.import_envs  # noqa: F401 (registers RL Zoo's envs)

    scores = {}
    for env_id in tqdm(tasks, desc="random policy"):
        env = gym.make(env_id)
        env.action_space.seed(seed)
        returns = []
        for episode in range(n_episodes):
            env.reset(seed=seed + episode)
            total, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        env.close()
        scores[env_id] = {"mean": float(np.mean(returns)), "std": float(np.std(returns)), "episodes": n_episodes}
    return scores
