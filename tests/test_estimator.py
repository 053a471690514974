"""
``estimate``'s returns, baselines and advantages against the loop-by-loop reference, with every binning and option; the
group buffers' against hand-computed cases.
"""

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from sb3_gpg import GroupDictRolloutBuffer, GroupRolloutBuffer
from sb3_gpg.estimator.binning import columns_to_keys
from sb3_gpg.estimator.group_baseline import first_visit_bins, group_baselines
from tests.helpers import RandomRollouts, RolloutEstimator, assert_buffer_matches, assert_estimate_matches, fill_buffer
from tests.reference import ReferenceGPG


def test_estimate_matches_reference_over_consecutive_rollouts(group_case):
    estimator = group_case.estimator()
    for rollout in group_case.consecutive(3):
        assert_estimate_matches(estimator(*rollout), group_case.reference.advantages(*rollout))


def test_buffer_matches_reference_over_consecutive_rollouts(group_case):
    buffer = GroupRolloutBuffer(
        group_case.n_steps, group_case.observation_space, spaces.Discrete(2), "cpu", **group_case.buffer_kwargs
    )
    for rollout in group_case.consecutive(3):
        in_group = group_case.check(buffer, rollout)
        expected_mask = None if in_group.all() else in_group.T.reshape(-1)
        np.testing.assert_array_equal(buffer.in_loss, expected_mask)


@pytest.mark.parametrize("leave_one_out", [False, True])
@pytest.mark.parametrize("min_bin_count", [1, 2])
def test_state_binning_matches_reference(leave_one_out, min_bin_count):
    rollouts = RandomRollouts(seed=7)
    options = dict(gamma=0.9, n_envs=rollouts.n_envs, leave_one_out=leave_one_out, min_bin_count=min_bin_count)
    rollout = rollouts.one(discrete=True)
    result = RolloutEstimator(binning="state", **options)(rollout.observations.astype(np.int64), *rollout[1:])
    assert_estimate_matches(result, ReferenceGPG(binning="state", **options).advantages(*rollout))


@pytest.mark.parametrize("options", [{}, dict(truncated_returns="bootstrap", advantage_scale="bin_std")])
def test_dict_buffer_bins_on_all_keys(options):
    rollouts = RandomRollouts(seed=3)
    space = spaces.Dict({"a": spaces.Box(-10, 10, (2,), np.float32), "b": spaces.Box(-10, 10, (1,), np.float32)})
    options = dict(gamma=0.9, n_envs=rollouts.n_envs, binning="spatial_time", bin_size=0.5, **options)
    buffer = GroupDictRolloutBuffer(rollouts.n_steps, space, spaces.Discrete(2), "cpu", **options)
    rollout = rollouts.one()

    def as_dict(obs):
        return {"a": obs[..., :2], "b": obs[..., 2:]}

    fill_buffer(buffer, as_dict(rollout.observations), rollout.rewards, rollout.episode_starts)
    assert_buffer_matches(buffer, ReferenceGPG(**options), rollout, as_dict)


# Hand-computed: gamma = 1, rewards all 1; env 0 runs one 3-step episode (done at the end);
# env 1 runs a 2-step episode then starts another, cut by the rollout's end.
# Returns: env 0 [3, 2, 1] at times [0, 1, 2]; env 1 [2, 1 | 1] at times [0, 1 | 0].
HAND_STARTS = np.array([[1, 1], [0, 0], [0, 1]], dtype=np.float32)
HAND_DONES = np.array([True, False])


def hand_buffer(**kwargs) -> GroupRolloutBuffer:
    """
    :return: a buffer of the group options ``kwargs`` holding the hand-computed rollout, its advantages computed
    """
    buffer = GroupRolloutBuffer(
        3, spaces.Box(-1, 1, (1,), np.float32), spaces.Discrete(2), "cpu", gamma=1.0, n_envs=2, **kwargs
    )
    fill_buffer(buffer, np.zeros((3, 2, 1), np.float32), np.ones((3, 2), np.float32), HAND_STARTS)
    buffer.compute_returns_and_advantage(th.zeros(2), HAND_DONES)
    return buffer


@pytest.mark.parametrize(
    "kwargs, advantages",
    [
        # time bins: t=0 {3, 2, 1} mean 2; t=1 {2, 1} mean 1.5; t=2 {1}
        (dict(binning="time"), [[1, 0], [0.5, -0.5], [0, -1]]),
        # one bin, first visits only: {3, 2, 1} mean 2 (not the mean of all six returns)
        (dict(binning="universal"), [[1, 0], [0, -1], [-1, -1]]),
        # the paper's rollout_step: rows 0 {3, 2}, 1 {2, 1}, 2 {1, 1}
        (dict(binning="rollout_step"), [[0.5, -0.5], [0.5, -0.5], [0, 0]]),
        # leave-one-out: t=2 has no other trajectory, falls back to universal's others {2, 1}
        (dict(binning="time", leave_one_out=True), [[1.5, 0], [1, -1], [-0.5, -1.5]]),
        # min_bin_count=3: only t=0 holds 3 returns; t=1 and t=2 fall back to universal (mean 2)
        (dict(binning="time", min_bin_count=3), [[1, 0], [0, -1], [-1, -1]]),
        # mask: env 1's last trajectory is cut, so it leaves the bins: t=0 {3, 2}, t=1 {2, 1}, t=2 {1}
        (dict(binning="time", truncated_returns="mask"), [[0.5, -0.5], [0.5, -0.5], [0, 0]]),
    ],
)
def test_hand_computed(kwargs, advantages):
    buffer = hand_buffer(**kwargs)
    np.testing.assert_allclose(buffer.returns, [[3, 2], [2, 1], [1, 1]])
    np.testing.assert_allclose(buffer.advantages, advantages)
    np.testing.assert_allclose(buffer.values, buffer.returns - buffer.advantages)


def test_hand_computed_bootstrap():
    # env 1's last trajectory (t=0 at row 2) is cut; the next state has t=1, where the complete returns are {2, 1}:
    # its return 1 becomes 1 + 1.5. Then t=0 {3, 2, 2.5} mean 2.5; t=1 {2, 1} mean 1.5; t=2 {1}
    buffer = hand_buffer(binning="time", truncated_returns="bootstrap")
    np.testing.assert_allclose(buffer.returns, [[3, 2], [2, 1], [1, 2.5]])
    np.testing.assert_allclose(buffer.advantages, [[0.5, -0.5], [0.5, -0.5], [0, 0]])
    assert buffer.group_stats["bootstrapped_share"] == pytest.approx(1 / 6)
    assert buffer.group_stats["bootstrap_mean"] == pytest.approx(1.5)
    # min_bin_count=3: t=1 holds two complete returns, universal's first visits {3, 2} two as well: nothing to add
    buffer = hand_buffer(binning="time", truncated_returns="bootstrap", min_bin_count=3)
    np.testing.assert_allclose(buffer.returns, [[3, 2], [2, 1], [1, 1]])
    assert buffer.group_stats["bootstrapped_share"] == 0.0


def test_hand_computed_bin_std():
    # t=0 {3, 2, 1}: std sqrt(2/3); t=1 {2, 1}: std 0.5; t=2 {1} has one return: universal's {3, 2, 1}, sqrt(2/3)
    buffer = hand_buffer(binning="time", advantage_scale="bin_std")
    std = np.sqrt(2 / 3)
    np.testing.assert_allclose(buffer.advantages, [[1 / std, 0], [1, -1], [0, -1 / std]])
    np.testing.assert_allclose(buffer.values, [[2, 2], [1.5, 1.5], [1, 2]])
    assert buffer.group_stats["scale_fallback_share"] == pytest.approx(1 / 6)


def test_bootstrap_of_observation_bins_needs_the_last_observation():
    with pytest.raises(ValueError, match="last_obs"):
        hand_buffer(binning="spatial", truncated_returns="bootstrap")


def test_leave_one_out_with_a_single_trajectory_gives_zero_advantage():
    buffer = GroupRolloutBuffer(
        4, spaces.Box(-1, 1, (1,), np.float32), spaces.Discrete(2), "cpu", n_envs=1, leave_one_out=True
    )
    fill_buffer(
        buffer, np.zeros((4, 1, 1), np.float32), np.ones((4, 1), np.float32), np.array([[1], [0], [0], [0]], np.float32)
    )
    buffer.compute_returns_and_advantage(th.zeros(1), np.array([True]))
    np.testing.assert_array_equal(buffer.advantages, 0.0)
    assert buffer.group_stats["no_baseline_share"] == 1.0


def test_episode_time_carries_across_rollouts():
    buffer = GroupRolloutBuffer(3, spaces.Box(-1, 1, (1,), np.float32), spaces.Discrete(2), "cpu", n_envs=2)
    fill_buffer(buffer, np.zeros((3, 2, 1), np.float32), np.ones((3, 2), np.float32), HAND_STARTS)
    buffer.compute_returns_and_advantage(th.zeros(2), np.array([False, False]))
    np.testing.assert_array_equal(buffer.episode_times, [[0, 0], [1, 1], [2, 0]])
    # Next rollout: env 0's episode ended (starts anew), env 1's goes on counting
    fill_buffer(
        buffer, np.zeros((3, 2, 1), np.float32), np.ones((3, 2), np.float32), np.array([[1, 0], [0, 0], [0, 0]], np.float32)
    )
    buffer.compute_returns_and_advantage(th.zeros(2), np.array([False, False]))
    np.testing.assert_array_equal(buffer.episode_times, [[0, 1], [1, 2], [2, 3]])


def test_episode_time_carries_across_a_rollout_stopped_early():
    buffer = GroupRolloutBuffer(3, spaces.Box(-1, 1, (1,), np.float32), spaces.Discrete(2), "cpu", n_envs=2)
    # A callback stops the rollout after 2 of 3 steps: the next rollout (reset first) goes on counting from there
    fill_buffer(buffer, np.zeros((2, 2, 1), np.float32), np.ones((2, 2), np.float32), np.array([[1, 1], [0, 1]], np.float32))
    fill_buffer(
        buffer, np.zeros((3, 2, 1), np.float32), np.ones((3, 2), np.float32), np.array([[0, 1], [0, 0], [0, 0]], np.float32)
    )
    buffer.compute_returns_and_advantage(th.zeros(2), np.array([False, False]))
    np.testing.assert_array_equal(buffer.episode_times, [[2, 0], [3, 1], [4, 2]])


def test_diagnostics():
    buffer = hand_buffer(binning="time")
    stats = buffer.group_stats
    assert stats["n_bins"] == 3
    assert stats["returns_per_bin"] == pytest.approx(6 / 3)  # 3 + 2 + 1 first-visit returns over 3 bins
    assert stats["own_trajectory_only_share"] == pytest.approx(1 / 6)  # env 0 at t=2
    assert stats["n_trajectories"] == 3
    assert stats["truncated_share"] == pytest.approx(1 / 6)  # env 1's last sample
    assert stats["fallback_share"] == 0.0
    assert stats["zero_advantage_share"] == pytest.approx(2 / 6)  # env 1 at t=0 (its return is the mean), env 0 at t=2


@pytest.mark.parametrize(
    "gamma, gae_lambda, truncated_returns, end_rows, end_sample_share",
    [
        (1.0, 1.0, "keep", 3, 1.0),  # no discount: the horizon is endless, every row counts
        (0.5, 1.0, "keep", 2, 4 / 6),  # 1 / (1 - 0.5) = 2 rows
        (0.9, 0.5, "keep", 2, 4 / 6),  # 1 / (1 - 0.45) = 1.8, rounded to 2 rows: lambda shortens the horizon
        (0.5, 1.0, "mask", 2, 3 / 5),  # env 1's cut sample leaves the loss, and the shares with it
    ],
)
def test_end_shares_weigh_the_last_effective_horizon_of_rows(gamma, gae_lambda, truncated_returns, end_rows, end_sample_share):
    buffer = GroupRolloutBuffer(
        3,
        spaces.Box(-1, 1, (1,), np.float32),
        spaces.Discrete(2),
        "cpu",
        gamma=gamma,
        gae_lambda=gae_lambda,
        n_envs=2,
        binning="time",
        truncated_returns=truncated_returns,
    )
    fill_buffer(buffer, np.zeros((3, 2, 1), np.float32), np.arange(1, 7, dtype=np.float32).reshape(3, 2), HAND_STARTS)
    buffer.compute_returns_and_advantage(th.zeros(2), HAND_DONES)
    in_loss = np.ones((3, 2), dtype=bool)
    if truncated_returns == "mask":
        in_loss[2, 1] = False
    total = at_end = 0.0
    for env in range(2):
        for row in range(3):
            if in_loss[row, env]:
                square = float(buffer.advantages[row, env]) ** 2
                total += square
                at_end += square if row >= 3 - end_rows else 0.0
    assert total > 0
    assert buffer.group_stats["end_advantage_share"] == pytest.approx(at_end / total)
    assert buffer.group_stats["end_sample_share"] == pytest.approx(end_sample_share)


def test_zero_advantage_share_counts_bins_of_equal_returns():
    # A constant reward and no episode end: every return at one episode time is the same, so no advantage is informed,
    # although no sample's bin holds its own trajectory alone (the no-signal warning's measure)
    buffer = GroupRolloutBuffer(4, spaces.Box(-1, 1, (1,), np.float32), spaces.Discrete(2), "cpu", gamma=0.9, n_envs=3)
    starts = np.zeros((4, 3), np.float32)
    starts[0] = 1  # three episodes that start together and outlast the rollout
    fill_buffer(buffer, np.zeros((4, 3, 1), np.float32), -np.ones((4, 3), np.float32), starts)
    buffer.compute_returns_and_advantage(th.zeros(3), np.zeros(3, dtype=bool))
    assert buffer.group_stats["zero_advantage_share"] == 1.0
    assert buffer.group_stats["own_baseline_share"] == 0.0
    # Under "mask" the share is over the samples left in the group
    masked = hand_buffer(binning="time", truncated_returns="mask")
    assert masked.group_stats["zero_advantage_share"] == pytest.approx(1 / 5)  # env 0 at t=2; env 1's cut sample is out


@pytest.mark.parametrize(
    "rows",
    [
        np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 2.0]]),  # packed into one integer per row
        np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 2.0]]) * 1e300,  # ranges too wide: sorted
        np.array([[0.0, 1.5], [-0.0, 1.5], [1.0, 0.5], [0.0, 1.5], [1.0, 2.5]]),  # not integers: sorted
    ],
)
def test_columns_to_keys_groups_equal_samples_and_signed_zeros(rows):
    keys = columns_to_keys(rows.T)
    assert keys[0] == keys[1] == keys[3]
    assert len({keys[0], keys[2], keys[4]}) == 3


def test_group_baselines_of_an_empty_group():
    baselines, scales, stats, held_out = group_baselines(
        [np.zeros(0, np.int64)], np.zeros(0, np.int64), np.zeros(0), held_out=True
    )
    assert baselines.shape == scales.shape == held_out.shape == (0,) and stats["n_bins"] == 0


@pytest.mark.parametrize("min_bin_count", [1, 2, 4])
@pytest.mark.parametrize("scale_by_bin_std", [False, True])
def test_held_out_baselines_are_those_of_leave_one_out_in_one_pass(min_bin_count, scale_by_bin_std):
    # One pass over the levels gives the baselines and, bit for bit, the leave-one-out ones of a second pass
    rng = np.random.default_rng(min_bin_count)
    trajectory_ids = np.sort(rng.integers(0, 12, size=300))
    levels = [rng.integers(0, 40, size=300), rng.integers(0, 6, size=300), np.zeros(300, dtype=np.int64)]
    returns = rng.normal(size=300)
    both = group_baselines(iter(levels), trajectory_ids, returns, False, min_bin_count, scale_by_bin_std, held_out=True)
    alone = group_baselines(iter(levels), trajectory_ids, returns, False, min_bin_count, scale_by_bin_std)
    left_out = group_baselines(iter(levels), trajectory_ids, returns, True, min_bin_count)
    np.testing.assert_array_equal(both.baselines, alone.baselines)
    np.testing.assert_array_equal(both.scales, alone.scales)
    assert both.stats == alone.stats and alone.held_out is None
    np.testing.assert_array_equal(both.held_out, left_out.baselines)
    assert (both.held_out != both.baselines).any()
    loo = group_baselines(iter(levels), trajectory_ids, returns, True, min_bin_count, held_out=True)
    assert loo.held_out is loo.baselines


def test_first_visit_bins_do_not_depend_on_the_keys_width():
    # Keys too wide to share an int64 with the sample index take another path: same bins, counts, sums
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 7, size=200)
    trajectory_ids = np.sort(rng.integers(0, 20, size=200))
    returns = rng.normal(size=200)
    narrow = first_visit_bins(keys, trajectory_ids, returns)
    wide = first_visit_bins(keys * 2**59 - 2**62, trajectory_ids, returns)
    for narrow_field, wide_field in zip(narrow, wide, strict=True):
        np.testing.assert_array_equal(narrow_field, wide_field)
    assert narrow.counts.sum() == len(set(zip(keys.tolist(), trajectory_ids.tolist(), strict=True)))
