"""
The one-word swap under the constructor's current default, on seeds nothing was chosen on (README.md): per task the
newest finals of the setting that trains as the current default does there, and PPO's runs of the same seeds. Ant-v5
and Pusher-v5, whose PPO entries leave ``gae_lambda`` unset, take ``gae_lambda="auto"`` from the constructor: their
finals on seeds 110 and 111 (``../lambda_auto``). On Acrobot-v1, MountainCar-v0 and MountainCarContinuous-v0 the
linear baseline's optimism acts: its finals on seeds 108 and 109 (``../optimism_default/fresh_seeds``; PPO's from
``../fresh_seeds``). Every other task's entry names its lambda, so the default trains there as
``gpg_swap_lambda_default`` did on seeds 108 and 109 (``../fresh_seeds``).

Writes ``table.md`` (per task: the seeds and folder, PPO's and GPG's final evaluation and the mean of the last five,
mean ± std over seeds, GPG's mean as a fraction of PPO's over random play's, the verdict: behind or ahead by more than
the larger std, else level; and the issue's targets) and ``aggregate.md`` (rliable's IQM of PPO-normalised scores with
95% stratified bootstrap intervals and the probability of improving on PPO, ``sb3_gpg_bench.suite_report``).

    python benchmarks/swap/current_default/report.py
"""

import json
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules
from sb3_gpg_bench.suite_report import aggregate, finished_runs, normalised, scores
from sb3_gpg_bench.suites import SUITES, Setting, Suite

HERE = Path(__file__).parent
GPG = "gpg_swap_current"
# where the current default's finals of a task are: the folder, the setting that ran it there, the seeds, and the
# folder of PPO's runs of the same seeds
FRESH = swap_rules.SWAP / "fresh_seeds"
AUTO_FOLDER, AUTO_SEEDS = swap_rules.AUTO_LAMBDA_RUNS[-1]
AUTO_SOURCE = (AUTO_FOLDER, swap_rules.AUTO_LAMBDA, list(AUTO_SEEDS), AUTO_FOLDER)
NAMED_SOURCE = (FRESH, "gpg_swap_lambda_default", [108, 109], FRESH)
OPTIMISM_SOURCE = (swap_rules.OPTIMISM_FRESH, swap_rules.OPTIMISM, [108, 109], FRESH)
SOURCES = {
    **dict.fromkeys(swap_rules.AUTO_LAMBDA_TASKS, AUTO_SOURCE),
    **dict.fromkeys(swap_rules.OPTIMISM_TASKS, OPTIMISM_SOURCE),
}


def current_runs(tasks: list[str]) -> dict[tuple[str, str], dict[int, Path]]:
    """:return: per (task, "ppo" or ``GPG``), the finished runs' folders by seed, from each task's source"""
    swap = SUITES["swap"]
    found: dict[tuple[str, str], dict[int, Path]] = {}
    for task in tasks:
        folder, setting, seeds, ppo_folder = SOURCES.get(task, NAMED_SOURCE)
        for name, root in ((GPG, folder), ("ppo", ppo_folder)):
            for by_seed in finished_runs(swap, root, [task], ["ppo" if name == "ppo" else setting], seeds).values():
                found[(task, name)] = by_seed
    return found


def main() -> None:
    suite = Suite(SUITES["swap"].tasks, [Setting("ppo", "ppo"), Setting(GPG, "gpg")], "ppo", None)
    found = current_runs(suite.tasks)
    tasks = [task for task in suite.tasks if (task, "ppo") in found and (task, GPG) in found]
    scored = {key: scores(runs) for key, runs in found.items()}
    floors = json.loads((NAMED_SOURCE[0] / "random_scores.json").read_text())
    rows = [
        "| task | seeds (folder) | PPO | GPG | last five: PPO, GPG | of PPO | verdict | targets |",
        "|---" * 8 + "|",
    ]
    verdicts: dict[str, list[str]] = {}
    for task in tasks:
        ppo, gpg = (np.array(list(scored[(task, name)][0].values())) for name in ("ppo", GPG))
        last_ppo, last_gpg = (np.mean(list(scored[(task, name)][1].values())) for name in ("ppo", GPG))
        floor = floors[task]["mean"]
        fraction = swap_rules.of_ppo(gpg.mean(), ppo.mean(), floor)
        verdict = swap_rules.judge(task, gpg.mean() - ppo.mean(), max(ppo.std(), gpg.std()), verdicts)
        folder, _, seeds, _ = SOURCES.get(task, NAMED_SOURCE)
        cells = [
            f"{', '.join(map(str, seeds))} ({folder.relative_to(swap_rules.SWAP)})",
            f"{ppo.mean():.1f} ± {ppo.std():.1f}",
            f"{gpg.mean():.1f} ± {gpg.std():.1f}",
            f"{last_ppo:.1f}, {last_gpg:.1f}",
            f"{fraction:.2f}",
            verdict,
            "" if np.isnan(fraction) else swap_rules.targets_missed(task, fraction, ppo, gpg),
        ]
        rows.append(f"| {task} | {' | '.join(cells)} |")
    counts = "; ".join(f"{verdict} on {len(names)} ({', '.join(names)})" for verdict, names in sorted(verdicts.items()))
    absent = [task for task in suite.tasks if task not in tasks]
    text = "\n".join(rows) + f"\n\n{counts}.\n" + (f"\nNo runs of: {', '.join(absent)}.\n" if absent else "")
    (HERE / "table.md").write_text(text)
    per_metric, left_out = {}, set()
    for metric in (0, 1):
        per_metric[metric], left = normalised(suite, NAMED_SOURCE[0], tasks, scored, metric)
        left_out |= set(left)
    summary, _ = aggregate(suite, HERE, tasks, per_metric, left_out)
    print(text + "\n" + summary)


if __name__ == "__main__":
    main()
