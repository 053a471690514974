"""
Train GPG on a Gymnasium task with a progress bar, then evaluate it: ``python -m sb3_gpg [--env CartPole-v1] ...``.

The arguments are parsed before torch, SB3 and GPG are imported (seconds on a busy machine), so that ``--help`` and a
bad option answer at once.
"""

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

from sb3_gpg import __version__

# The options' choices: copies of sb3_gpg.common.env_util.VEC_ENVS, sb3_gpg.estimator.binning.BINNINGS,
# sb3_gpg.estimator.fitted_baselines.BASELINES and sb3_gpg.estimator.options.AUTO, whose modules import torch or SB3
# (tests/test_main_job.py checks that they agree)
VEC_ENVS = ("dummy", "subproc", "envpool")
BINNINGS = ("time", "rollout_step", "universal", "spatial", "spatial_time", "state")
BASELINES = ("bins", "linear", "knn")
AUTO = "auto"


def _at_least(minimum: int) -> Callable[[str], int]:
    """
    :param minimum: the smallest value the option takes
    :return: argparse's ``type`` for an integer option, whose error names the bound
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def main(argv: list[str] | None = None) -> float:
    """
    :param argv: command-line arguments (``sys.argv[1:]`` when None)
    :return: the mean evaluation return
    """
    # Plain text (the module docstring is reStructuredText), and every option's default
    parser = argparse.ArgumentParser(
        prog="python -m sb3_gpg",
        description="Train GPG on a Gymnasium task with a progress bar, then evaluate it.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--env", default="CartPole-v1", help="Gymnasium environment id")
    parser.add_argument("--timesteps", type=_at_least(1), default=50_000, help="environment steps to train for")
    parser.add_argument(
        "--n-envs", type=_at_least(1), default=1, help="parallel environments: the group is n_envs * n_steps samples"
    )
    parser.add_argument(
        "--baseline",
        default=AUTO,
        choices=(AUTO, *BASELINES),
        help="the group baseline: the bins' mean return (bins, the paper's), or a value fitted to the rollout's own "
        "returns (linear, knn); auto: linear on vector observations with time binning, the bins elsewhere",
    )
    parser.add_argument("--binning", default="time", choices=BINNINGS, help="which samples share a bins baseline")
    parser.add_argument("--seed", type=_at_least(0), default=0, help="seed of GPG and of the training envs")
    parser.add_argument(
        "--vec-env",
        default="dummy",
        choices=VEC_ENVS,
        help="how the training envs are stepped: in this process, in subprocesses, or by EnvPool in C++ "
        '(pip install "sb3-gpg[envpool]"); evaluation always uses the Gymnasium env',
    )
    parser.add_argument("--eval-episodes", type=_at_least(1), default=20, help="episodes of the final evaluation")
    parser.add_argument("--save", metavar="PATH", help="save the trained model to PATH.zip")
    parser.add_argument(
        "--num-threads",
        type=_at_least(-1),
        default=1,
        help="torch threads: a small MLP on a CPU trains fastest on one, and more only contend, above all on a busy "
        "machine (-1 or 0: torch's default, one per core; as sb3-gpg train's --num-threads)",
    )
    args = parser.parse_args(argv)
    import torch as th
    from stable_baselines3.common.evaluation import evaluate_policy

    from sb3_gpg import GPG
    from sb3_gpg.common.env_util import check_env_id, make_vec_env_on

    try:
        check_env_id(args.env)
    except ValueError as error:  # one line and argparse's exit status, as for a bad option, rather than a traceback
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if args.save:
        # SB3 makes the folders when it saves: found unwritable only then, the trained model would be lost
        existing = Path(args.save).absolute().parent
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir() or not os.access(existing, os.W_OK):
            parser.exit(2, f"{parser.prog}: error: --save {args.save}: {existing} is not a folder this user can write to\n")
    if args.num_threads > 0:
        th.set_num_threads(args.num_threads)

    print(
        f"sb3-gpg {__version__}: training GPG on {args.env}, {args.timesteps} steps, {args.n_envs} env(s) "
        f"({args.vec_env}), seed {args.seed}"
    )
    env = make_vec_env_on(args.env, args.n_envs, args.seed, args.vec_env)
    try:
        model = GPG("MlpPolicy", env, baseline=args.baseline, binning=args.binning, seed=args.seed, device="cpu")
    # an option the env's spaces do not take (a fitted baseline on Discrete observations), or a space SB3 does not
    except (ValueError, NotImplementedError) as error:
        env.close()
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    start = time.perf_counter()
    model.learn(args.timesteps, progress_bar=True)
    elapsed = time.perf_counter() - start
    if args.save:
        model.save(args.save)
        print(f"Saved to {args.save}.zip")

    eval_env = make_vec_env_on(args.env, 1, args.seed + 10_000)
    mean_return, std_return = evaluate_policy(model, eval_env, n_eval_episodes=args.eval_episodes, deterministic=True)
    print(
        f"Trained in {elapsed:.0f} s. Evaluation over {args.eval_episodes} episodes (deterministic): "
        f"mean return {mean_return:.1f} +- {std_return:.1f}"
    )
    # SB3's evaluate_policy also types the return_episode_rewards=True lists
    return float(mean_return)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
