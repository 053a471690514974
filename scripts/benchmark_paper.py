"""
Reproduce the paper's comparison: GPG and PPO side by side with the same shared hyperparameters, over env counts
(GPG's group size), training seeds and iterations, each run evaluated on separate evaluation seeds; the binning
ablation on LunarLander; and GPG's defaults against their alternatives (--defaults).

Shared hyperparameters (the paper's): classic control, CleanRL's PPO defaults (128 steps per env, 4 epochs,
4 minibatches, lr 2.5e-4 annealed, gamma 0.99, clip 0.2, ent 0.01, max grad norm 0.5); LunarLander, RL Zoo's PPO
entry (16 x 1024 steps, minibatch 64, 4 epochs, gamma 0.999, ent 0.01); MuJoCo, CleanRL's (2048 steps, 10 epochs,
32 minibatches, lr 3e-4, observation and reward normalisation).
GPG uses time binning unless a variant says otherwise.

Writes into --out: runs/<run>.csv (one per run: iteration, env steps, wall time, evaluation mean; while a run
trains, runs/<run>.partial.csv holds its evaluations so far), curves.csv (all runs), table.md (final evaluation,
mean +- std over training seeds, in the paper's layout) and PNG plots (reward vs iteration per env count, reward vs
env steps). Finished runs are not run again; an interrupted run resumes from its last checkpoint (one per
evaluation; --stop-after ends an invocation there on purpose); runs spread over --jobs processes. --verify checks
that this machine reproduces the committed runs: it re-trains each to its first evaluation and compares.

    python scripts/benchmark_paper.py --envs CartPole-v1 --n-envs 1 4 16 32 128 --seeds 0 1 2 3 --jobs 2 \
        --out benchmarks/paper/cartpole
    python scripts/benchmark_paper.py --ablation --n-envs 1 4 16 --seeds 0 1 --jobs 2 --out benchmarks/ablation
    python scripts/benchmark_paper.py --defaults --envs CartPole-v1 --n-envs 1 4 16 --out benchmarks/paper/defaults
    python scripts/benchmark_paper.py --summary --out benchmarks/paper   # every grid's GPG and PPO beside the paper
    python scripts/benchmark_paper.py --envs CartPole-v1 --n-envs 1 4 --seeds 0 1 --verify --out benchmarks/paper/cartpole
"""

import argparse
import itertools
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import CheckpointCallback
from tqdm import tqdm

from sb3_gpg.estimator.options import PAPER_ESTIMATOR
from sb3_gpg_bench.experiments import (
    EVAL_NORMALIZE,
    SETTINGS,
    EpisodeSeeds,
    PeriodicEvaluation,
    finished_runs,
    make_envs,
    plots,
    read_csv,
    run_file,
    run_name,
    shared_hyperparameters,
    write_csv,
)
from sb3_gpg_bench.grid import run_grid

# CliffWalking has no time limit in gymnasium 1.x: training follows the paper (none); evaluation stops at 200 steps
EVAL_ENV_KWARGS = {"CliffWalking-v1": {"max_episode_steps": 200}}
# The paper's Table 1: final evaluation after 200 iterations at 1, 4, 16, 32 and 128 envs, mean over 4 training seeds
PAPER_ENV_COUNTS = (1, 4, 16, 32, 128)
PAPER_TABLE = {
    "CartPole-v1": {"gpg": (255.7, 388.7, 428.1, 481.1, 495.5), "ppo": (205.8, 316.9, 423.2, 442.8, 474.2)},
    "CliffWalking-v1": {"gpg": (-261.3, -17.5, -17.0, -17.2, -17.0), "ppo": (-442.9, -17.6, -17.0, -17.0, -17.0)},
    "HalfCheetah-v5": {"gpg": (333.7, 1031.7, 1000.1, 1940.9, 2773.6), "ppo": (679.3, 1346.3, 736.5, 1142.5, 1516.9)},
    "LunarLander-v3": {"gpg": (-18.8, 74.3, 75.8, 169.7, 257.4), "ppo": (-19.6, 117.8, 157.6, 157.8, 201.0)},
}
# The binning ablation: name -> GPG keyword arguments
VARIANTS = {
    "time": dict(binning="time"),
    "universal": dict(binning="universal"),
    **{f"spatial_{eps}": dict(binning="spatial", bin_size=eps) for eps in (1.0, 0.5, 0.2)},
    **{f"spatial_time_{eps}": dict(binning="spatial_time", bin_size=eps) for eps in (1.0, 0.5, 0.2)},
    "time_leave_one_out": dict(binning="time", leave_one_out=True),
    "spatial_time_0.2_min3": dict(binning="spatial_time", bin_size=0.2, min_bin_count=3),
}
# The package's defaults against their alternatives (time binning, truncated_returns="keep", no leave-one-out)
DEFAULT_ALTERNATIVES = {
    "rollout_step": dict(binning="rollout_step"),
    "time_mask": dict(binning="time", truncated_returns="mask"),
    "time_leave_one_out": VARIANTS["time_leave_one_out"],
}
# The long-horizon estimator options (scripts/study_long_horizon.py), with time binning
LONG_HORIZON = {
    "bootstrap": dict(binning="time", truncated_returns="bootstrap"),
    "bin_std": dict(binning="time", advantage_scale="bin_std"),
    "loo_min2": dict(binning="time", leave_one_out=True, min_bin_count=2),
    "bootstrap_bin_std": dict(binning="time", truncated_returns="bootstrap", advantage_scale="bin_std"),
    "bootstrap_loo_min2": dict(binning="time", truncated_returns="bootstrap", leave_one_out=True, min_bin_count=2),
}
GPG_VARIANTS = {**VARIANTS, **DEFAULT_ALTERNATIVES, **LONG_HORIZON}  # every gpg_<name> the runner knows


# A resumed run's environments are seeded with seed + RESEED_OFFSET * (iteration of the checkpoint)
RESEED_OFFSET = 100_003
# A run's checkpoint: its curve so far, its model (with the optimizer) and its VecNormalize statistics
CHECKPOINT_SUFFIXES = ("partial.csv", "checkpoint.zip", "checkpoint.pkl")


class CurveCheckpoint(CheckpointCallback):
    """
    SB3's CheckpointCallback after each of ``evaluation``'s periodic evaluations (it follows it in the callback list,
    at the same rollout start), under the run's fixed file names: the curve so far, then the model with its optimizer
    and the VecNormalize statistics, each replacing the previous checkpoint's. Training stops there once ``stop()``.

    :param evaluation: the run's evaluations, and its curve
    :param paths: the run's checkpoint files (``CHECKPOINT_SUFFIXES``)
    :param stop: whether to end training at the checkpoint just written
    """

    def __init__(self, evaluation: PeriodicEvaluation, paths: tuple[Path, ...], stop: Callable[[], bool]) -> None:
        super().__init__(save_freq=1, save_path=str(paths[1].parent), save_vecnormalize=True)
        self.evaluation, self.paths, self.stop = evaluation, paths, stop
        self.saved = evaluation.evaluated
        self.stopped = False

    def _checkpoint_path(self, checkpoint_type: str = "", extension: str = "") -> str:
        # The model goes to a temporary file first, which then replaces the checkpoint's at once
        _, model, normalizer = self.paths
        return str(model.with_suffix(".tmp.zip") if extension == "zip" else normalizer)

    def _on_rollout_start(self) -> None:
        if self.evaluation.evaluated > self.saved:
            partial, model, _ = self.paths
            # The curve first, then the model: an interruption between the two resumes from the older checkpoint
            write_csv(partial, self.evaluation.rows)
            super()._on_step()  # CheckpointCallback's save (on every call, with save_freq=1): model, VecNormalize
            os.replace(self._checkpoint_path(extension="zip"), model)
            self.saved = self.evaluation.evaluated
            self.stopped = self.stop()

    def _on_step(self) -> bool:
        return not self.stopped


def resume_or_start(
    run: tuple[str, str, int, int], kwargs: dict[str, Any], normalize: bool, paths: tuple[Path, ...], vec_env: str
) -> tuple[Any, list[dict], dict[str, str]]:
    """
    The model of a run, on its training envs, with its curve so far and the ``resumed_at`` field of its rows: loaded
    from the run's checkpoint ``paths`` (curve, model, VecNormalize) where it was interrupted, new otherwise.

    :param run: env id, algorithm, n_envs, seed
    :param kwargs: the algorithm's keyword arguments
    :param normalize: whether the envs are in VecNormalize
    :param vec_env: the training envs' backend
    """
    from stable_baselines3 import PPO

    from sb3_gpg import GPG

    env_id, algo, n_envs, seed = run
    partial, checkpoint, normalizer = paths
    if checkpoint.exists():
        model = (PPO if algo == "ppo" else GPG).load(checkpoint, device="cpu")
        resumed_at = model.num_timesteps // (kwargs["n_steps"] * n_envs)
        # The curve up to the checkpoint (a row written after it, by an interrupted save, is evaluated again)
        rows = [row for row in read_csv(partial) if row["iteration"] <= resumed_at]
        if rows[-1].get("vec_env", "dummy") != vec_env:
            raise ValueError(f"{partial} was trained with --vec-env {rows[-1].get('vec_env', 'dummy')}: resume it so")
        resumed = {"resumed_at": f"{rows[-1].get('resumed_at', '')} {resumed_at}".strip()}
        rows = [dict(row, **resumed) for row in rows]
        env_seed = seed + RESEED_OFFSET * resumed_at
    else:
        model, rows, resumed, env_seed = None, [], {}, seed

    normalizer = normalizer if normalize and model else None
    # EnvPool: one C++ thread, so one core per run
    env = make_envs(env_id, n_envs, env_seed, vec_env, num_threads=1,
                    normalize={"gamma": kwargs["gamma"]} if normalize else None, normalizer=normalizer)  # fmt: skip
    if model:
        model.set_env(env)  # the fresh envs are reset by learn()
        model.set_random_seed(env_seed)
    elif algo == "ppo":
        model = PPO("MlpPolicy", env, gae_lambda=0.95, **kwargs)
    else:
        variant = GPG_VARIANTS[algo.removeprefix("gpg_")] if algo != "gpg" else {}
        # the paper's estimator (GPG's default baseline, "auto", is the linear one where the observations allow)
        model = GPG("MlpPolicy", env, **{**PAPER_ESTIMATOR, **variant}, **kwargs)
    return model, rows, resumed


def train_and_evaluate(env_id: str, algo: str, n_envs: int, seed: int, args: dict[str, Any]) -> list[dict] | None:
    """
    One run: train for ``iterations`` rollouts in one learn() call (so that the learning-rate annealing spans the whole
    budget, as in CleanRL), evaluating after every ``eval_every`` iterations and after the last, on separate seeds.

    Each periodic evaluation also checkpoints the run, and a run that finds a checkpoint resumes from it, with the same
    learning-rate schedule, on freshly reset environments seeded anew: so a resumed run is not bit-identical to an
    uninterrupted one, and its rows say where it resumed (``resumed_at``). Returns None when the invocation's
    ``deadline`` (or ``first_evaluation_only``) stopped the run at a checkpoint.
    """
    import torch as th

    deadline = args.get("deadline")
    if deadline is not None and time.time() > deadline:
        return None
    th.set_num_threads(1)
    kwargs, normalize = shared_hyperparameters(
        env_id, n_envs, args.get("n_steps"), args.get("n_minibatches"), args.get("gamma"), args.get("lr_schedule")
    )
    kwargs.update(seed=seed, device="cpu")
    run = (env_id, algo, n_envs, seed)
    paths = tuple(run_file(Path(args["runs_dir"]), run, suffix) for suffix in CHECKPOINT_SUFFIXES)
    vec_env = args.get("vec_env", "dummy")
    model, rows, resumed = resume_or_start(run, kwargs, normalize, paths, vec_env)
    trained = rows[-1]["wall_time"] if rows else 0.0  # before the checkpoint

    def row(evaluation: PeriodicEvaluation) -> dict[str, Any]:
        return dict(env=env_id, algo=algo, n_envs=n_envs, seed=seed, iteration=evaluation.iteration,
                    env_steps=model.num_timesteps, wall_time=round(trained + evaluation.training_seconds, 2),
                    vec_env=vec_env, eval_mean=evaluation.last_mean_reward, **resumed)  # fmt: skip

    # One deterministic episode on each of the evaluation seeds 10_000 + 100 * seed + k, k < eval_episodes
    eval_env = make_envs(env_id, 1, 10_000 + seed, env_kwargs=EVAL_ENV_KWARGS.get(env_id), wrapper_class=EpisodeSeeds,
                         normalize=EVAL_NORMALIZE if normalize else None)  # fmt: skip
    evaluation = PeriodicEvaluation(eval_env, args["eval_every"], row, eval_seed=10_000 + 100 * seed, rows=rows,
                                    n_eval_episodes=args["eval_episodes"])  # fmt: skip
    checkpoint = CurveCheckpoint(
        evaluation, paths, lambda: (deadline is not None and time.time() > deadline) or bool(args.get("first_evaluation_only"))
    )
    total = args["iterations"] * kwargs["n_steps"] * n_envs
    model.learn(total - model.num_timesteps, callback=[evaluation, checkpoint], reset_num_timesteps=False)
    if not checkpoint.stopped:
        evaluation.evaluate()  # the last iteration's: no rollout starts after it
    model.get_env().close()
    eval_env.close()
    return None if checkpoint.stopped else evaluation.rows


def final_evaluations(rows: list[dict]) -> dict[tuple[str, str, int], list[float]]:
    """(env, algo, n_envs) -> the last evaluation of each training seed's run."""
    last = {}
    for row in rows:
        key = (row["env"], row["algo"], row["n_envs"], row["seed"])
        if row["iteration"] >= last.get(key, {"iteration": -1})["iteration"]:
            last[key] = row
    final: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for (env_id, algo, n_envs, _), row in sorted(last.items()):
        final[(env_id, algo, n_envs)].append(row["eval_mean"])
    return final


def cell(values: list[float] | None, backend: str | None = None) -> str:
    """Mean +- std (seeds), and the training backend where it is not Gymnasium's envs in this process."""
    if not values:
        return ""
    return f"{np.mean(values):.1f} +- {np.std(values):.1f} ({len(values)})" + (
        f" [{backend}]" if backend not in (None, "dummy") else ""
    )


def backends(rows: list[dict]) -> dict[tuple[str, str, int], str]:
    """(env, algo, n_envs) -> the training backends of its runs, e.g. ``envpool`` (rows before the column: dummy)."""
    used = defaultdict(set)
    for row in rows:
        used[(row["env"], row["algo"], row["n_envs"])].add(row.get("vec_env", "dummy"))
    return {key: "+".join(sorted(names)) for key, names in used.items()}


def table(rows: list[dict], algos: list[str]) -> str:
    """Final evaluation, mean +- std over training seeds, one row per (env count, algorithm) as in the paper."""
    final, backend = final_evaluations(rows), backends(rows)
    envs = sorted({row["env"] for row in rows})
    lines = ["| envs | algo | " + " | ".join(envs) + " |", "|---|---|" + "---|" * len(envs)]
    for n_envs in sorted({row["n_envs"] for row in rows}):
        for algo in algos:
            cells = [cell(final.get((env_id, algo, n_envs)), backend.get((env_id, algo, n_envs))) for env_id in envs]
            lines.append(f"| {n_envs} | {algo} | " + " | ".join(cells) + " |")
    return (
        "\n".join(lines) + "\n\nCells: mean +- std of the final evaluation over training seeds (number of seeds); "
        "[envpool]: trained on EnvPool's envs (evaluated on Gymnasium's, as every run).\n"
    )


def summary(out: Path) -> str:
    """GPG and PPO's final evaluations of every finished run under ``out`` (any subfolder), beside the paper's Table 1."""
    runs = {path.name: path for path in finished_runs(out, "*/runs/*.csv")}
    rows = [row for path in runs.values() for row in read_csv(path) if row["algo"] in ("gpg", "ppo")]
    final, backend = final_evaluations(rows), backends(rows)
    envs = [env_id for env_id in PAPER_TABLE if any(key[0] == env_id for key in final)]
    lines = [
        "| envs | algo | " + " | ".join(f"{env_id} (here) | {env_id} (paper)" for env_id in envs) + " |",
        "|---|---|" + "---|---|" * len(envs),
    ]
    for index, n_envs in enumerate(PAPER_ENV_COUNTS):
        for algo in ("gpg", "ppo"):
            cells = [
                f"{cell(final.get((env_id, algo, n_envs)), backend.get((env_id, algo, n_envs))) or 'not run'} | "
                f"{PAPER_TABLE[env_id][algo][index]}"
                for env_id in envs
            ]
            lines.append(f"| {n_envs} | {algo} | " + " | ".join(cells) + " |")
    return (
        "# GPG and PPO after 200 iterations: this reproduction beside the paper's Table 1\n\n"
        + "\n".join(lines)
        + "\n\nHere: mean +- std of the final evaluation over training seeds (number of seeds), from the finished runs "
        f"under `{out}` ([envpool]: trained on EnvPool's envs, evaluated on Gymnasium's); paper: its Table 1 (4 training "
        "seeds).\n"
    )


def verify(runs: list[tuple[str, str, int, int]], runs_dir: Path, settings: dict[str, Any], jobs: int) -> bool:
    """
    Re-train every finished run of ``runs`` up to its first evaluation, in a scratch directory, and compare that
    evaluation with the one in ``runs_dir``: training and evaluation are seeded, so on the same software they are equal
    to every digit. A run's first evaluation always comes from an uninterrupted stretch (runs resume at evaluations).

    :return: whether every finished run reproduced
    """
    finished = [run for run in runs if run_file(runs_dir, run, "csv").exists()]
    same_runs: list[bool] = []

    def compare(run: tuple[str, str, int, int], _: None) -> None:
        committed = read_csv(run_file(runs_dir, run, "csv"))[0]
        again = read_csv(run_file(Path(scratch), run, "partial.csv"))[0]
        same = again["iteration"] == committed["iteration"] and again["eval_mean"] == committed["eval_mean"]
        same_runs.append(same)
        tqdm.write(f"{run_name(*run)}: iteration {committed['iteration']}, committed {committed['eval_mean']!r}, "
                   f"again {again['eval_mean']!r}: {'same' if same else 'DIFFERENT'}")  # fmt: skip

    with tempfile.TemporaryDirectory() as scratch:
        scratch_settings = dict(settings, runs_dir=scratch, deadline=None, first_evaluation_only=True)
        train = partial(train_and_evaluate, args=scratch_settings)
        run_grid(finished, train, compare, jobs=jobs, name=lambda run: run_name(*run))
    print(f"{sum(same_runs)} of {len(finished)} finished runs reproduced their first evaluation")
    return sum(same_runs) == len(finished)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1"], choices=list(SETTINGS))
    parser.add_argument("--algos", nargs="+", help="gpg, ppo, or gpg_<variant> (default: gpg and ppo; with --ablation or "
                        "--defaults, all their variants)")  # fmt: skip
    parser.add_argument("--ablation", action="store_true",
                        help="LunarLander-v3 with every binning variant (or the --algos given), no PPO")  # fmt: skip
    parser.add_argument("--defaults", action="store_true", help="GPG's defaults against rollout_step binning, "
                        "truncated_returns='mask' and leave_one_out, no PPO")  # fmt: skip
    parser.add_argument("--n-envs", nargs="+", type=int, default=[1, 4, 16, 32, 128])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--eval-every", type=int, default=10, help="iterations between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=5, help="evaluation seeds (one episode each)")
    parser.add_argument("--n-steps", type=int, help="override the steps per env per rollout (smoke tests)")
    parser.add_argument("--n-minibatches", type=int,
                        help="override the minibatches per epoch (CleanRL's num_minibatches), e.g. 256 on LunarLander-v3 for "
                        "RL Zoo's minibatch of 64 at 16 envs that grows with the env count; give the runs their own --out, "
                        "out of --summary's reach (e.g. benchmarks/paper/checks/<name>), as their run names are the "
                        "grid's")  # fmt: skip
    parser.add_argument("--gamma", type=float, help="override the discount factor of both algorithms (a shared setting); "
                        "give the runs their own --out, as for --n-minibatches")  # fmt: skip
    parser.add_argument("--lr-schedule", choices=["lin", "const"],
                        help="override the learning rate's schedule of both algorithms (at the settings' rate): annealed "
                        "linearly to 0 over the run, or constant; give the runs their own --out, as for "
                        "--n-minibatches")  # fmt: skip
    parser.add_argument("--vec-env", default="dummy", choices=["dummy", "envpool"],
                        help="training envs: Gymnasium's in the run's process, or EnvPool's C++ port with one thread per "
                        'run (pip install "sb3-gpg[envpool]"); evaluation always uses Gymnasium\'s')  # fmt: skip
    parser.add_argument("--jobs", type=int, default=max(os.cpu_count() or 1, 1))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/paper"))
    parser.add_argument("--verify", action="store_true",
                        help="re-train each finished run of the grid to its first evaluation and compare it with the "
                        "committed one (a twentieth of the grid's training; exit status 1 if any differs)")  # fmt: skip
    parser.add_argument("--report-only", action="store_true", help="aggregate the finished runs of the grid, run nothing")
    parser.add_argument("--summary", action="store_true", help="write <out>/summary.md: GPG and PPO's finished runs in "
                        "every grid under --out beside the paper's Table 1")  # fmt: skip
    parser.add_argument("--stop-after", type=float, metavar="MINUTES",
                        help="stop each run at its first checkpoint after this many minutes (runs not started by then do "
                        "not start); the same command again resumes")  # fmt: skip
    args = parser.parse_args()
    if args.summary:
        report = summary(args.out)
        (args.out / "summary.md").write_text(report)
        print(report)
        return
    if args.ablation:
        args.envs, args.algos = ["LunarLander-v3"], args.algos or [f"gpg_{variant}" for variant in VARIANTS]
    if args.defaults:
        args.algos = args.algos or ["gpg"] + [f"gpg_{variant}" for variant in DEFAULT_ALTERNATIVES]
    args.algos = args.algos or ["gpg", "ppo"]
    known = ["gpg", "ppo"] + [f"gpg_{variant}" for variant in GPG_VARIANTS]
    if unknown := [algo for algo in args.algos if algo not in known]:
        parser.error(f"unknown --algos {unknown}; choose from {known}")

    deadline = None if args.stop_after is None else time.time() + 60 * args.stop_after
    runs_dir = args.out / "runs"
    settings = dict(iterations=args.iterations, eval_every=args.eval_every, eval_episodes=args.eval_episodes,
                    n_steps=args.n_steps, n_minibatches=args.n_minibatches, gamma=args.gamma, lr_schedule=args.lr_schedule,
                    runs_dir=str(runs_dir), deadline=deadline, vec_env=args.vec_env)  # fmt: skip
    # Smaller groups first, and each seed's algorithms together, so that an interrupted grid still compares them
    runs = [
        (env_id, algo, n_envs, seed)
        for env_id, n_envs, seed, algo in itertools.product(args.envs, sorted(args.n_envs), args.seeds, args.algos)
    ]
    if args.verify:
        sys.exit(0 if verify(runs, runs_dir, settings, args.jobs) else 1)

    def keep(run: tuple[str, str, int, int], rows: list[dict] | None) -> None:
        if rows is None:
            tqdm.write(f"{run_name(*run)}: stopped by --stop-after at its last checkpoint; the same command resumes it")
            return
        write_csv(run_file(runs_dir, run, "csv"), rows)
        for suffix in CHECKPOINT_SUFFIXES:
            run_file(runs_dir, run, suffix).unlink(missing_ok=True)

    start = time.perf_counter()
    if args.report_only:
        done = sum(run_file(runs_dir, run, "csv").exists() for run in runs)
        print(f"{len(runs)} runs, {done} already done, {len(runs) - done} to run; --report-only runs none")
    else:
        if resuming := sum(run_file(runs_dir, run, "checkpoint.zip").exists() for run in runs):
            print(f"{resuming} run(s) resume from their checkpoint")
        run_grid(runs, partial(train_and_evaluate, args=settings), keep, lambda run: run_file(runs_dir, run, "csv").exists(),
                 args.jobs, name=lambda run: run_name(*run))  # fmt: skip

    # The folder's outputs cover every finished run in it, not only this invocation's: a subset (one seed, one env
    # count) would otherwise rewrite them without the rest
    rows = [row for path in finished_runs(runs_dir) for row in read_csv(path)]
    if not rows:
        print("No finished run to report")
        return
    write_csv(args.out / "curves.csv", rows)
    order = ["gpg", *known[2:], "ppo"]
    algos = sorted({row["algo"] for row in rows}, key=lambda algo: order.index(algo) if algo in order else len(order))
    report = f"# {', '.join(sorted({row['env'] for row in rows}))}: {', '.join(algos)}\n\n" + table(rows, algos)
    (args.out / "table.md").write_text(report)
    written = plots(rows, args.out)
    print(report)
    print(f"Wrote {args.out / 'curves.csv'}, {args.out / 'table.md'}, " + ", ".join(map(str, written)))
    print(f"Wall time of this invocation: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
