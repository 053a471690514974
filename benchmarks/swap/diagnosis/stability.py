"""
How much of a fresh-seed gap is the task's own variance: every committed run of a task with the adopted default's
settings (its six tuning seeds, ``../lambda_target``'s or, where the entry's lambda is 1, ``../sound_default``'s,
and the fresh seeds 108-109) and with
rl_zoo3's PPO entry (every committed run whose ``config.yml`` and evaluations, their number and episodes, equal the
fresh-seed PPO runs': one per seed, the swap suite's own where a seed ran in several suites), read from the committed
logs; nothing is trained. Per run: the final evaluation, the mean of the last five, the mean of the second half's
evaluations, the share of evaluation episodes that last the task's time limit by quarter of training, and from the
training log (where the run kept one) the second half's approximate KL and clip fraction, the policy's std at the end
and the training episodes' length over the last tenth. Writes ``stability/<task>.md`` and ``stability/<task>.png``
(each run's evaluations, and the two algorithms' means over their runs) for every task whose fresh seeds are complete,
and ``stability/README.md``, the means of every task as PPO's fraction.

    python benchmarks/swap/diagnosis/stability.py
"""

import json
from pathlib import Path

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np

from sb3_gpg_bench import swap_rules
from sb3_gpg_bench.suite import read_training_log
from sb3_gpg_bench.suite_report import evaluations

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
OUT = Path(__file__).parent / "stability"
FRESH = BENCHMARKS / "swap" / "fresh_seeds" / "runs"
# the adopted default's settings on the tuning seeds: the lambda target's runs, or the sound default's where the
# entry's lambda is 1 (the lambda target's README: there the two train alike, and only the sound default's ran)
GPG_TUNING = (
    (BENCHMARKS / "swap" / "lambda_target" / "runs", "gpg_swap_lambda"),
    (BENCHMARKS / "swap" / "sound_default" / "runs", "gpg_swap_sound"),
)
TUNING_SEEDS, FRESH_SEEDS = (100, 101, 104, 105, 106, 107), (108, 109)
COLUMNS = ("seed", "in", "final", "last five", "second half", "at the time limit, by quarter", "KL, 2nd half", "clip fraction",
           "std at end", "episode length, last tenth")  # fmt: skip


def gpg_runs(task: str) -> list[Path]:
    """:return: the committed runs of ``task`` with the adopted default's settings, tuning seeds first"""
    folder, setting = next(
        (folder, setting) for folder, setting in GPG_TUNING if (folder / f"{task}__{setting}__seed100").exists()
    )
    runs = [folder / f"{task}__{setting}__seed{seed}" for seed in TUNING_SEEDS]
    runs += [FRESH / f"{task}__gpg_swap_lambda_default__seed{seed}" for seed in FRESH_SEEDS]
    return [run for run in runs if run.exists()]


def ppo_runs(task: str) -> list[Path]:
    """:return: one committed PPO run per seed with the fresh-seed runs' entry and evaluations, fresh seeds last"""
    reference = FRESH / f"{task}__ppo__seed{FRESH_SEEDS[0]}"
    config, shape = (reference / "config.yml").read_text(), np.load(reference / "evaluations.npz")["results"].shape
    by_seed: dict[int, Path] = {}
    # the swap suite's own runs first where a seed ran in several suites
    for run in sorted(BENCHMARKS.glob(f"**/runs/{task}__ppo__seed*"), key=lambda run: ("swap" not in run.parts, run)):
        seed = int(run.name.rsplit("seed", 1)[1])
        same = (run / "config.yml").exists() and (run / "config.yml").read_text() == config
        if same and (run / "evaluations.npz").exists() and np.load(run / "evaluations.npz")["results"].shape == shape:
            by_seed.setdefault(seed, run)
    return [by_seed[seed] for seed in sorted(by_seed, key=lambda seed: (seed in FRESH_SEEDS, seed))]


def row(run: Path, limit: int) -> list[str]:
    """:return: ``run``'s cells, in ``COLUMNS``' order"""
    data = np.load(run / "evaluations.npz")
    returns, lengths = data["results"].mean(axis=1), data["ep_lengths"]
    held = " / ".join(f"{(part >= limit).mean():.2f}" for part in np.array_split(lengths, 4))
    cells = [run.name.rsplit("seed", 1)[1], run.parent.parent.relative_to(BENCHMARKS).as_posix()]
    cells += [f"{value:,.1f}" for value in (returns[-1], returns[-5:].mean(), returns[len(returns) // 2 :].mean())]
    cells.append(held)
    log = {key: np.array(values) for key, values in read_training_log(run).items() if values}
    if "train/approx_kl" not in log:
        return [*cells, "no log", "no log", "no log", "no log"]
    kl, clip, length = log["train/approx_kl"], log["train/clip_fraction"], log["rollout/ep_len_mean"]
    second, last_tenth = kl[:, 0] > kl[-1, 0] / 2, length[:, 0] > 0.9 * length[-1, 0]
    std = f"{log['train/std'][-1, 1]:.3f}" if "train/std" in log else "discrete"
    return [*cells, f"{kl[second, 1].mean():.3f}", f"{clip[second, 1].mean():.3f}", std, f"{length[last_tenth, 1].mean():.0f}"]


def report(task: str) -> list[float]:
    """Writes ``task``'s page and figure. :return: GPG's means (final, last five, second half) as PPO's fraction"""
    limit = gym.spec(task).max_episode_steps
    lines = [f"# {task}: every committed run with the adopted default's settings and with PPO's entry", ""]
    lines += [
        "Written by `../stability.py`. At the time limit: the share of evaluation episodes that last as long as the task"
        " allows.",
        "",
    ]
    means = {}
    figure, axis = plt.subplots(figsize=(7, 4))
    for name, runs, colour in (("GPG", gpg_runs(task), "tab:blue"), ("PPO", ppo_runs(task), "tab:orange")):
        lines += [f"## {name} ({len(runs)} runs)", "", "| " + " | ".join(COLUMNS) + " |", "|---" * len(COLUMNS) + "|"]
        lines += ["| " + " | ".join(row(run, limit)) + " |" for run in runs]
        curves = np.array([evaluations(run)[1] for run in runs])
        for curve in curves:
            axis.plot(evaluations(runs[0])[0], curve, color=colour, alpha=0.25, linewidth=0.8)
        axis.plot(
            evaluations(runs[0])[0], curves.mean(axis=0), color=colour, linewidth=2, label=f"{name}, mean of {len(runs)} runs"
        )
        means[name] = [curves[:, -1].mean(), curves[:, -5:].mean(), curves[:, curves.shape[1] // 2 :].mean()]
        lines += ["", "Mean over runs: final {:,.1f}, last five {:,.1f}, second half {:,.1f}.".format(*means[name]), ""]
    floor = json.loads((swap_rules.PREVIOUS / "random_scores.json").read_text())[task]["mean"]
    fractions = [(gpg - floor) / (ppo - floor) for gpg, ppo in zip(means["GPG"], means["PPO"], strict=True)]
    lines.append(
        "GPG's means as a fraction of PPO's over random play's: final {:.2f}, last five {:.2f}, second half {:.2f}.".format(
            *fractions
        )
    )
    axis.set(xlabel="steps", ylabel="mean evaluation return", title=task)
    axis.legend()
    figure.tight_layout()
    OUT.mkdir(exist_ok=True)
    figure.savefig(OUT / f"{task}.png", dpi=72)
    plt.close(figure)
    (OUT / f"{task}.md").write_text("\n".join(lines) + "\n")
    return fractions


def main() -> None:
    tasks = sorted({run.name.split("__")[0] for run in FRESH.glob("*__gpg_swap_lambda_default__seed*")})
    tasks = [
        task
        for task in tasks
        if len(gpg_runs(task)) == 8 and ppo_runs(task)[-2:] == [FRESH / f"{task}__ppo__seed{seed}" for seed in FRESH_SEEDS]
    ]
    lines = [
        "# Every committed run, per task",
        "",
        "Written by `../stability.py`: the means over every committed run with the adopted default's settings and",
    ]
    lines += ["with PPO's entry, GPG's as a fraction of PPO's over random play's (one page per task beside this one).", ""]
    lines += ["| task | runs, GPG / PPO | final | last five | second half |", "|---|---|---|---|---|"]
    for task in tasks:
        fractions = report(task)
        lines.append(
            f"| [{task}]({task}.md) | {len(gpg_runs(task))} / {len(ppo_runs(task))} | "
            + " | ".join(f"{x:.2f}" for x in fractions)
            + " |"
        )
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
