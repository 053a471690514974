"""
What an Optuna study of ``sb3-gpg train -optimize`` found, from its storage (a journal file, ``*.log`` or ``*.log.gz``,
or an RDB URL):
how many trials finished or were pruned, the best trials with their GPG settings, each parameter's importance
(PED-ANOVA, which needs no scikit-learn) and a plot of the scores against the trial number and the searched horizon
(gamma and n_steps). Written as ``<out>/<study>.md`` and ``<out>/<study>.png``::

    python scripts/study_summary.py --storage benchmarks/mujoco_search/halfcheetah_v5.log.gz \\
        --study-name halfcheetah_v5_300k --out benchmarks/mujoco_search

A trial to confirm at the full budget becomes a ``zoo_tuning`` setting of ``sb3_gpg_bench.suites`` read from the
study's journal by its number (``trial_params``).
"""

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from sb3_gpg.zoo.registry import convert_gpg_params
from sb3_gpg_bench.experiments import pyplot
from sb3_gpg_bench.journal import journal_storage
from sb3_gpg_bench.suites import study_text

# The settings shown for each of the best trials, in this order
SHOWN = ("n_envs", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "learning_rate", "baseline",
         "truncated_returns", "normalize", "policy_kwargs")  # fmt: skip


def load(storage: str, study_name: str) -> optuna.Study:
    """
    :param storage: a journal file (``*.log``, or ``*.log.gz`` as committed) or an RDB URL, as given to ``-optimize --storage``
    :param study_name: the study's name (``--study-name``)
    :return: the study
    """
    backend: Any = storage
    if storage.endswith((".log", ".log.gz")):
        backend = journal_storage(storage)
    return optuna.load_study(study_name=study_name, storage=backend)


def settings(trial: optuna.trial.FrozenTrial) -> str:
    """:return: the trial's GPG settings (as ``convert_gpg_params`` gives them) in one line"""
    converted = convert_gpg_params(trial.params)
    shown = []
    for name in SHOWN:
        if name not in converted:
            continue
        shown.append(f"{name}={study_text(converted[name])}")
    return ", ".join(shown)


def summary(study: optuna.Study, n_best: int = 5) -> str:
    """
    :param n_best: how many of the best finished trials to list
    :return: the Markdown summary
    """
    states = [trial.state for trial in study.trials]
    done = sorted((t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE), key=lambda t: -t.value)
    counts = ", ".join(f"{sum(state == kind for state in states)} {kind.name.lower()}" for kind in sorted(set(states)))
    lines = [f"# {study.study_name}", "", f"{len(states)} trials: {counts}.", "", f"The {min(n_best, len(done))} best:", ""]
    lines += ["| trial | score | settings |", "|---|---|---|"]
    lines += [f"| {trial.number} | {trial.value:.1f} | {settings(trial)} |" for trial in done[:n_best]]
    if len(done) > 1:
        importances = optuna.importance.get_param_importances(study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())
        lines += [
            "",
            "Parameter importances (PED-ANOVA over the finished trials):",
            "",
            "| parameter | importance |",
            "|---|---|",
        ]
        lines += [f"| {name} | {value:.3f} |" for name, value in importances.items()]
    return "\n".join(lines) + "\n"


def plot(study: optuna.Study, path: Path) -> None:
    """The finished trials' scores against their number, gamma and n_steps (pruned trials left out)."""
    done = [trial for trial in study.trials if trial.state == optuna.trial.TrialState.COMPLETE]
    plt = pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    scores = np.array([trial.value for trial in done])
    converted = [convert_gpg_params(trial.params) for trial in done]
    axes[0].plot([trial.number for trial in done], scores, "o", alpha=0.6)
    axes[0].plot([trial.number for trial in done], np.maximum.accumulate(scores), "-", color="black", label="best so far")
    window = done[0].user_attrs.get("score_window", 1) if done else 1
    axes[0].set(xlabel="trial", ylabel="final evaluation" if window == 1 else f"mean of the last {window} evaluations")
    axes[0].legend()
    axes[1].semilogx([1 - hyperparams["gamma"] for hyperparams in converted], scores, "o", alpha=0.6)
    axes[1].set(xlabel="1 - gamma")
    axes[2].semilogx([hyperparams["n_steps"] for hyperparams in converted], scores, "o", alpha=0.6)
    axes[2].set(xlabel="n_steps (per env)")
    figure.suptitle(f"{study.study_name}: {len(done)} finished trials")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", required=True, help="the study's journal file (*.log or *.log.gz) or RDB URL")
    parser.add_argument("--study-name", required=True)
    parser.add_argument("--best", type=int, default=5, help="how many of the best trials to list")
    parser.add_argument("--out", type=Path, required=True, help="folder for <study>.md and <study>.png")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = load(args.storage, args.study_name)
    args.out.mkdir(parents=True, exist_ok=True)
    text = summary(study, args.best)
    (args.out / f"{args.study_name}.md").write_text(text)
    plot(study, args.out / f"{args.study_name}.png")
    print(text)


if __name__ == "__main__":
    main()
