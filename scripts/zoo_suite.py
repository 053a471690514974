"""
Run a grid of RL Zoo trainings the way an RL Zoo user does (``python -m sb3_gpg.train``, i.e. ``sb3-gpg train``, with
each algorithm's own hyperparameter file), keep each run's evaluations, and tabulate and plot them
(``sb3_gpg_bench.suite`` runs, ``sb3_gpg_bench.suite_report`` reports).

Each run is one ``train`` subprocess with 20 evaluations over its budget (RL Zoo's ``EvalCallback``: 10 deterministic
episodes each; in the ``zoo`` suite on evaluation envs seeded apart from training, ``--eval-seed`` = seed + 10000) and
one torch thread. What a run leaves in ``--out/runs/<run>/`` is small: ``evaluations.npz``, the resolved
hyperparameters (``config.yml``, ``args.yml``) and ``meta.json`` (command, wall time, versions, the machine's load
and the trainings beside the run, when each evaluation was written) and ``training_log.json`` (the explained variance
each update logged). A finished run is not run again, so the same
command resumes a grid; ``--jobs`` runs several at once, ``--ray-address`` submits them to a Ray cluster
(``pip install 'sb3-gpg[ray]'``; ``local`` starts Ray on this machine). A run longer than the time left on the
machine pauses and goes on: with ``--paused-in DIR`` an unfinished run keeps its scratch folder there, ``--pause-at
HH:MM`` pauses it at its first rollout from then (``sb3_gpg_bench.resumable``: the whole training's state, so that
the run it makes is the run that never paused), and the same command goes on with it later. Its ``meta.json`` lists
its parts (``segments``), and its wall time is compared with no other run's.

- ``run``: the grid, then ``report`` of every finished run of the suite.
- ``random``: the uniform-random policy's score on each task (100 episodes, seeds 10000 and up), into
  ``random_scores.json``: the floor of the PPO-normalised scores.
- ``report`` (of the ``--envs``, ``--settings`` and ``--seeds`` given, all by default): ``table.md`` (per task and
  setting: the final evaluation and the mean of the last five, mean ± std over seeds; wall time under the same load)
  and ``curves.png``; ``timing.md`` (each run's wall time, load, minibatch updates and parameters; the time to 50% and
  90% of PPO's final score) and, for runs that timed their evaluations, ``time_to_score.png``; with
  ``random_scores.json`` and PPO's runs, ``aggregate.md`` and ``profile.png`` (rliable: IQM with 95% stratified
  bootstrap intervals, probability of improvement, performance profile; ``pip install 'sb3-gpg[suite]'``); and, when
  nothing is narrowed, ``headline.md`` (the README's table). Beside ``curves.png``, a figure per task in ``curves/``
  (mean ± std over the counted seeds against env steps; ``sb3_gpg_bench.suite_curves``), the same bytes from the same
  runs with the same matplotlib and Pillow.
- ``curves``: those per-task figures alone, of the runs in the ``--from`` folders' ``runs/`` (default: ``--out``),
  counted as ``report`` counts them, into ``--out/curves``: settings run into folders of their own are drawn together
  without rewriting either folder's tables.

PPO uses rl_zoo3's own ``ppo.yml`` (for the MuJoCo v5 envs, which it has no entries for, its v4 or v2 entries). GPG uses
sb3_gpg's ``gpg.yml`` (its ``default:`` entry where it has none for the task: the ``defaults`` suite); a setting adds
``-params``.

    python scripts/zoo_suite.py random --suite zoo --out benchmarks/zoo_suite
    python scripts/zoo_suite.py run --suite zoo --seeds 0 1 2 3 4 --jobs 2 --out benchmarks/zoo_suite
    python scripts/zoo_suite.py run --suite zoo --seeds 0 1 2 3 4 --ray-address auto --out benchmarks/zoo_suite
    python scripts/zoo_suite.py run --suite swap --seeds 108 --envs Walker2d-v5 --settings ppo \
        --paused-in ~/paused_runs --pause-at 17:30 --out benchmarks/swap/fresh_seeds
    python scripts/zoo_suite.py run --suite state_aware --seeds 100 101 --jobs 2 --out benchmarks/state_aware
    python scripts/zoo_suite.py run --suite defaults --seeds 100 101 --jobs 2 --out benchmarks/default_entry
    python scripts/zoo_suite.py curves --suite swap --settings ppo gpg_swap_memory_recency0.8 \
        --seeds 100 101 104 105 106 107 --from benchmarks/swap/default_memory --out benchmarks/swap
"""

import argparse
import datetime
import json
from pathlib import Path

from sb3_gpg_bench.suite import Run, random_scores, run_suite
from sb3_gpg_bench.suite_curves import CURVES, counted_found, write_task_curves
from sb3_gpg_bench.suite_report import report
from sb3_gpg_bench.suites import SUITES

RANDOM_SEED = 10_000


def pause_time(text: str) -> float:
    """:return: ``HH:MM``'s next time, or an ISO date and time, in seconds since the epoch"""
    try:
        if len(text) <= 5:
            now = datetime.datetime.now()
            at = datetime.datetime.combine(now.date(), datetime.time.fromisoformat(text))
            return (at if at > now else at + datetime.timedelta(days=1)).timestamp()
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a time as HH:MM (its next time) or an ISO date and time") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "random", "report", "curves"])
    parser.add_argument("--suite", choices=list(SUITES), default="zoo")
    parser.add_argument("--envs", nargs="+", default=None, help="a subset of the suite's tasks")
    parser.add_argument("--settings", nargs="+", default=None, help="a subset of the suite's settings, by name")
    parser.add_argument("--seeds", nargs="+", type=int, default=None, help="run: the seeds; report, curves: a subset")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once on this machine")
    parser.add_argument("--ray-address", default=None, help="submit the runs to this Ray cluster ('local': start one here)")
    parser.add_argument("--budget", type=int, default=None, help="steps per run instead of the entries' n_timesteps")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--paused-in", type=Path, default=None,
                        help="run: keep unfinished runs here, to pause and go on with the same command")  # fmt: skip
    parser.add_argument("--pause-at", type=pause_time, default=None,
                        help="run, with --paused-in: pause the runs at this time (HH:MM: its next time)")  # fmt: skip
    parser.add_argument("--from", dest="sources", nargs="+", type=Path, default=None,
                        help="curves: the suite folders whose runs/ to draw (default: --out)")  # fmt: skip
    args = parser.parse_args()
    suite = SUITES[args.suite]
    unknown = sorted(set(args.envs or []) - set(suite.tasks)) + sorted(
        set(args.settings or []) - {setting.name for setting in suite.settings}
    )
    if args.command == "run" and args.seeds is None:
        parser.error("run: give the --seeds (0-4 for a final comparison, 100 and above for tuning)")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: at least one run at a time")
    if unknown:
        parser.error(f"not in the {args.suite} suite: {', '.join(unknown)}; its tasks: {', '.join(suite.tasks)}; "
                     f"its settings: {', '.join(setting.name for setting in suite.settings)}")  # fmt: skip
    tasks = [task for task in suite.tasks if args.envs is None or task in args.envs]
    settings = [setting for setting in suite.settings if args.settings is None or setting.name in args.settings]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "random":
        path = args.out / "random_scores.json"
        measured = json.loads(path.read_text()) if path.exists() else {}
        measured |= random_scores(tasks, RANDOM_SEED)
        path.write_text(json.dumps(measured, indent=1) + "\n")
    if args.command == "run":
        runs = [Run(env_id, setting, seed) for seed in args.seeds for env_id in tasks for setting in settings]
        if args.pause_at is not None and args.paused_in is None:
            parser.error("--pause-at: give --paused-in too, the folder that keeps the paused runs")
        run_suite(runs, args.out, suite.eval_seed_offset, args.budget, args.jobs, args.ray_address, args.paused_in,
                  args.pause_at)  # fmt: skip
    if args.command == "report":
        # None where not narrowed: a report of the whole grid also writes the README's table
        print(report(suite, args.out, tasks if args.envs else None, args.settings, args.seeds))
    elif args.command == "curves":
        found = counted_found(suite, args.sources or [args.out], tasks, args.settings, args.seeds)
        drawn_from = [str(source) for source in args.sources] if args.sources else None
        print("\n".join(map(str, write_task_curves(suite, found, tasks, args.out / CURVES, drawn_from))))
    else:  # the whole grid's finished runs, not only those of this command
        print(report(suite, args.out))


if __name__ == "__main__":
    main()
