"""
The linear baseline's optimism while a constant cost per step hides the goal (``baseline_kwargs["optimism"]``): the
estimate against the loop-by-loop reference, and its promises checked by perturbing the input: the baseline is raised
most where the fit has seen least, the lambda-returns then favour the trajectory that goes there, and nothing changes
where the rewards tell trajectories apart, where an episode found the goal, or with lambda 1.
"""

import numpy as np
import pytest

from sb3_gpg.estimator.baseline_memory import BaselineMemory, Equations
from sb3_gpg.estimator.optimism import LAPSE_EPISODES, read_goal
from tests.helpers import RolloutEstimator, assert_estimate_matches
from tests.reference import ReferenceGPG

N_STEPS, N_ENVS, OBS_DIM, GAMMA, LAMBDA, LIMIT = 13, 4, 2, 0.9, 0.9, 10


def costly_rollouts(seed: int, n_rollouts: int = 3, drift: float = 0.003):
    """
    Consecutive rollouts of a task that costs the same every step: every episode lasts ``LIMIT`` steps, the envs
    starting together (rollouts of ``N_STEPS`` cut them at all times), the reward is minus one scale on every env,
    the scale growing by ``drift`` a step (as VecNormalize's moves); observations are noise.
    """
    rng = np.random.default_rng(seed)
    times = np.zeros(N_ENVS, dtype=np.int64)
    scale = 1.0
    for _ in range(n_rollouts):
        observations = rng.normal(size=(N_STEPS, N_ENVS, OBS_DIM)).astype(np.float32)
        rewards = np.empty((N_STEPS, N_ENVS), dtype=np.float32)
        starts = np.zeros((N_STEPS, N_ENVS), dtype=np.float32)
        for row in range(N_STEPS):
            starts[row] = times == 0
            rewards[row] = -scale
            scale *= 1 + drift
            times = (times + 1) % LIMIT
        yield observations, rewards, starts, times == 0, rng.normal(size=(N_ENVS, OBS_DIM)).astype(np.float32)


def estimators(
    optimism: bool,
    truncated_returns: str = "bootstrap",
    memory: int = 2,
    gae_lambda: float = LAMBDA,
    goal_lapses: bool = False,
):
    kwargs = dict(memory=memory, fourier=16, fourier_seed=3, optimism=optimism)
    options = dict(binning="time", baseline="linear", truncated_returns=truncated_returns, baseline_kwargs=kwargs)
    return (
        RolloutEstimator(N_ENVS, GAMMA, gae_lambda, goal_lapses=goal_lapses, **options),
        ReferenceGPG(N_ENVS, GAMMA, gae_lambda=gae_lambda, goal_lapses=goal_lapses, **options),
    )


@pytest.mark.parametrize("memory", [0, 2])
@pytest.mark.parametrize("truncated_returns", ["bootstrap", "mask", "keep"])
def test_optimism_matches_the_reference(truncated_returns, memory):
    estimator, reference = estimators(True, truncated_returns, memory)
    plain, _ = estimators(False, truncated_returns, memory)
    rollouts = [[array.copy() for array in rollout] for rollout in costly_rollouts(seed=1, n_rollouts=7)]
    # the fourth rollout's env 1 reaches the goal: its episode ends before the time limit (a new one starts in the
    # next row). Nothing is raised then, nor after it where the memory took that rollout
    rollouts[3][2][5, 1] = 1.0
    # the first rollout's first cost is ten times the rest (VecNormalize's first step): not one cost, nor a goal
    rollouts[0][1][0] *= 10
    not_raised = [0, *range(3, 7)] if memory else [0, 3]
    for number, rollout in enumerate(rollouts):
        result, expected = estimator(*rollout), reference.advantages(*rollout)
        assert_estimate_matches(result, expected, tolerance=1e-4)
        without = plain(*rollout)
        raised = not np.allclose(result.baselines, without.baselines)
        assert raised == (number not in not_raised)
        # the update's log says so
        assert result.stats["optimism_raised"] == float(raised)
        assert "optimism_raised" not in without.stats


@pytest.mark.parametrize(("goal_rollouts", "goal_lapses"), [((1,), True), ((1, 3, 5, 7, 9), True), ((1,), False)])
def test_a_goal_found_by_chance_lapses_once_episodes_run_to_the_limit_after_it(goal_rollouts, goal_lapses):
    # env 1 finds the goal (an episode ends before the limit) in the rollouts ``goal_rollouts``; every other episode
    # runs to the limit, 4 or 8 a rollout. Found once, 4, 12 and 16 (LAPSE_EPISODES) have run to the limit after it by
    # the ends of rollouts 2, 3 and 4: where the goal lapses (a buffer's under gae_lambda="auto"), from rollout 5 on the
    # optimism raises the baselines again, however short the memory (2 rollouts). Found every other rollout, fewer
    # than 16 run between two goals: it stays seen. Where it does not lapse (a lambda given), it stays seen
    estimator, reference = estimators(True, memory=2, goal_lapses=goal_lapses)
    plain, _ = estimators(False, memory=2)
    rollouts = [[array.copy() for array in rollout] for rollout in costly_rollouts(seed=6, n_rollouts=10)]
    for number in goal_rollouts:
        starts = rollouts[number][2][:, 1]
        row = next(row for row in range(4, N_STEPS) if not starts[row])
        starts[row] = 1.0  # the episode before it ends early
    raised = []
    for rollout in rollouts:
        result = estimator(*rollout)
        assert_estimate_matches(result, reference.advantages(*rollout), tolerance=1e-4)
        raised.append(not np.allclose(result.baselines, plain(*rollout).baselines))
    # before the goal, raised; not in the rollout that finds it, nor right after it
    assert raised[:3] == [True, False, False]
    if len(goal_rollouts) == 1 and goal_lapses:
        assert raised[2:] == [False] * 3 + [True] * 5 and not estimator.memory.goal_seen
    else:
        assert not any(raised[2:]) and estimator.memory.goal_seen


def episode_rollouts(rng, n_envs: int, n_steps: int, n_rollouts: int, limit: int, p_early: float, p_goal_reward: float):
    """
    Consecutive rollouts of episodes that end at the time limit ``limit`` or, with probability ``p_early`` a step,
    before it; a step's reward is -1 on every env, but with probability ``p_goal_reward`` one env gets -2.

    :return: per rollout, rewards, episode starts, episode times and the last step's dones
    """
    times, starts_next = np.zeros(n_envs, dtype=np.int64), np.ones(n_envs, dtype=bool)
    for _ in range(n_rollouts):
        rewards, starts = -np.ones((n_steps, n_envs)), np.zeros((n_steps, n_envs))
        episode_times, dones = np.zeros((n_steps, n_envs), dtype=np.int64), np.zeros(n_envs, dtype=bool)
        for step in range(n_steps):
            for env in range(n_envs):
                if starts_next[env]:
                    starts[step, env], times[env] = 1.0, 0
                episode_times[step, env] = times[env]
                dones[env] = times[env] == limit - 1 or rng.random() < p_early
                starts_next[env] = dones[env]
                times[env] += 1
            if rng.random() < p_goal_reward:
                rewards[step, rng.integers(n_envs)] = -2.0
        yield rewards, starts, episode_times, dones.copy()


def test_the_goal_and_the_episodes_to_the_limit_after_it_are_read_as_the_reference_reads_them():
    # random rollouts of every shape, many ties between envs that start together, ends on the last step (last dones),
    # rollouts without an end, goals by an early end or by a reward, and the memory's count carried across rollouts
    rng = np.random.default_rng(0)
    for _ in range(300):
        n_envs, n_steps, limit = int(rng.integers(1, 5)), int(rng.integers(1, 12)), int(rng.integers(1, 15))
        p_early, p_goal_reward = rng.choice([0.0, 0.01, 0.05, 0.3]), rng.choice([0.0, 0.02, 0.2])
        lapses = bool(rng.integers(2))
        reference = ReferenceGPG(n_envs, GAMMA, "time", baseline="linear", baseline_kwargs={"memory": 2}, goal_lapses=lapses)
        memory = BaselineMemory(2, goal_lapses=lapses)
        for rewards, starts, times, last_dones in episode_rollouts(rng, n_envs, n_steps, 6, limit, p_early, p_goal_reward):
            goal = read_goal(rewards, starts, times, last_dones, memory.longest_episode)
            seen = reference.goal_seen(rewards, starts, times, last_dones)
            streak = reference.episodes_to_the_limit(rewards, starts, times, last_dones)
            assert goal.seen == seen and goal.limits_after == streak(0)
            entry = Equations(np.eye(1), np.zeros(1), np.zeros((n_envs, 1)), np.zeros((n_envs, 1)), 1, 0.0, 0.0)
            memory.remember(entry._replace(goal_seen=goal.seen, longest_episode=int(times.max()),
                                           limits_after_goal=goal.limits_after), None)  # fmt: skip
            reference.remember({"seen": seen, "streak": streak}, times)
            assert (memory.goal_seen, memory.limits_since_goal) == (reference.goal_was_seen, reference.limit_streak)


def test_a_goal_lapses_at_lapse_episodes_under_auto_and_the_memory_keeps_the_count():
    def entry(seen: bool, limits: int) -> Equations:
        return Equations(np.eye(1), np.zeros(1), np.zeros((1, 1)), np.zeros((1, 1)), 1, 0.0, 0.0, seen, 5, limits)

    # without the lapse (a lambda given), a goal found stays seen
    memory = BaselineMemory(1)
    memory.remember(entry(True, 0), None)
    memory.remember(entry(False, 40), None)
    assert memory.goal_seen and memory.limits_since_goal == 40
    memory = BaselineMemory(1, goal_lapses=True)
    memory.remember(entry(False, 40), None)
    assert not memory.goal_seen  # episodes to the limit before any goal count for nothing
    memory.remember(entry(True, 2), None)
    memory.remember(entry(False, LAPSE_EPISODES - 3), None)
    assert memory.goal_seen and memory.limits_since_goal == LAPSE_EPISODES - 1
    # the memory's state, restored, holds the count (an estimate computed twice remembers its rollout once)
    state = memory.state()
    memory.remember(entry(False, 1), None)
    assert not memory.goal_seen
    memory.restore(state)
    assert memory.goal_seen and memory.limits_since_goal == LAPSE_EPISODES - 1
    memory.remember(entry(False, 1), None)
    assert not memory.goal_seen
    # a goal found again counts anew, however short the memory; cleared, nothing is seen
    memory.remember(entry(True, LAPSE_EPISODES - 1), None)
    assert memory.goal_seen
    memory.clear()
    assert not memory.goal_seen and memory.limits_since_goal == 0


# the row of the last rollout from which env 0 leaves for states no sample has been near
LEAVES = 6


def raised_by_optimism(away: float):
    """
    Env 1 sees what env 0 sees, but in the last rollout env 0 goes ``away`` from every other sample from row
    ``LEAVES`` on.

    :return: the last rollout's baselines and advantages with optimism on, less those with it off
    """
    rollouts = [[array.copy() for array in rollout] for rollout in costly_rollouts(seed=2)]
    for observations, _, _, _, last_obs in rollouts:
        observations[:, 1], last_obs[1] = observations[:, 0], last_obs[0]
    rollouts[-1][0][LEAVES:, 0] += away
    rollouts[-1][4][0] += away
    results = []
    for optimism in (True, False):
        estimator, _ = estimators(optimism)
        for rollout in rollouts:
            result = estimator(*rollout)
        results.append(result)
    on, off = results
    return on.baselines - off.baselines, on.advantages.astype(np.float64) - off.advantages


def test_the_baseline_is_raised_most_where_the_fit_has_seen_least():
    baselines, _ = raised_by_optimism(away=4.0)
    assert (baselines > 0).all()
    assert baselines[LEAVES:, 0].mean() > 2 * baselines[:, 1:].mean()
    # where env 0 stays, it is raised as env 1 is
    baselines, _ = raised_by_optimism(away=0.0)
    np.testing.assert_allclose(baselines[:, 0], baselines[:, 1], rtol=1e-5)


def test_the_lambda_returns_favour_the_actions_that_lead_where_the_fit_has_seen_least():
    # until it leaves, env 0 is where env 1 is: its actions differ only by where they lead, within its episode
    starts = list(costly_rollouts(seed=2))[-1][2][:, 0]
    episode = max(row for row in range(LEAVES) if starts[row])
    _, advantages = raised_by_optimism(away=4.0)
    assert (advantages[episode:LEAVES, 0] > advantages[episode:LEAVES, 1]).all()
    np.testing.assert_allclose(advantages[:episode, 0], advantages[:episode, 1], rtol=1e-5, atol=1e-6)
    _, advantages = raised_by_optimism(away=0.0)
    np.testing.assert_allclose(advantages[:, 0], advantages[:, 1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "change",
    ["rewards differ between envs", "a positive constant reward", "rewards that jump", "an episode ends early", "lambda 1"],
)
def test_nothing_is_raised_where_the_rollout_shows_a_signal_or_lambda_is_1(change):
    rollouts = [[array.copy() for array in rollout] for rollout in costly_rollouts(seed=4)]
    last = rollouts[-1]
    if change == "rewards differ between envs":
        last[1][:, 2] *= 1.5
    elif change == "a positive constant reward":
        for rollout in rollouts:
            rollout[1] *= -1
    elif change == "rewards that jump":
        last[1][7:] *= 1.05
    elif change == "an episode ends early":
        last[2][7, 3] = 1.0  # its episode ends at time 2
    gae_lambda = 1.0 if change == "lambda 1" else LAMBDA
    on, _ = estimators(True, gae_lambda=gae_lambda)
    off, _ = estimators(False, gae_lambda=gae_lambda)
    for rollout in rollouts:
        with_optimism, without = on(*rollout), off(*rollout)
    np.testing.assert_array_equal(with_optimism.baselines, without.baselines)
    np.testing.assert_array_equal(with_optimism.advantages, without.advantages)


def one_env_rollouts(goal_at: int, n_rollouts: int = 8, n_steps: int = 8, limit: int = 20):
    """
    Consecutive rollouts of one env (MountainCarContinuous-v0's shape: rollouts much shorter than the episodes) of a
    task that costs the same every step: the first episode runs to the time limit ``limit``; the second finds the goal
    at its step ``goal_at`` and the episodes after it run to the limit again.
    """
    rng = np.random.default_rng(5)
    lengths = [limit, goal_at, *[limit] * n_rollouts]
    starts = np.concatenate([np.eye(1, length, 0)[0] for length in lengths])[: n_rollouts * n_steps]
    for start in range(0, n_rollouts * n_steps, n_steps):
        rows = slice(start, start + n_steps)
        last_done = start + n_steps < len(starts) and starts[start + n_steps] == 1
        yield (
            rng.normal(size=(n_steps, 1, OBS_DIM)).astype(np.float32),
            -np.ones((n_steps, 1), dtype=np.float32),
            starts[rows, None].astype(np.float32),
            np.array([last_done]),
            rng.normal(size=(1, OBS_DIM)).astype(np.float32),
        )


def test_a_goal_is_seen_where_no_episode_of_the_rollout_ran_longer():
    # one env whose rollouts (8 steps) are shorter than the episodes: the episode that finds the goal (11 steps, where
    # the limit is 20) ends in the fourth rollout, the longest episode of that rollout, but shorter than the first
    # episode, which ran to the limit in the third
    options = dict(binning="time", baseline="linear", truncated_returns="bootstrap")
    kwargs = dict(memory=2, fourier=16, fourier_seed=3)
    on = RolloutEstimator(1, GAMMA, LAMBDA, **options, baseline_kwargs={**kwargs, "optimism": True})
    off = RolloutEstimator(1, GAMMA, LAMBDA, **options, baseline_kwargs={**kwargs, "optimism": False})
    reference = ReferenceGPG(1, GAMMA, gae_lambda=LAMBDA, **options, baseline_kwargs={**kwargs, "optimism": True})
    raised = []
    for rollout in one_env_rollouts(goal_at=11):
        result = on(*rollout)
        assert_estimate_matches(result, reference.advantages(*rollout), tolerance=1e-4)
        raised.append(not np.allclose(result.baselines, off(*rollout).baselines))
        assert result.stats["optimism_raised"] == float(raised[-1])
    # raised before the goal (the first rollout has no fit: one trajectory, no memory), not in the rollout that finds
    # it, nor after it, when the memory (2 rollouts) no longer holds that rollout
    assert raised == [False, True, True, False, False, False, False, False]
