"""
Run a grid of RL Zoo trainings the way an RL Zoo user does (``python -m sb3_gpg.train``, i.e. ``sb3-gpg train``, with
each algorithm's own hyperparameter file), keep each run's evaluations, and tabulate and plot them.

Each run is one ``train`` subprocess with 20 evaluations over its budget (RL Zoo's ``EvalCallback``: 10 deterministic
episodes each) and one torch thread. What a run leaves in ``--out/runs/<run>/`` is small: RL Zoo's
``evaluations.npz``, the resolved hyperparameters (``config.yml``, ``args.yml``) and ``meta.json`` (command, wall
time, versions); model files are deleted. A finished run is not run again, so the same command resumes a grid;
``--jobs`` runs several at once. ``report`` writes ``table.md`` (per task and setting: the final evaluation and the
mean of the last five, mean ± std over seeds) and ``curves.png``.

PPO uses rl_zoo3's own ``ppo.yml``; for the MuJoCo v5 envs, which it has no entries for, its v4 entries
(``ppo_v5.yml``, written beside the runs). GPG uses sb3_gpg's ``gpg.yml``; a setting adds ``-params``.

    python scripts/zoo_suite.py run --suite state_aware --seeds 100 101 --jobs 2 --out benchmarks/state_aware
    python scripts/zoo_suite.py report --suite state_aware --out benchmarks/state_aware
"""

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import NamedTuple

import numpy as np
import yaml
from tqdm import tqdm

N_EVALUATIONS = 20
EVAL_EPISODES = 10
V4_ENTRIES = {"HalfCheetah-v5": "HalfCheetah-v4", "Hopper-v5": "Hopper-v4", "Walker2d-v5": "Walker2d-v4",
              "Swimmer-v5": "Swimmer-v4"}  # fmt: skip


class Setting(NamedTuple):
    """An algorithm with its hyperparameter file's entry and, for GPG, extra ``-params``."""

    name: str
    algo: str
    params: tuple[str, ...] = ()


STATE_AWARE = [
    Setting("ppo", "ppo"),
    *[
        Setting(f"gpg_{baseline}_lambda{gae_lambda}", "gpg", (f"baseline:'{baseline}'", f"gae_lambda:{gae_lambda}", *extra))
        for baseline, extra in (("bins", ()), ("linear", ()), ("knn", ("baseline_kwargs:{'max_samples':2048}",)))
        for gae_lambda in (1.0, 0.95)
    ],
]
SUITES = {
    # issue #32's first look: GPG's estimator options against the time bins and RL Zoo's PPO
    "state_aware": (["HalfCheetah-v5", "Walker2d-v5", "Hopper-v5", "LunarLander-v3"], STATE_AWARE),
    # a tiny grid for the tests
    "smoke": (["CartPole-v1"], [Setting("ppo", "ppo"), Setting("gpg_linear", "gpg", ("baseline:'linear'",))]),
}


def run_name(env_id: str, setting: Setting, seed: int) -> str:
    return f"{env_id}__{setting.name}__seed{seed}"


def zoo_entry(algo: str, env_id: str, out: Path) -> tuple[dict, list[str]]:
    """
    :return: the run's hyperparameter entry, and the ``--conf-file`` arguments that select it
    """
    import rl_zoo3

    import sb3_gpg

    if algo == "gpg":
        entries = yaml.safe_load((Path(sb3_gpg.__file__).parent / "hyperparams" / "gpg.yml").read_text())
        return entries.get(env_id, entries["default"]), []
    entries = yaml.safe_load((Path(rl_zoo3.__file__).parent / "hyperparams" / f"{algo}.yml").read_text())
    if env_id in entries or env_id not in V4_ENTRIES:
        return entries[env_id], []
    conf = out / f"{algo}_v5.yml"
    conf.write_text(yaml.safe_dump({v5: entries[v4] for v5, v4 in V4_ENTRIES.items() if v4 in entries}, sort_keys=False))
    return entries[V4_ENTRIES[env_id]], ["--conf-file", str(conf)]


def train(env_id: str, setting: Setting, seed: int, out: Path, budget: int | None) -> Path:
    """
    One RL Zoo training in a scratch folder; its small outputs are moved to ``out/runs/<run>``.

    :param budget: steps, instead of the entry's ``n_timesteps``
    :return: the run's folder
    """
    entry, conf = zoo_entry(setting.algo, env_id, out)
    n_timesteps = budget or int(float(entry["n_timesteps"]))
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "sb3_gpg.train", "--algo", setting.algo, "--env", env_id, "--seed", str(seed),
                   "-n", str(n_timesteps), "--eval-freq", str(max(n_timesteps // N_EVALUATIONS, 1)),
                   "--eval-episodes", str(EVAL_EPISODES), "--num-threads", "1", "--log-interval", "-1", "-f", scratch,
                   *conf, *(["-params", *setting.params] if setting.params else [])]  # fmt: skip
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        wall_time = time.perf_counter() - start
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
        (log,) = Path(scratch, setting.algo).iterdir()
        run = out / "runs" / run_name(env_id, setting, seed)
        run.mkdir(parents=True, exist_ok=True)
        shutil.copy(log / "evaluations.npz", run / "evaluations.npz")
        for name in ("config.yml", "args.yml"):
            shutil.copy(log / env_id / name, run / name)
    versions = {
        "python": platform.python_version(),
        **{name: _version(name) for name in ("torch", "stable_baselines3", "rl_zoo3", "sb3_gpg")},
    }
    meta = {"command": " ".join(command[1:]).replace(scratch, "<scratch>"), "wall_time_s": round(wall_time, 1),
            "n_timesteps": n_timesteps, "machine": platform.node(), "versions": versions}  # fmt: skip
    (run / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return run


def _version(module: str) -> str:
    return str(getattr(__import__(module), "__version__", "?"))


def scores(run: Path) -> tuple[np.ndarray, np.ndarray]:
    """
    :return: the run's evaluation steps and mean evaluation returns
    """
    data = np.load(run / "evaluations.npz")
    return data["timesteps"], data["results"].mean(axis=1)


def report(tasks: list[str], settings: list[Setting], out: Path) -> str:
    """
    Write ``table.md`` and ``curves.png`` from the finished runs in ``out/runs``.

    :return: the table
    """
    lines = [
        "| task | setting | seeds | final evaluation | mean of last five | vs time bins (same seeds) | wall time (min) |",
        "|---|---|---|---|---|---|---|",
    ]
    curves = {}
    for env_id in tasks:
        finals = {}
        for setting in settings:
            runs = sorted((out / "runs").glob(f"{env_id}__{setting.name}__seed*"))
            runs = [run for run in runs if (run / "meta.json").exists()]
            if not runs:
                continue
            per_seed = [scores(run) for run in runs]
            final = np.array([values[-1] for _, values in per_seed])
            last_five = np.array([values[-5:].mean() for _, values in per_seed])
            wall = np.mean([json.loads((run / "meta.json").read_text())["wall_time_s"] / 60 for run in runs])
            finals[setting.name] = {run.name.rsplit("__", 1)[1]: value for run, value in zip(runs, final, strict=True)}
            # Against the time bins on the seeds both have run
            base = finals.get("gpg_bins_lambda1.0", {})
            seeds = sorted(set(base) & set(finals[setting.name]))
            base_mean = np.mean([base[seed] for seed in seeds]) if seeds else 0.0
            own_mean = np.mean([finals[setting.name][seed] for seed in seeds]) if seeds else 0.0
            ratio = f"{own_mean / base_mean:.2f}" if setting.algo == "gpg" and base_mean > 0 else ""
            lines.append(f"| {env_id} | {setting.name} | {len(runs)} | {final.mean():.1f} ± {final.std():.1f} | "
                         f"{last_five.mean():.1f} ± {last_five.std():.1f} | {ratio} | {wall:.1f} |")  # fmt: skip
            curves[(env_id, setting.name)] = per_seed
    table = "\n".join(lines) + "\n"
    (out / "table.md").write_text(table)
    if curves:
        plot(curves, tasks, out / "curves.png")
    return table


def plot(curves: dict, tasks: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [task for task in tasks if any(key[0] == task for key in curves)]
    figure, axes = plt.subplots(1, len(tasks), figsize=(4.5 * len(tasks), 3.6), squeeze=False)
    for axis, env_id in zip(axes[0], tasks, strict=True):
        for (task, name), per_seed in curves.items():
            if task != env_id:
                continue
            length = min(len(values) for _, values in per_seed)
            steps = per_seed[0][0][:length]
            values = np.array([values[:length] for _, values in per_seed])
            axis.plot(steps, values.mean(axis=0), label=name, linestyle="--" if name == "ppo" else "-")
            axis.fill_between(steps, values.min(axis=0), values.max(axis=0), alpha=0.15)
        axis.set_title(env_id)
        axis.set_xlabel("env steps")
    axes[0][0].set_ylabel("evaluation return")
    figure.suptitle("mean over seeds; band: min to max", fontsize=9)
    axes[0][-1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "report"])
    parser.add_argument("--suite", choices=list(SUITES), default="state_aware")
    parser.add_argument("--envs", nargs="+", default=None, help="a subset of the suite's tasks")
    parser.add_argument("--settings", nargs="+", default=None, help="a subset of the suite's settings, by name")
    parser.add_argument("--seeds", nargs="+", type=int, default=[100, 101])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--budget", type=int, default=None, help="steps per run instead of the entries' n_timesteps")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/state_aware"))
    args = parser.parse_args()
    tasks, settings = SUITES[args.suite]
    tasks = [task for task in tasks if args.envs is None or task in args.envs]
    settings = [setting for setting in settings if args.settings is None or setting.name in args.settings]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "run":
        grid = [(env_id, setting, seed) for seed in args.seeds for env_id in tasks for setting in settings]
        todo = [run for run in grid if not (args.out / "runs" / run_name(*run) / "meta.json").exists()]
        todo.sort(key=lambda run: run[1].algo != "ppo")  # PPO's entries are the longest runs: start them first
        print(f"{len(grid)} runs, {len(grid) - len(todo)} already done, {len(todo)} to run, {args.jobs} at a time")
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(train, *run, args.out, args.budget): run for run in todo}
            for future in tqdm(as_completed(futures), total=len(futures), desc="runs"):
                tqdm.write(f"{run_name(*futures[future])}: {future.result()}")
    print(report(tasks, settings, args.out))


if __name__ == "__main__":
    main()
