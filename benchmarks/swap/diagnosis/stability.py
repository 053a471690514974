"""
How much of a fresh-seed gap is the task's own variance: every committed run of a task with the adopted default's
settings (its six tuning seeds, ``../lambda_target``'s or, where the entry's lambda is 1, ``../sound_default``'s, and
the fresh seeds 108-109; where the entry leaves lambda unset, ``gae_lambda="auto"``'s tuning seeds and finals; where
the linear baseline's optimism acts, its rule's tuning seeds and finals, ``../optimism_default``) and with
rl_zoo3's PPO entry (one committed run per seed with the fresh-seed PPO runs' entry, budget, evaluation steps, episodes
and evaluation seed, the swap suite's own where a seed ran in several suites), read from the committed logs; nothing is
trained. Per run: the final evaluation, the mean of the last five, the mean of the second half's evaluations, the share
of evaluation episodes that last the task's time limit by quarter of training, and from the training log (where the run
kept one) the second half's approximate KL and clip fraction, the policy's std at the end and the training episodes'
length over the last tenth. Writes ``stability/<task>.md`` and ``stability/<task>.png`` (each run's evaluations, and
the two algorithms' means over their runs) for every task whose fresh seeds are complete, and ``stability/README.md``,
the means of every task as PPO's fraction.

    python benchmarks/swap/diagnosis/stability.py
"""

import json
from pathlib import Path

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np

from sb3_gpg_bench import swap_rules
from sb3_gpg_bench.suite import read_training_log
from sb3_gpg_bench.timing import evaluations, meta

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
OUT = Path(__file__).parent / "stability"
FRESH = swap_rules.SWAP / "fresh_seeds"
# the adopted default's settings on the tuning seeds: the lambda target's runs, or the sound default's where the
# entry's lambda is 1 (the lambda target's README: there the two train alike, and only the sound default's ran)
GPG_TUNING = ((swap_rules.SWAP / "lambda_target", "gpg_swap_lambda"), (swap_rules.SOUND, "gpg_swap_sound"))
FRESH_SEEDS = (108, 109)
SETTINGS = ("ppo", "gpg_swap_lambda_default")
COLUMNS = ("seed", "in", "final", "last five", "second half", "at the time limit, by quarter", "KL, 2nd half", "clip fraction",
           "std at end", "episode length, last tenth")  # fmt: skip


def gpg_runs(task: str) -> list[Path]:
    """:return: the committed runs of ``task`` with the adopted default's settings, tuning seeds first"""
    if task in swap_rules.AUTO_LAMBDA_TASKS:  # the constructor's gae_lambda="auto" trains there
        return [
            swap_rules.run(root, task, swap_rules.AUTO_LAMBDA, seed)
            for root, seeds in swap_rules.AUTO_LAMBDA_RUNS
            for seed in seeds
        ]
    if task in swap_rules.OPTIMISM_TASKS:  # the linear baseline's optimism acts there
        found = [
            swap_rules.found(swap_rules.OPTIMISM_TUNING, task, swap_rules.OPTIMISM, seed) for seed in swap_rules.SIX_SEEDS
        ]
        fresh = [swap_rules.run(swap_rules.OPTIMISM_FRESH, task, swap_rules.OPTIMISM, seed) for seed in FRESH_SEEDS]
        return [run for run in found if run is not None] + fresh
    runs = [swap_rules.run(FRESH, task, SETTINGS[1], seed) for seed in FRESH_SEEDS]
    for root, setting in GPG_TUNING:
        tuning = [swap_rules.run(root, task, setting, seed) for seed in swap_rules.SIX_SEEDS]
        if all(run.exists() for run in tuning):
            return tuning + runs
    return runs


def evaluated_alike(run: Path, reference: Path) -> bool:
    """:return: whether ``run`` has ``reference``'s entry, budget, evaluation steps, episodes and evaluation seed"""

    def eval_seed(folder: Path) -> int:
        return meta(folder).get("eval_seed", -1) - int(folder.name.rsplit("seed", 1)[1])

    if not (run / "config.yml").exists() or (run / "config.yml").read_text() != (reference / "config.yml").read_text():
        return False
    ours, theirs = np.load(run / "evaluations.npz"), np.load(reference / "evaluations.npz")
    return (
        ours["results"].shape == theirs["results"].shape
        and np.array_equal(ours["timesteps"], theirs["timesteps"])
        and meta(run)["n_timesteps"] == meta(reference)["n_timesteps"]
        and eval_seed(run) == eval_seed(reference)
    )


def ppo_runs(task: str) -> list[Path]:
    """:return: one committed PPO run per seed evaluated as the fresh-seed runs are, fresh seeds last"""
    reference = swap_rules.run(FRESH, task, SETTINGS[0], FRESH_SEEDS[0])
    by_seed: dict[int, Path] = {}
    # the swap suite's own runs first where a seed ran in several suites
    for run in sorted(BENCHMARKS.glob(f"**/runs/{task}__ppo__seed*"), key=lambda run: ("swap" not in run.parts, run)):
        if (run / "evaluations.npz").exists() and evaluated_alike(run, reference):
            by_seed.setdefault(int(run.name.rsplit("seed", 1)[1]), run)
    return [by_seed[seed] for seed in sorted(by_seed, key=lambda seed: (seed in FRESH_SEEDS, seed))]


def logged(log: dict[str, np.ndarray], key: str, part: float, form: str = "{:.3f}") -> str:
    """:return: the mean of ``key``'s values over the last ``part`` of training; "not logged" where the log has none"""
    if key not in log:
        return "not logged"
    steps, values = log[key][:, 0], log[key][:, 1]
    return form.format(values[steps > (1 - part) * steps[-1]].mean())


def row(run: Path, limit: int) -> list[str]:
    """:return: ``run``'s cells, in ``COLUMNS``' order"""
    steps, returns = evaluations(run)
    lengths = np.load(run / "evaluations.npz")["ep_lengths"][: len(steps)]
    cells = [run.name.rsplit("seed", 1)[1], run.parent.parent.relative_to(BENCHMARKS).as_posix()]
    cells += [f"{value:,.1f}" for value in (returns[-1], returns[-5:].mean(), returns[len(returns) // 2 :].mean())]
    cells.append(" / ".join(f"{(part >= limit).mean():.2f}" for part in np.array_split(lengths, 4)))
    log = {key: np.array(values) for key, values in read_training_log(run).items() if values}
    std = f"{log['train/std'][-1, 1]:.3f}" if "train/std" in log else "not logged"
    cells += [logged(log, "train/approx_kl", 0.5), logged(log, "train/clip_fraction", 0.5), std]
    return [*cells, logged(log, "rollout/ep_len_mean", 0.1, "{:.0f}")]


def report(task: str) -> tuple[list[float], str]:
    """
    Writes ``task``'s page and figure.

    :param task: a task whose fresh seeds are complete for both algorithms
    :return: GPG's means over its runs (final, last five, second half) as fractions of PPO's over random play's, and
        the number of runs of each, "GPG / PPO"
    """
    limit = gym.spec(task).max_episode_steps
    lines = [f"# {task}: every committed run with the adopted default's settings and with PPO's entry", ""]
    lines += ["Written by `../stability.py`. At the time limit: the share of evaluation episodes that last as long as",
              "the task allows.", ""]  # fmt: skip
    means = {}
    figure, axis = plt.subplots(figsize=(7, 4))
    found = {"GPG": gpg_runs(task), "PPO": ppo_runs(task)}
    for (name, runs), colour in zip(found.items(), ("tab:blue", "tab:orange"), strict=True):
        lines += [f"## {name} ({len(runs)} runs)", "", "| " + " | ".join(COLUMNS) + " |", "|---" * len(COLUMNS) + "|"]
        lines += ["| " + " | ".join(row(run, limit)) + " |" for run in runs]
        steps = evaluations(runs[0])[0]
        curves = np.array([evaluations(run)[1] for run in runs])
        for curve in curves:
            axis.plot(steps, curve, color=colour, alpha=0.25, linewidth=0.8)
        axis.plot(steps, curves.mean(axis=0), color=colour, linewidth=2, label=f"{name}, mean of {len(runs)} runs")
        means[name] = [curves[:, -1].mean(), curves[:, -5:].mean(), curves[:, curves.shape[1] // 2 :].mean()]
        lines += ["", "Mean over runs: final {:,.1f}, last five {:,.1f}, second half {:,.1f}.".format(*means[name]), ""]
    floor = json.loads((swap_rules.PREVIOUS / "random_scores.json").read_text())[task]["mean"]
    fractions = [swap_rules.of_ppo(gpg, ppo, floor) for gpg, ppo in zip(means["GPG"], means["PPO"], strict=True)]
    lines.append("GPG's means as a fraction of PPO's over random play's: final {:.2f}, last five {:.2f}, second half "
                 "{:.2f}.".format(*fractions))  # fmt: skip
    axis.set(xlabel="steps", ylabel="mean evaluation return", title=task)
    axis.legend()
    figure.tight_layout()
    OUT.mkdir(exist_ok=True)
    figure.savefig(OUT / f"{task}.png", dpi=72)
    plt.close(figure)
    (OUT / f"{task}.md").write_text("\n".join(lines) + "\n")
    return fractions, " / ".join(str(len(runs)) for runs in found.values())


def main() -> None:
    lines = ["# Every committed run, per task", ""]
    lines += ["Written by `../stability.py`: the means over every committed run with the adopted default's settings",
              "and with PPO's entry, GPG's as a fraction of PPO's over random play's (a page per task beside this one).",
              ""]  # fmt: skip
    lines += ["| task | runs, GPG / PPO | final | last five | second half |", "|---|---|---|---|---|"]
    for task in sorted({run.name.split("__")[0] for run in (FRESH / "runs").glob("*__seed*")}):
        fresh = all(swap_rules.run(FRESH, task, setting, seed).exists() for setting in SETTINGS for seed in FRESH_SEEDS)
        if fresh and all(run.exists() for run in gpg_runs(task)):
            fractions, runs = report(task)
            lines.append(f"| [{task}]({task}.md) | {runs} | " + " | ".join(f"{x:.2f}" for x in fractions) + " |")
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
