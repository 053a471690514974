"""
rl_zoo3's plot scripts, with ``--png`` to save their figures and a smoothing window that fits short runs.
"""

import argparse
import warnings
from pathlib import Path

from sb3_gpg.zoo.commands import run_script
from sb3_gpg.zoo.registry import ZooError


def plots(argv: list[str]) -> None:
    """
    rl_zoo3's plot scripts: ``plots train ...`` (``plot_train``: training curves of one run), ``plots all ...``
    (``all_plots``: evaluations of several algorithms and envs), ``plots file ...`` (``plot_from_file``).
    They only show their figures; ``--png PATH`` saves them instead (PATH, then PATH_2.png, ... for more figures),
    for machines without a display.

    :param argv: ``train``, ``all`` or ``file``, then that script's arguments
    """
    from rl_zoo3.plots import all_plots, plot_from_file, plot_train

    scripts = {"train": plot_train, "all": all_plots, "file": plot_from_file}
    if not argv or argv[0] not in scripts:
        raise ZooError(f"plots needs one of {', '.join(scripts)}: e.g. plots train --algo gpg --env CartPole-v1 -f logs")
    png_parser = argparse.ArgumentParser(add_help=False)
    png_parser.add_argument("--png", default=None)
    png_args, script_argv = png_parser.parse_known_args(argv[1:])
    if argv[0] == "train":
        script_argv = _window_that_fits(script_argv)
    program = f"sb3_gpg.plots {argv[0]}"
    if png_args.png is None:
        run_script(program, script_argv, scripts[argv[0]])
        return

    import matplotlib

    # Drawn off-screen, the script's plt.show() does nothing and its figures stay open, to be saved here
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "FigureCanvasAgg is non-interactive")
        run_script(program, script_argv, scripts[argv[0]])
    stem = png_args.png.removesuffix(".png")
    saved: list[str] = []
    for number in plt.get_fignums():
        path = f"{stem}.png" if not saved else f"{stem}_{len(saved) + 1}.png"
        plt.figure(number).savefig(path, bbox_inches="tight", dpi=120)
        saved.append(path)
    plt.close("all")
    print("Saved " + ", ".join(saved) if saved else "No figure to save")


def _window_that_fits(argv: list[str]) -> list[str]:
    """
    ``plot_train`` draws a run only if it has at least ``-w`` episodes (100 by default), else silently nothing: with
    the default window, smooth over the shortest run's episodes instead and say so; with an explicit ``-w`` that is
    too long, a one-line error naming ``-w``.

    :param argv: ``plot_train``'s arguments
    :return: ``argv``, with ``-w`` added where the default window is too long
    """
    from stable_baselines3.common.monitor import LoadMonitorResultsError, load_results

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-a", "--algo")
    parser.add_argument("-e", "--env", nargs="+", default=[])
    parser.add_argument("-f", "--exp-folder")
    parser.add_argument("-w", "--episode-window", type=int)
    args, _ = parser.parse_known_args(argv)
    log_path = Path(args.exp_folder or ".") / (args.algo or "")
    if not (args.algo and args.exp_folder and log_path.is_dir()):
        return argv  # plot_train reports missing arguments itself
    episodes = {}
    for folder in sorted(path for path in log_path.iterdir() if path.is_dir() and any(env in path.name for env in args.env)):
        try:
            episodes[folder.name] = len(load_results(str(folder)))
        except LoadMonitorResultsError:
            continue
    if not episodes:
        raise ZooError(f"no run of {args.algo} on {' '.join(args.env)} with a monitor.csv under {log_path}")
    shortest, fewest = min(episodes.items(), key=lambda item: item[1])
    window = args.episode_window or 100
    if fewest >= window:
        return argv
    if args.episode_window is not None:
        raise ZooError(
            f"-w {window} is longer than run {shortest} ({fewest} episodes), which would not be drawn: "
            f"give -w {fewest} or less"
        )
    print(
        f"plots train: run {shortest} has {fewest} episodes, fewer than rl_zoo3's window of 100: "
        f"smoothing over {fewest} (-w sets it)"
    )
    return [*argv, "-w", str(fewest)]
