"""
GPG's estimator options on long-horizon tasks against PPO: the study that decides GPG's defaults.

Every run is a run of ``scripts/benchmark_paper.py`` (its settings per env, separate evaluation seeds, an evaluation
every 10 of 200 iterations, checkpoints, resume), with GPG's variants as its ``gpg_<variant>`` algorithms. A stage
is a list of cells (env, env counts, algorithms); ``run`` trains a stage's missing runs, ``report`` writes the
study's tables and plots from every finished run under --out:

    python scripts/study_long_horizon.py run --stage screen --seeds 0 --jobs 2 --stop-after 150
    python scripts/study_long_horizon.py report

``--envs LunarLander-v3`` runs only that env's cells of the stage, ``--algos gpg ppo`` only those algorithms.

Other options are handed to benchmark_paper.py (e.g. ``--iterations 2 --n-steps 16`` for a smoke test).

The headline is the mean of the last five evaluations (iterations 160-200) of each run, mean and std (ddof 0) over
training seeds, beside the final evaluation and the best one; single evaluations of LunarLander swing by +-50.
"""

import argparse
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from sb3_gpg_bench.experiments import finished_runs, plots, read_csv

VARIANTS = ["gpg", "gpg_bootstrap", "gpg_time_mask", "gpg_bin_std", "gpg_loo_min2", "gpg_bootstrap_bin_std",
            "gpg_bootstrap_loo_min2"]  # fmt: skip
# stage -> cells: (env id, env counts, algorithms, options of benchmark_paper.py); a cell with options writes into
# its own folder, <env id>_<options>, since its run names are those of the stage's other cells
STAGES = {
    "screen": [
        ("CartPole-v1", (1, 4, 16), [*VARIANTS, "ppo"], ()),
        ("Acrobot-v1", (4, 16), [*VARIANTS, "ppo"], ()),
        ("LunarLander-v3", (16,), [*VARIANTS, "ppo"], ()),
        ("HalfCheetah-v5", (4,), [*VARIANTS, "ppo"], ()),
    ],
    # A shared setting: a lower discount for both algorithms (critic-free methods are reported to gain more from it)
    "gamma": [
        ("LunarLander-v3", (16,), ["gpg", "gpg_bootstrap", "ppo"], ("--gamma", "0.99")),
        ("HalfCheetah-v5", (4,), ["gpg", "gpg_bootstrap", "ppo"], ("--gamma", "0.9")),
    ],
    # Another shared setting: the constant learning rate annealed linearly to 0 (late-training stability): RL Zoo's on
    # LunarLander, and on HalfCheetah CleanRL's 3e-4, which CleanRL itself anneals
    "lr": [
        ("LunarLander-v3", (16,), ["gpg", "gpg_bootstrap", "ppo"], ("--lr-schedule", "lin")),
        ("HalfCheetah-v5", (4,), ["gpg", "gpg_bootstrap", "gpg_loo_min2", "ppo"], ("--lr-schedule", "lin")),
    ],
    # A third shared setting: fewer, larger minibatches on LunarLander (RL Zoo's fixed 64 samples make 1,024 updates an
    # iteration at 16 envs; here minibatches of 256 samples, gpg.yml's tuned entry's size: 64 of them at 16 envs, 128 at
    # 32), annealed rate and constant
    "batch": [
        ("LunarLander-v3", (16,), ["gpg", "gpg_bootstrap", "ppo"], ("--lr-schedule", "lin", "--n-minibatches", "64")),
        ("LunarLander-v3", (16,), ["gpg", "ppo"], ("--n-minibatches", "64")),
        ("LunarLander-v3", (32,), ["gpg", "ppo"], ("--lr-schedule", "lin", "--n-minibatches", "128")),
        # at 32 envs also the 16-env cell's number of updates: 64 minibatches, of 512 samples
        ("LunarLander-v3", (32,), ["gpg", "ppo"], ("--lr-schedule", "lin", "--n-minibatches", "64")),
    ],
    # The screens' leaders, run with --seeds 0 1 2 3 (seed 0 is the screen's run), against PPO with each value of a
    # shared setting tried (the better PPO is the one compared)
    "final": [
        ("LunarLander-v3", (16, 32), ["gpg", "gpg_bootstrap", "ppo"], ("--lr-schedule", "lin")),
        ("LunarLander-v3", (16, 32), ["gpg", "ppo"], ()),
        ("HalfCheetah-v5", (4,), ["gpg", "gpg_bootstrap", "gpg_loo_min2", "gpg_bootstrap_loo_min2", "ppo"], ()),
        ("HalfCheetah-v5", (4,), ["ppo"], ("--gamma", "0.9")),
        # 16 envs on EnvPool: the defaults and PPO are benchmarks/paper/halfcheetah's 16-env runs (same cell and command)
        ("HalfCheetah-v5", (16,), ["gpg_bootstrap"], ()),
    ],
}
LAST = 5  # evaluations in the headline mean
# Cells whose defaults and PPO are runs of another folder, made by the same command with the same settings, seeds and
# backend (paths relative to --out's parent): the report reads them beside the study's own runs
BORROWED_RUNS = {("HalfCheetah-v5", 16): Path("paper/halfcheetah")}


def run_files(out: Path, env_dir: Path) -> list[Path]:
    """The finished runs of a folder of the study, and those it borrows."""
    paths = finished_runs(env_dir / "runs")
    own = {path.name for path in paths}
    for (env_id, n_envs), folder in BORROWED_RUNS.items():
        if env_dir.name == env_id:
            borrowed = finished_runs(out.parent / folder / "runs", f"{env_id}__*__{n_envs}envs__seed*.csv")
            paths += [path for path in borrowed if path.name not in own]
    return paths


def run_stage(args: argparse.Namespace, passed_on: list[str]) -> None:
    deadline = None if args.stop_after is None else time.time() + 60 * args.stop_after
    for env_id, env_counts, algos, options in STAGES[args.stage]:
        if args.envs and env_id not in args.envs:
            continue
        algos = [algo for algo in algos if not args.algos or algo in args.algos]
        if not algos:
            continue
        folder = "_".join([env_id, *(option.lstrip("-") for option in options)])
        command = [
            sys.executable,
            str(Path(__file__).resolve().parent / "benchmark_paper.py"),
            "--envs", env_id,
            "--n-envs", *map(str, env_counts),
            "--seeds", *map(str, args.seeds),
            "--algos", *algos,
            "--vec-env", args.vec_env,
            "--jobs", str(args.jobs),
            "--out", str(args.out / folder),
            *options,
            *passed_on,
        ]  # fmt: skip
        if deadline is not None:
            if time.time() > deadline:
                print(f"--stop-after: {env_id} not started; the same command goes on with it", flush=True)
                continue
            command += ["--stop-after", f"{(deadline - time.time()) / 60:.2f}"]
        print(" ".join(command[1:]), flush=True)
        subprocess.run(command, check=True)


def summarise(out: Path) -> dict[tuple[str, int, str], dict[str, list[float]]]:
    """(env folder, n_envs, algo) -> per training seed: last-five mean, final and best evaluation, training wall time."""
    cells: dict[tuple[str, int, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for env_dir in sorted(out.glob("*/")):
        for path in run_files(out, env_dir):
            rows = sorted(read_csv(path), key=lambda row: row["iteration"])
            values = [row["eval_mean"] for row in rows]
            cell = cells[(env_dir.name, rows[0]["n_envs"], rows[0]["algo"])]  # env, and options if any
            cell["last"].append(float(np.mean(values[-LAST:])))
            cell["final"].append(values[-1])
            cell["best"].append(max(values))
            cell["minutes"].append(rows[-1]["wall_time"] / 60)
            cell["seeds"].append(rows[0]["seed"])
    return cells


def report(out: Path) -> str:
    cells = summarise(out)
    lines = [
        "# Long-horizon study: GPG's estimator options against PPO",
        "",
        f"Mean of the last {LAST} evaluations of each run (headline), final and best evaluation: mean +- std over "
        "training seeds; *vs PPO*: the headline minus PPO's at the same env count, on the same training seeds; minutes: "
        "training wall time per run.",
        "",
    ]
    for env_id in sorted({key[0] for key in cells}):
        lines += [
            f"## {env_id}",
            "",
            "| envs | algo | seeds | last 5 | vs PPO | final | best | minutes |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for n_envs in sorted({key[1] for key in cells if key[0] == env_id}):
            ppo = cells.get((env_id, n_envs, "ppo"), {"seeds": [], "last": []})
            ppo_last = dict(zip(ppo["seeds"], ppo["last"], strict=True))
            algos = sorted((key[2] for key in cells if key[:2] == (env_id, n_envs)), key=lambda a: (a == "ppo", a != "gpg", a))
            for algo in algos:
                cell = cells[(env_id, n_envs, algo)]
                versus = _versus(dict(zip(cell["seeds"], cell["last"], strict=True)), ppo_last) if algo != "ppo" else ""
                lines.append(
                    f"| {n_envs} | {algo} | {','.join(map(str, cell['seeds']))} | {_cell(cell['last'])} | {versus} | "
                    f"{_cell(cell['final'])} | {_cell(cell['best'])} | {np.mean(cell['minutes']):.1f} |"
                )
        lines.append("")
    return "\n".join(lines)


def _versus(last: dict[int, float], ppo_last: dict[int, float]) -> str:
    """Paired with PPO: the mean difference over the seeds both have run, and which seeds, where not all of them."""
    seeds = [seed for seed in last if seed in ppo_last]
    if not seeds:
        return ""
    difference = f"{np.mean([last[seed] - ppo_last[seed] for seed in seeds]):+.1f}"
    return difference if len(seeds) == len(last) else f"{difference} (seeds {','.join(map(str, seeds))})"


def _cell(values: list[float]) -> str:
    return f"{np.mean(values):.1f} +- {np.std(values):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "report"])
    parser.add_argument("--stage", choices=list(STAGES), default="screen")
    parser.add_argument("--envs", nargs="+", metavar="ENV_ID", help="only these of the stage's envs, in the stage's order")
    parser.add_argument("--algos", nargs="+", metavar="ALGO", help="only these of the stage's algorithms")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--stop-after", type=float, metavar="MINUTES", help="stop every run at its next checkpoint after this long"
    )
    parser.add_argument("--vec-env", default="envpool", choices=["dummy", "envpool"])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/long_horizon"))
    args, passed_on = parser.parse_known_args()
    cells = STAGES[args.stage]
    for option, chosen, known in (("--envs", args.envs, {cell[0] for cell in cells}),
                                  ("--algos", args.algos, {algo for cell in cells for algo in cell[2]})):  # fmt: skip
        if chosen and set(chosen) - known:
            parser.error(f"{option}: {sorted(set(chosen) - known)} not in stage {args.stage!r}, which has {sorted(known)}")
    if args.command == "run":
        run_stage(args, passed_on)
    text = report(args.out)
    (args.out / "results.md").write_text(text)
    for env_dir in sorted(path for path in args.out.iterdir() if (path / "runs").is_dir()):
        rows = [row for path in run_files(args.out, env_dir) for row in read_csv(path)]
        if rows:
            plots(rows, env_dir)
    print(text)


if __name__ == "__main__":
    main()
