"""
Variants of GPG's linear baseline scored on a PPO run's saved rollouts (``baseline_variants.SavedRollouts``; README.md,
"What PPO's critic explains of a walking Ant"): per window of consecutive rollouts, the median held-out explained
variance of each variant, the first ``--warm-up`` scored rollouts of each window left out (its memories start empty;
its first rollout gives the episode times only: ``variants_on_saved``). The
rollouts are not committed (some 100 MB a run); the table is, with the command that made it.

    python benchmarks/swap/diagnosis/saved_variants.py --saved /work/saved/ant101 \
        --variants default='{}' unprojected='{"max_obs_features": 0}' --out baseline_variants/saved_Ant-v5.md
"""

import argparse
import json
from pathlib import Path

import numpy as np

from sb3_gpg_bench.baseline_variants import variants_on_saved
from sb3_gpg_bench.suite import read_training_log

HERE = Path(__file__).parent
CRITIC = "diagnosis/returns_explained_variance"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saved", type=Path, required=True, help="SavedRollouts' folder")
    parser.add_argument("--variants", nargs="+", required=True, help="name='{baseline_kwargs as JSON}'")
    parser.add_argument("--warm-up", type=int, default=8, help="rollouts left out at each window's start")
    parser.add_argument("--out", type=Path, help="a markdown table, beside this script")
    parser.add_argument("--critic", type=Path, help="a run of the same training whose log holds PPO's critic's values")
    parser.add_argument("--gae-lambda", default="auto", help="the swap's lambda: 'auto', or the PPO entry's")
    args = parser.parse_args()
    variants = {name: json.loads(kwargs) for name, kwargs in (item.split("=", 1) for item in args.variants)}
    gae_lambda = args.gae_lambda if args.gae_lambda == "auto" else float(args.gae_lambda)
    series = variants_on_saved(args.saved, variants, gae_lambda)
    steps = np.array([step for step, _ in series["default" if "default" in series else next(iter(series))]])
    # windows: runs of consecutive rollouts
    gaps = np.flatnonzero(np.diff(steps) != np.diff(steps).min()) + 1 if len(steps) > 1 else np.array([], dtype=int)
    windows = np.split(np.arange(len(steps)), gaps)
    header = [f"{steps[w[0]]:,}-{steps[w[-1]]:,}" for w in windows]
    lines = [
        "| variant | baseline_kwargs | " + " | ".join(header) + " |",
        "|---|---|" + "---|" * len(windows),
    ]
    medians = {}
    if args.critic:
        critic = dict((int(step), value) for step, value in read_training_log(args.critic)[CRITIC])
        # (a long run's log keeps some of its rollouts only, ``suite.MAX_LOGGED_POINTS``: the critic's median is over those)
        series = {"PPO's critic": [(step, critic.get(step, np.nan)) for step, _ in series["default"]], **series}
    for name, values in series.items():
        explained = np.array([value for _, value in values])
        medians[name] = [float(np.nanmedian(explained[w[args.warm_up :]])) for w in windows]
        kwargs = json.dumps(variants.get(name, "(the default's features, in sample)" if name == "in_sample" else ""))
        lines.append(f"| {name} | `{kwargs}` | " + " | ".join(f"{value:.2f}" for value in medians[name]) + " |")
    if args.critic:
        lines += ["", "Share of the gap between the default and PPO's critic that each variant closes, per window:", ""]
        gaps = np.array(medians["PPO's critic"]) - np.array(medians["default"])
        for name in variants:
            if name != "default":
                shares = (np.array(medians[name]) - np.array(medians["default"])) / gaps
                lines.append(f"- {name}: " + ", ".join(f"{share:.2f}" for share in shares))
    quoted = [f"{name}='{kwargs}'" for name, kwargs in (item.split("=", 1) for item in args.variants)]
    options = f"--saved {args.saved} --warm-up {args.warm_up} --gae-lambda {args.gae_lambda}"
    options += (f" --critic {args.critic}" if args.critic else "") + (f" --out {args.out}" if args.out else "")
    command = f"python benchmarks/swap/diagnosis/saved_variants.py {options} --variants {' '.join(quoted)}"
    title = f"Median held-out explained variance per window (the first {args.warm_up} scored rollouts of each left out)."
    text = "\n".join([title, "", *lines, "", f"    {command}", ""])
    print(text)
    if args.out:
        (HERE / args.out).write_text(text)


if __name__ == "__main__":
    main()
