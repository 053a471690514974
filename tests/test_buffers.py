"""
The pure functions the group buffer is glue for (sb3_gpg/estimator/returns.py), against the loop-by-loop reference; that
the buffer stores what ``estimate`` returns; and the SB3 sampling behaviour that GroupRolloutBuffer.get relies on,
pinned so that a change in SB3 fails here.
"""

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer
from stable_baselines3.common.buffers import RolloutBuffer

from sb3_gpg import GroupRolloutBuffer
from sb3_gpg.common import buffers
from sb3_gpg.estimator import estimate
from sb3_gpg.estimator.returns import completed_returns, discounted_returns, env_major, episode_times, trajectory_ids
from tests.reference import ReferenceGPG

N_STEPS, N_ENVS, GAMMA = 23, 4, 0.9


def random_starts(rng: np.random.Generator, n_rollouts: int) -> list[np.ndarray]:
    """Episode-start flags of consecutive rollouts, with episodes that outlast a rollout."""
    return [(rng.random((N_STEPS, N_ENVS)) < 0.15).astype(np.float32) for _ in range(n_rollouts)]


@pytest.mark.parametrize("seed", range(3))
def test_episode_times_carry_across_rollouts_as_the_reference(seed):
    reference = ReferenceGPG(N_ENVS, GAMMA, "time")
    carried = np.zeros(N_ENVS, dtype=np.int64)
    for starts in random_starts(np.random.default_rng(seed), 3):
        times = episode_times(starts, carried)
        np.testing.assert_array_equal(times, reference.episode_times(starts))
        carried = times[-1] + 1


@pytest.mark.parametrize("seed", range(3))
def test_returns_cuts_and_trajectories_as_the_reference(seed):
    rng = np.random.default_rng(seed)
    (starts,) = random_starts(rng, 1)
    rewards = rng.normal(size=(N_STEPS, N_ENVS))
    last_dones = rng.random(N_ENVS) < 0.5
    reference = ReferenceGPG(N_ENVS, GAMMA, "time")
    trajectories = reference.trajectories(starts)

    returns, cut = discounted_returns(rewards, starts, last_dones, GAMMA)
    np.testing.assert_allclose(returns, reference.returns(rewards, trajectories), rtol=1e-12)
    expected_cut = np.zeros((N_STEPS, N_ENVS), dtype=bool)
    for trajectory in reference.cut_trajectories(trajectories, N_STEPS, last_dones):
        for step, env in trajectory:
            expected_cut[step, env] = True
    np.testing.assert_array_equal(cut, expected_cut)

    ids = trajectory_ids(starts)
    expected_ids = np.empty((N_STEPS, N_ENVS), dtype=np.int64)
    for number, trajectory in enumerate(trajectories):
        for step, env in trajectory:
            expected_ids[step, env] = number
    np.testing.assert_array_equal(ids, env_major(expected_ids))

    values = rng.normal(size=N_ENVS)
    completed = completed_returns(returns, cut, values, GAMMA)
    for step in range(N_STEPS):
        for env in range(N_ENVS):
            added = GAMMA ** (N_STEPS - step) * values[env] if expected_cut[step, env] else 0.0
            assert completed[step, env] == pytest.approx(returns[step, env] + added, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("truncated_returns", ["mask", "bootstrap"])
def test_the_buffer_stores_what_estimate_returns(truncated_returns, monkeypatch):
    estimates = []
    monkeypatch.setattr(
        buffers, "estimate", lambda *args, **kwargs: estimates.append(estimate(*args, **kwargs)) or estimates[-1]
    )
    buffer = GroupRolloutBuffer(N_STEPS, spaces.Box(-1, 1, (2,)), spaces.Discrete(3), n_envs=N_ENVS, gamma=GAMMA,
                                binning="spatial_time", truncated_returns=truncated_returns, baseline="linear")  # fmt: skip
    rng = np.random.default_rng(1)
    (starts,) = random_starts(rng, 1)
    for step in range(N_STEPS):
        obs = rng.normal(size=(N_ENVS, 2))
        buffer.add(obs, np.zeros((N_ENVS, 1)), rng.normal(size=N_ENVS), starts[step], th.zeros(N_ENVS), th.zeros(N_ENVS))
    buffer.compute_returns_and_advantage(th.zeros(N_ENVS), np.zeros(N_ENVS, dtype=bool), last_obs=rng.normal(size=(N_ENVS, 2)))
    (result,) = estimates
    assert result.in_loss is not None if truncated_returns == "mask" else result.stats["bootstrapped_share"] > 0
    for stored, returned in [
        (buffer.returns, result.returns),
        (buffer.values, result.baselines),
        (buffer.advantages, result.advantages),
    ]:
        np.testing.assert_array_equal(stored, returned)
    assert buffer.in_loss is result.in_loss and buffer.group_stats is result.stats
    assert buffer.explained_variance == result.explained_variance


@pytest.mark.parametrize("buffer_class", [RolloutBuffer, MaskableRolloutBuffer])
def test_sb3_get_without_a_batch_size_gathers_the_whole_permutation_env_major(buffer_class, monkeypatch, device):
    # GroupRolloutBuffer.get takes one `get()` of SB3's (or sb3-contrib's) parent as the whole rollout in a random
    # order and slices minibatches from it; its in_loss is indexed in env-major order
    buffer = buffer_class(N_STEPS, spaces.Box(-1, 1, (1,)), spaces.Discrete(3), device=device, n_envs=N_ENVS)
    for step in range(N_STEPS):
        obs = np.full((N_ENVS, 1), step, dtype=np.float32) + np.arange(N_ENVS)[:, None] / 10
        extra = {"action_masks": np.ones((N_ENVS, 3))} if buffer_class is MaskableRolloutBuffer else {}
        buffer.add(obs, np.zeros((N_ENVS, 1)), np.zeros(N_ENVS), np.zeros(N_ENVS), th.zeros(N_ENVS), th.zeros(N_ENVS), **extra)
    calls = []
    original = buffer._get_samples
    monkeypatch.setattr(buffer, "_get_samples", lambda inds, *args: calls.append(inds.copy()) or original(inds, *args))
    (samples,) = list(buffer.get())
    (indices,) = calls
    assert sorted(indices.tolist()) == list(range(N_STEPS * N_ENVS))
    expected = np.arange(N_STEPS)[:, None] + np.arange(N_ENVS)[None] / 10
    np.testing.assert_allclose(samples.observations.cpu().numpy().reshape(-1), env_major(expected)[indices], rtol=1e-6)


def test_minibatches_hold_every_sample_in_the_group_once_per_epoch(device):
    buffer = GroupRolloutBuffer(N_STEPS, spaces.Box(-1, 1, (1,)), spaces.Discrete(3), device=device, n_envs=N_ENVS,
                                gamma=GAMMA, truncated_returns="mask")  # fmt: skip
    rng = np.random.default_rng(0)
    (starts,) = random_starts(rng, 1)
    for step in range(N_STEPS):
        obs = (step * N_ENVS + np.arange(N_ENVS, dtype=np.float32))[:, None]  # the sample's number
        buffer.add(obs, np.zeros((N_ENVS, 1)), rng.normal(size=N_ENVS), starts[step], th.zeros(N_ENVS), th.zeros(N_ENVS))
    buffer.compute_returns_and_advantage(th.zeros(N_ENVS), dones=np.zeros(N_ENVS, dtype=bool))
    assert buffer.in_loss is not None and 0 < buffer.in_loss.sum() < N_STEPS * N_ENVS
    numbers = env_major(np.arange(N_STEPS * N_ENVS).reshape(N_STEPS, N_ENVS))
    for _ in range(2):
        batches = [batch.observations.cpu().numpy().reshape(-1) for batch in buffer.get(batch_size=7)]
        assert all(len(batch) == 7 for batch in batches[:-1])
        seen = np.sort(np.concatenate(batches)).astype(np.int64)
        np.testing.assert_array_equal(seen, np.sort(numbers[buffer.in_loss]))
