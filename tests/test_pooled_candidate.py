"""
The linear baseline's pooled candidate (``baseline_kwargs["pooled_memory"]``): each fold chooses, with its size, between
the level given and one level over the last ``pooled_memory`` rollouts, uncapped, on held-out halves of its training
trajectories, or (``pooled_choice="previous"``) takes the candidate whose folds predicted the previous rollout best.
Checked against the loop-by-loop reference, and its promises by perturbing the input: a rollout whose returns have
moved keeps a level of its own (no lag; one rollout later under "previous"), and no trajectory's returns enter its own
baselines through the choice.
"""

import numpy as np
import pytest

from sb3_gpg.common.buffers import GroupRolloutBuffer
from tests.helpers import RolloutEstimator, assert_estimate_matches
from tests.reference import ReferenceGPG
from tests.test_state_aware import GAMMA, N_ENVS, assert_filled_as_the_reference, fill, make_buffer, rollouts

POOLED_CASES = [
    dict(memory=2, recency=0.7, pooled_memory=4, target="returns"),
    dict(memory=2, recency=0.7, pooled_memory=4, pooled_recency=0.6, target="lambda_returns"),
    dict(memory=1, pooled_memory=3, level="trend", target="returns"),
    dict(memory=2, pooled_memory=4, level="pooled", target="returns"),
    dict(memory=2, pooled_memory=3, choose_size=False, target="returns"),
    # folds of a trajectory or two, each choosing on halves of the others'
    dict(memory=2, pooled_memory=4, n_folds=8, target="lambda_returns"),
    dict(memory=2, pooled_memory=4, pooled_choice="previous", target="returns"),
    dict(memory=1, pooled_memory=3, pooled_choice="previous", n_folds=4, target="lambda_returns"),
]


@pytest.mark.parametrize("options", POOLED_CASES, ids=str)
@pytest.mark.parametrize("truncated_returns", ["keep", "bootstrap"])
def test_the_pooled_candidate_matches_the_reference(options, truncated_returns):
    kwargs = dict(binning="time", baseline="linear", truncated_returns=truncated_returns)
    option_kwargs = dict(fourier=8, fourier_seed=3, **options)
    buffer = make_buffer(GroupRolloutBuffer, 0.8, **kwargs, baseline_kwargs=option_kwargs)
    reference = ReferenceGPG(N_ENVS, GAMMA, gae_lambda=0.8, **kwargs, baseline_kwargs=option_kwargs)
    # guard: the candidate is taken by some folds and not by others, and changes the baselines
    off = {name: value for name, value in option_kwargs.items() if name not in ("pooled_recency", "pooled_choice")}
    without = make_buffer(GroupRolloutBuffer, 0.8, **kwargs, baseline_kwargs=dict(off, pooled_memory=0))
    shares, changed = [], []
    for rollout in rollouts(seed=11, n_rollouts=8):
        assert_filled_as_the_reference(buffer, reference, rollout)
        fill(without, *rollout)
        if reference.pooled_choices:  # (none before the memory has a rollout)
            assert buffer.group_stats["pooled_share"] == pytest.approx(np.mean(reference.pooled_choices))
            shares.append(buffer.group_stats["pooled_share"])
        else:
            assert "pooled_share" not in buffer.group_stats
        changed.append(bool(np.abs(without.values - buffer.values).max() > 1e-3))
    assert len(buffer.baseline_memory) == max(options["memory"], options["pooled_memory"])
    assert max(shares) > 0 and min(shares) < 1 and any(changed), (shares, changed)


def drifting_rollouts(seed: int, levels: list[float], n_envs: int = 8, n_steps: int = 16):
    """
    Rollouts of a reward that is the observation's first value plus the rollout's level, episodes of random length,
    each rollout starting where the last ended.
    """
    rng = np.random.default_rng(seed)
    last_dones = np.ones(n_envs, dtype=bool)
    for level in levels:
        observations = rng.normal(size=(n_steps, n_envs, 3)).astype(np.float32)
        rewards = (observations[..., 0] + level + 0.5 * rng.normal(size=(n_steps, n_envs))).astype(np.float32)
        starts = (rng.random((n_steps, n_envs)) < 0.15).astype(np.float32)
        starts[0] = last_dones
        last_dones = rng.random(n_envs) < 0.15
        yield observations, rewards, starts, last_dones, rng.normal(size=(n_envs, 3)).astype(np.float32)


def test_a_rollout_whose_returns_moved_keeps_a_level_of_its_own():
    # Six rollouts at one level, then one whose every reward is 3 higher: the pooled level would lag it, so every fold
    # keeps the level given, and its baselines are those of the option off (the cut returns kept: completed, they would
    # start from the last rollout's fit, which the candidate made)
    levels = [0.0] * 6 + [3.0]
    options = dict(baseline="linear", binning="time", truncated_returns="keep")
    kwargs = dict(fourier=8, fourier_seed=0, target="returns")
    pooled = RolloutEstimator(8, 0.9, **options, baseline_kwargs=dict(kwargs, pooled_memory=8))
    alone = RolloutEstimator(8, 0.9, **options, baseline_kwargs=kwargs)
    always_pooled = RolloutEstimator(8, 0.9, **options, baseline_kwargs=dict(kwargs, level="pooled", memory_weight=None))
    for number, rollout in enumerate(drifting_rollouts(seed=0, levels=levels)):
        result, off, lagging = pooled(*rollout), alone(*rollout), always_pooled(*rollout)
        if number == 1:
            before = result.stats["pooled_share"]
    # guard: at one level the candidate is taken
    assert before > 0
    assert result.stats["pooled_share"] == 0.0
    np.testing.assert_array_equal(result.baselines, off.baselines)
    # and a level pooled over the memory would have lagged it
    lag = np.mean(lagging.returns - lagging.baselines)
    assert lag > 2 * abs(np.mean(result.returns - result.baselines)) and lag > 1.0, lag


@pytest.mark.parametrize("pooled_choice", ["halves", "previous"])
def test_no_trajectory_returns_enter_its_own_baseline_through_the_choice(pooled_choice):
    # After three rollouts alike, one trajectory's rewards scaled in the fourth: its own baselines must not move,
    # although the other folds' choices may
    options = dict(baseline="linear", binning="time", truncated_returns="bootstrap")
    baseline_kwargs = dict(
        fourier=8, fourier_seed=0, target="returns", pooled_memory=4, n_folds=4, pooled_choice=pooled_choice
    )
    results = []
    for scale in (1.0, 5.0):
        estimator = RolloutEstimator(8, 0.9, **options, baseline_kwargs=baseline_kwargs)
        for number, rollout in enumerate(drifting_rollouts(seed=3, levels=[0.0] * 4)):
            observations, rewards, starts, last_dones, last_obs = rollout
            if number == 3:
                starts[1:, 0] = 0.0  # env 0's rollout is one trajectory
                rewards = rewards.copy()
                rewards[:, 0] *= scale
            result = estimator(observations, rewards, starts, last_dones, last_obs)
        results.append(result)
    np.testing.assert_allclose(results[0].baselines[:, 0], results[1].baselines[:, 0], rtol=1e-6)
    assert not np.allclose(results[0].baselines[:, 1:], results[1].baselines[:, 1:])


def test_under_previous_a_rollout_after_returns_moved_keeps_a_level_of_its_own():
    # Six rollouts at one level, then two whose every reward is 3 higher. "previous" reads the rollout before: on the
    # first rollout at the new level it may lag (the pooled level predicted the rollouts before best), and on the next
    # every fold keeps the level given, its baselines those of the option off
    levels = [0.0] * 6 + [3.0] * 2
    options = dict(baseline="linear", binning="time", truncated_returns="keep")
    kwargs = dict(fourier=8, fourier_seed=0, target="returns")
    previous = RolloutEstimator(8, 0.9, **options, baseline_kwargs=dict(kwargs, pooled_memory=8, pooled_choice="previous"))
    alone = RolloutEstimator(8, 0.9, **options, baseline_kwargs=kwargs)
    always_pooled = RolloutEstimator(8, 0.9, **options, baseline_kwargs=dict(kwargs, level="pooled", memory_weight=None))
    shares = []
    for rollout in drifting_rollouts(seed=0, levels=levels):
        result, off, lagging = previous(*rollout), alone(*rollout), always_pooled(*rollout)
        shares.append(result.stats.get("pooled_share"))
    # guard: at one level the pooled candidate is taken
    assert 1.0 in shares[:6], shares
    assert shares[-1] == 0.0
    np.testing.assert_array_equal(result.baselines, off.baselines)
    lag = np.mean(lagging.returns - lagging.baselines)
    assert lag > 2 * abs(np.mean(result.returns - result.baselines)) and lag > 0.5, lag


def test_under_previous_a_tie_keeps_the_level_given():
    # The level given is the pooled candidate itself (one level, the same memory, uncapped): the two predict alike,
    # and every fold keeps the first
    options = dict(baseline="linear", binning="time", truncated_returns="keep")
    same = dict(memory=3, recency=0.9, memory_weight=None, level="pooled", pooled_memory=3, pooled_recency=0.9)
    estimator = RolloutEstimator(
        8, 0.9, **options, baseline_kwargs=dict(same, fourier=8, fourier_seed=0, pooled_choice="previous")
    )
    shares = [estimator(*rollout).stats.get("pooled_share") for rollout in drifting_rollouts(seed=1, levels=[0.0] * 5)]
    assert shares[1:] == [0.0] * 4, shares


@pytest.mark.parametrize("pooled_choice", ["halves", "previous"])
@pytest.mark.parametrize("one_cost", [True, False], ids=["one cost", "rewards that differ"])
def test_a_rollout_of_one_trajectory_trains_as_without_the_candidate(pooled_choice, one_cost):
    # One env whose rollouts each hold one piece of one long episode (MountainCarContinuous-v0's): no fold has two
    # halves to choose on, so the default's fit serves under either choice (the previous rollout's errors would give
    # the pooled level to a fit on the memory alone), and the optimism reads the default's memory
    options = dict(baseline="linear", binning="time", truncated_returns="bootstrap")
    kwargs = dict(fourier=8, fourier_seed=0, memory=2)
    with_candidate = dict(kwargs, pooled_memory=6, pooled_choice=pooled_choice)
    pooled = RolloutEstimator(1, 0.9, gae_lambda=0.8, **options, baseline_kwargs=with_candidate)
    alone = RolloutEstimator(1, 0.9, gae_lambda=0.8, **options, baseline_kwargs=kwargs)
    rng = np.random.default_rng(0)
    for number in range(6):
        observations = rng.normal(size=(8, 1, 3)).astype(np.float32)
        # one cost per step, where the optimism acts; or rewards that move with the observation
        rewards = np.full((8, 1), -0.1, dtype=np.float32) if one_cost else observations[..., 0] + number
        starts = np.zeros((8, 1), dtype=np.float32)
        starts[0] = number == 0
        rollout = (observations, rewards, starts, np.zeros(1, dtype=bool), rng.normal(size=(1, 3)).astype(np.float32))
        result, off = pooled(*rollout), alone(*rollout)
        np.testing.assert_array_equal(result.advantages, off.advantages)
        # the first rollout has no memory, hence no candidate; every later one has it and keeps the level given
        assert result.stats.get("pooled_share") == (None if number == 0 else 0.0)
    assert len(pooled.memory) == 6 and len(alone.memory) == 2
    if one_cost:
        assert off.stats.get("optimism_raised") == 1.0  # guard: the optimism acted, on the default's memory


@pytest.mark.parametrize("n_folds", [2, 8])
def test_the_lagged_choice_matches_the_reference_on_rollouts_of_one_to_three_trajectories(n_folds):
    # One env, 8 steps a rollout: one, two or three trajectories. A fold that trains on two of them or more has halves
    # and takes the previous rollout's choice (with 8 folds every fold of a rollout of three, with 2 one of its two);
    # with one or two trajectories every fold keeps the level given
    options = dict(baseline="linear", binning="time", truncated_returns="bootstrap")
    kwargs = dict(
        fourier=8, fourier_seed=0, memory=2, pooled_memory=4, pooled_choice="previous", target="returns", n_folds=n_folds
    )
    estimator = RolloutEstimator(1, 0.9, gae_lambda=0.8, **options, baseline_kwargs=kwargs)
    reference = ReferenceGPG(1, 0.9, gae_lambda=0.8, **options, baseline_kwargs=kwargs)
    rng = np.random.default_rng(5)
    kept_though_preferred, taken = 0, 0
    for number, n_trajectories in enumerate([3, 3, 3, 2, 3, 3, 1, 3, 2, 3, 3, 2]):
        observations = rng.normal(size=(8, 1, 3)).astype(np.float32)
        rewards = observations[..., 0] + 0.1 * rng.normal(size=(8, 1)).astype(np.float32)
        starts = np.zeros((8, 1), dtype=np.float32)
        starts[0] = number == 0
        starts[[3, 6][: n_trajectories - 1]] = 1.0
        rollout = (observations, rewards, starts, np.zeros(1, dtype=bool), rng.normal(size=(1, 3)).astype(np.float32))
        prefers = bool(len(estimator.memory) and estimator.memory.rollouts[-1].prefers_pooled)
        result = estimator(*rollout)
        assert_estimate_matches(result, reference.advantages(*rollout), tolerance=1e-4)
        share = result.stats.get("pooled_share")
        kept_though_preferred += int(n_trajectories < 3 and prefers and share == 0.0)
        taken += int(share is not None and share > 0.0)
    # guards: some rollouts took the pooled level, and some of one or two trajectories kept their own though the
    # rollout before preferred it
    assert taken and kept_though_preferred, (taken, kept_though_preferred)


@pytest.mark.parametrize(
    ("baseline_kwargs", "match"),
    [
        ({"pooled_memory": -1}, r"pooled_memory.*at least 0"),
        ({"pooled_memory": 1.5}, r"pooled_memory.*integer"),
        ({"pooled_memory": 4, "pooled_recency": 0.0}, r"pooled_recency.*\(0, 1\]"),
        ({"pooled_recency": 0.5}, r"pooled_recency.*pooled_memory.*0 \(off\)"),
        ({"memory": 0, "pooled_memory": 4}, r"pooled_memory.*beside the memory.*memory to at least 1"),
        ({"pooled_memory": 4, "pooled_choice": "last"}, r"pooled_choice.*one of \('halves', 'previous'\)"),
        ({"pooled_choice": "previous"}, r"pooled_choice.*pooled_memory.*0 \(off\)"),
    ],
)
def test_bad_pooled_arguments_are_refused(baseline_kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_buffer(GroupRolloutBuffer, 0.8, baseline="linear", baseline_kwargs=baseline_kwargs)
