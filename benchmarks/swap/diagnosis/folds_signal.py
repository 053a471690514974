"""
What 2 and 8 folds make of the same Acrobot-v1 rollouts (pooled_candidate/README.md, *What the 8 folds do to
Acrobot-v1's first goal*): a policy that does not move (learning rate 1e-12: the initial, near-uniform one) collects
the same rollouts (16 envs x 256 steps, the entry's gamma and lambda, no VecNormalize) under the constructor's
estimator with 2 folds and with 8; per rollout, the correlation of the two estimates' advantages, their spreads, and
where an episode found the goal, its samples' mean advantage in standard deviations of the rollout's. Nothing is
learned, so any difference is the estimate's. Writes ``pooled_candidate/folds_acrobot/signal_seed<seed>.md``.

    python benchmarks/swap/diagnosis/folds_signal.py --seed 101
    python benchmarks/swap/diagnosis/folds_signal.py --seed 104
"""

import argparse
from pathlib import Path

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

from sb3_gpg import GPG

HERE = Path(__file__).parent
N_ENVS, N_STEPS, LIMIT = 16, 256, 500


class Advantages(BaseCallback):
    """Keeps each rollout's advantages, its samples in episodes that ended before the time limit, and its rewards."""

    def __init__(self) -> None:
        super().__init__()
        self.rollouts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        buffer = self.model.rollout_buffer
        starts, times = buffer.episode_starts, buffer.episode_times  # type: ignore[attr-defined]
        # a step ends an episode where the next starts one, the last step where its env was done
        ends = np.concatenate([starts[1:].astype(bool), np.asarray(self.locals["dones"], dtype=bool)[None]])
        goal = np.zeros(starts.shape, dtype=bool)
        for env in range(starts.shape[1]):
            begin = 0
            for end in np.flatnonzero(ends[:, env]):
                goal[begin : end + 1, env] = times[end, env] + 1 < LIMIT
                begin = end + 1
        self.rollouts.append((buffer.advantages.copy(), goal, buffer.rewards.copy()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=104)
    parser.add_argument("--rollouts", type=int, default=16)
    args = parser.parse_args()
    th.set_num_threads(1)
    kept = {}
    for folds in (2, 8):
        model = GPG("MlpPolicy", make_vec_env("Acrobot-v1", n_envs=N_ENVS, seed=args.seed), n_steps=N_STEPS,
                    batch_size=N_ENVS * N_STEPS, n_epochs=1, learning_rate=1e-12, gae_lambda=0.94, gamma=0.99,
                    seed=args.seed, device="cpu", baseline_kwargs={"n_folds": folds})  # fmt: skip
        callback = Advantages()
        model.learn(N_ENVS * N_STEPS * args.rollouts, callback=callback)
        kept[folds] = callback.rollouts
    lines = [
        "| rollout | correlation | spread, 2 folds | spread, 8 folds | goal samples | their mean z, 2 folds | 8 folds |",
        "|---|---|---|---|---|---|---|",
    ]
    for index, ((two, goal, rewards), (eight, _, same_rewards)) in enumerate(zip(kept[2], kept[8], strict=True)):
        assert np.array_equal(rewards, same_rewards), "the two fold counts were to see the same rollouts"
        z = [f"{((a - a.mean()) / a.std())[goal].mean():.2f}" if goal.any() else "" for a in (two, eight)]
        lines.append(
            f"| {index} | {np.corrcoef(two.ravel(), eight.ravel())[0, 1]:.3f} | {two.std():.3f} | {eight.std():.3f} | "
            f"{int(goal.sum())} | {z[0]} | {z[1]} |"
        )
    folder = HERE / "pooled_candidate" / "folds_acrobot"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"signal_seed{args.seed}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
