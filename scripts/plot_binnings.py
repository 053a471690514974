"""
Draw what each of GPG's binnings groups together, for the binning guide of the docs (docs/guide/binning.rst):

    python scripts/plot_binnings.py --output docs/images/binnings.png

A tiny synthetic rollout (3 envs x 30 steps, a one-dimensional observation that drifts upwards in each episode,
episodes of 8 to 16 steps, env 0 already 5 steps into an episode when the rollout starts) is binned by
``sb3_gpg.estimator.binning.bin_keys`` and counted by ``sb3_gpg.estimator.group_baseline.first_visit_bins``, the functions
``GroupRolloutBuffer`` uses. Each panel shows the rollout (x: rollout step, y: observation, one line per trajectory)
with every sample coloured by its bin; the samples that share a bin with the starred one are ringed. The panel's
title gives the number of bins, the mean number of trajectories per bin and the share of samples whose bin holds only
their own trajectory (their advantage is 0 unless ``min_bin_count`` / ``leave_one_out`` send them to a coarser bin):
the ``gpg/n_bins``, ``gpg/returns_per_bin`` and ``gpg/own_trajectory_only_share`` of the logged diagnostics.
"""

import argparse
from pathlib import Path

import numpy as np

from sb3_gpg.estimator.binning import bin_keys, check_bin_size
from sb3_gpg.estimator.group_baseline import first_visit_bins
from sb3_gpg_bench.experiments import pyplot

N_ENVS, N_STEPS = 3, 30
# (binning, bin_size, what the panel says about it)
PANELS = (
    ("universal", 1.0, "one bin: GRPO / REINFORCE++"),
    ("time", 1.0, "episode time t (the default)"),
    ("rollout_step", 1.0, "row of the rollout"),
    ("spatial", 1.0, "Round(obs / 1.0)"),
    ("spatial_time", 1.0, "Round(obs / 1.0) and t"),
    ("state", 1.0, "the observation itself (integer obs)"),
)


def synthetic_rollout(seed: int = 3) -> dict[str, np.ndarray]:
    """
    :return: arrays of shape (N_STEPS, N_ENVS): ``obs`` (continuous), ``episode_time``, ``trajectory`` (a number per
        trajectory, i.e. per run of one env's samples between episode starts) and ``rollout_step``
    """
    rng = np.random.default_rng(seed)
    obs = np.zeros((N_STEPS, N_ENVS))
    episode_time = np.zeros((N_STEPS, N_ENVS), dtype=np.int64)
    trajectory = np.zeros((N_STEPS, N_ENVS), dtype=np.int64)
    next_trajectory = 0
    for env in range(N_ENVS):
        t = 5 if env == 0 else 0  # env 0 is in the middle of an episode when the rollout starts
        length = int(rng.integers(8, 17))
        x = rng.normal(0.5 * t, 0.3)
        for step in range(N_STEPS):
            if t == length:  # the episode ended: a new trajectory starts
                t, length, x = 0, int(rng.integers(8, 17)), rng.normal(0.0, 0.3)
                next_trajectory += 1
            elif step > 0:
                x += rng.normal(0.5, 0.35)
            obs[step, env], episode_time[step, env], trajectory[step, env] = x, t, next_trajectory
            t += 1
        next_trajectory += 1
    rollout_step = np.repeat(np.arange(N_STEPS)[:, None], N_ENVS, axis=1)
    return dict(obs=obs, episode_time=episode_time, trajectory=trajectory, rollout_step=rollout_step)


def panel_keys(rollout: dict[str, np.ndarray], binning: str, bin_size: float) -> np.ndarray:
    """
    :return: the bin key of every sample, shape (N_STEPS, N_ENVS), as GroupRolloutBuffer computes it
    """
    obs = rollout["obs"]
    if binning == "state":  # state binning needs integer observations: here the observation rounded
        obs = np.round(obs)
    keys = bin_keys(
        binning,
        obs.reshape(-1, 1),
        rollout["episode_time"].ravel(),
        rollout["rollout_step"].ravel(),
        check_bin_size(bin_size),
    )
    return keys.reshape(N_STEPS, N_ENVS)


def group_statistics(keys: np.ndarray, trajectory: np.ndarray) -> tuple[int, float, float]:
    """
    :return: number of bins, trajectories (first visits) per bin, share of samples whose bin holds only their own
        trajectory
    """
    # Samples flat by trajectory, each trajectory's samples in time order, as the buffer hands them over
    order = np.lexsort((np.arange(keys.size), trajectory.T.ravel()))
    flat_keys, flat_trajectories = keys.T.ravel()[order], trajectory.T.ravel()[order]
    visits = first_visit_bins(flat_keys, flat_trajectories, np.zeros(keys.size))
    return len(visits.counts), float(visits.counts.mean()), float(np.mean(visits.counts[visits.bins] == 1))


def plot(output: Path) -> None:
    plt = pyplot()
    rollout = synthetic_rollout()
    trajectory = rollout["trajectory"]
    star = (17, 1)  # (rollout step, env) of the sample whose bin is ringed
    figure, axes = plt.subplots(2, 3, figsize=(13, 7.2), sharex=True, sharey=True)
    palette = plt.get_cmap("tab10").colors
    for axis, (binning, bin_size, meaning) in zip(axes.ravel(), PANELS, strict=True):
        keys = panel_keys(rollout, binning, bin_size)
        # Colours by order of first appearance along the rollout, so that neighbouring bins differ
        _, first_seen, dense = np.unique(keys.ravel(), return_index=True, return_inverse=True)
        rank = np.argsort(np.argsort(first_seen))
        colours = np.array([palette[index % len(palette)] for index in rank[dense]])
        obs = np.round(rollout["obs"]) if binning == "state" else rollout["obs"]
        if binning in ("spatial", "spatial_time"):
            for edge in np.arange(np.floor(obs.min()) - 0.5, obs.max() + 1, bin_size):
                axis.axhline(edge, color="0.85", linewidth=0.6, zorder=0)
        for number in np.unique(trajectory):
            steps, envs = np.nonzero(trajectory == number)
            axis.plot(steps, obs[steps, envs], color="0.6", linewidth=0.8, zorder=1)
        steps, envs = np.meshgrid(np.arange(N_STEPS), np.arange(N_ENVS), indexing="ij")
        axis.scatter(steps.ravel(), obs.ravel(), c=colours, s=22, zorder=2, edgecolors="none")
        same = keys == keys[star]
        axis.scatter(steps[same], obs[same], s=90, facecolors="none", edgecolors="black", linewidths=1.0, zorder=3)
        axis.scatter([star[0]], [obs[star]], marker="*", s=220, color="black", zorder=4)
        n_bins, per_bin, alone = group_statistics(keys, trajectory)
        statistics = f"{n_bins} bins, {per_bin:.1f} trajectories per bin, {alone:.0%} alone"
        axis.set_title(f"{binning}: {meaning}\n{statistics}", fontsize=10)
    for axis in axes[1]:
        axis.set_xlabel("rollout step")
    for axis in axes[:, 0]:
        axis.set_ylabel("observation")
    figure.suptitle(
        f"What each binning groups: one rollout of {N_ENVS} envs x {N_STEPS} steps (lines: trajectories; colour: bin; "
        "ringed: the starred sample's bin)",
        fontsize=11,
    )
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=100)
    plt.close(figure)
    print(f"Wrote {output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=Path("docs/images/binnings.png"))
    plot(parser.parse_args().output)


if __name__ == "__main__":
    main()
