"""
A deliberately slow, loop-by-loop implementation of the paper's Algorithm 2 (GPG advantage estimation), with this
package's options (leave_one_out, min_bin_count, truncated_returns, advantage_scale), to check GroupRolloutBuffer
against.

It shares no code with sb3_gpg: plain Python loops over envs, steps, trajectories, folds and bins, with dicts and lists.
The state-aware options (gae_lambda, the fitted baselines "linear" and "knn") are loops too; only the ridge
regression's linear system is solved by NumPy, and NumPy's default_rng draws the linear features' random maps.

The linear baseline's optimism: in a rollout where every step cost the same (one negative reward on every env at
each step, moving at most 1% from step to step), where no episode ended before the longest episode time in it or in
any rollout the memory took before, and where no rollout the memory took before saw a goal (an episode ending so,
or envs' rewards that differ at a step), or, with ``goal_lapses`` (the buffer's under ``gae_lambda="auto"``), where 16
episodes in a row have run to the longest time since the last goal, each sample's baseline and each env's value after
the rollout are raised by the returns' spread times the square root of their leverage under the fit's ridge, over the
rows' mean leverage (GAE's lambda below 1 only).

The linear baseline on its own lambda-returns (``target="lambda_returns"``, or its default ``"auto"``, with GAE's
lambda below 1): each sample's target is its lambda-return over the fit's own values (its dot product, plus the
remembered rollout's level for its samples; the completion's value, within its range, after a cut): the fit whose
own lambda-returns it fits, found from the targets read sample by sample over no fit and over each unit fit (they are
affine in it; the package builds the fixed point's system from eligibility-style sums instead).

The fitted baselines, cross-fitted: the group's trajectories, in the order they start (by row, then env), are dealt to
folds in turn; a fold's baselines, and the completion of its cut returns, are fitted on the other folds' samples (and,
for the linear baseline, the remembered rollouts), whose trajectories, in the order they were dealt, alternate
between the two halves on which its fit is chosen.
"""

import math
import operator

import numpy as np

COARSER = {
    "spatial_time": "time",
    "time": "universal",
    "spatial": "universal",
    "state": "universal",
    "rollout_step": "universal",
}
# Each fitted baseline's arguments where baseline_kwargs do not give them
DEFAULT_KWARGS = {
    "bins": {},
    "linear": {"n_folds": 2, "ridge": 1e-3, "memory": 8, "recency": 0.8, "memory_weight": 1.0, "level": "own",
               "pooled_memory": 0, "pooled_recency": 0.9, "pooled_choice": "halves",
               "fourier": 256, "fourier_scale": None, "fourier_seed": None,
               "choose_size": True, "optimism": True, "target": "auto"},
    "knn": {"n_folds": 2, "n_neighbors": 16, "max_samples": 1024},
}  # fmt: skip
# The linear fit's sizes (its first features) chosen among, besides all of them; the first is the time's alone
CANDIDATE_SIZES = (4, 16, 64, 256)
# Observations of more dimensions are projected on this many before the linear features
PROJECTED = 64
# Fits that re-complete the cut returns with the previous fit's values
VALUE_ITERATIONS = 2


class Sample:
    """
    One group sample as the fitted baselines read it.

    :param step: its rollout row
    :param env: its env
    :param x: its features
    :param y: its return within the rollout
    :param g: gamma ** (steps to the rollout's end) where its return is cut and to be completed, else 0
    :param q: the features of its env's state after the rollout (None where g is 0)
    :param fold: its trajectory's fold
    :param rank: its trajectory's place in the order the trajectories were dealt to folds
    :param r: its reward
    """

    def __init__(self, step, env, x, y, g, q, fold, rank, r):
        self.step, self.env, self.x, self.y, self.g, self.q, self.fold, self.rank = step, env, x, y, g, q, fold, rank
        self.r = r
        # its trajectory's next sample within the rollout (None at the trajectory's end)
        self.nxt = None


class ReferenceGPG:
    """
    Feed it rollouts one after the other (episode times, and the linear baseline's memory, carry across rollouts, as in
    the buffer).

    :param n_envs: number of envs
    :param gamma: discount factor
    :param binning: a binning name or a callable f(obs, t) -> keys
    :param bin_size: epsilon of the spatial bins (float or one value per dimension)
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: minimum number of returns in a bin, else the next coarser binning
    :param truncated_returns: "keep", "mask" or "bootstrap"
    :param advantage_scale: "none" or "bin_std"
    :param gae_lambda: GAE's lambda over the baselines (1: Monte-Carlo advantages)
    :param baseline: "bins", "linear" or "knn"
    :param baseline_kwargs: given ones replace ``DEFAULT_KWARGS``: n_folds, ridge, memory, recency, memory_weight
        (None: no cap), level (own: an indicator per remembered rollout; trend: one column, a remembered rollout's
        age, k rollouts back; pooled: none), pooled_memory and pooled_recency (linear: each fold also tries one level
        for the last pooled_memory rollouts, weighing pooled_recency ** k, uncapped; ``pooled_choices`` records, of the
        folds that had it, which took it), pooled_choice ("halves": each fold chooses on halves of its training
        trajectories; "previous": every fold takes the candidate whose folds' fits, each at its size on the halves,
        had the smaller squared error on their own samples at the rollout before), fourier, fourier_scale,
        fourier_seed (linear; a fourier_seed of None is 0: give a group buffer's the seed it drew) and choose_size
        (linear: False fits all the features), optimism and target (linear), n_neighbors and max_samples (knn: every
        ceil(n / max_samples)-th candidate is searched)
    :param goal_lapses: whether the optimism's goal stops counting once 16 episodes in a row after it have run to the
        longest time (a buffer's under gae_lambda="auto")
    """

    def __init__(
        self,
        n_envs,
        gamma,
        binning,
        bin_size=1.0,
        leave_one_out=False,
        min_bin_count=1,
        truncated_returns="keep",
        advantage_scale="none",
        gae_lambda=1.0,
        baseline="bins",
        baseline_kwargs=None,
        goal_lapses=False,
    ):
        self.n_envs = n_envs
        self.goal_lapses = goal_lapses
        self.gamma = gamma
        self.binning = binning
        self.bin_size = bin_size
        self.leave_one_out = leave_one_out
        self.min_bin_count = min_bin_count
        self.truncated_returns = truncated_returns
        self.advantage_scale = advantage_scale
        self.gae_lambda = gae_lambda
        self.baseline = baseline
        self.baseline_kwargs = {**DEFAULT_KWARGS[baseline], **(baseline_kwargs or {})}
        self.time_of_next_step = [0] * n_envs
        # The linear baseline's remembered rollouts, oldest first: each {"samples": [Sample], "low": .., "high": ..}
        self.memory = []
        self.pooled_choices = []  # per fold of the last fitted rollout that had it: whether it took the pooled candidate
        # and the mean of the last rollout's fold fits
        self.last_fit = None
        # the longest episode time of any rollout the memory took (the optimism's goal: an episode that ends before it),
        # whether any of them found the goal, and how many episodes ended at the longest time since the last one did
        self.longest_time = 0
        self.goal_was_seen = False
        self.limit_streak = 0
        self.random_maps_of = {}

    def key(self, binning, obs, time, step):
        if binning == "universal":
            return 0
        if binning == "time":
            return time
        if binning == "rollout_step":
            return step
        flat = [float(x) for x in np.asarray(obs, dtype=np.float64).reshape(-1)]
        if binning == "state":
            return tuple(flat)
        sizes = self.bin_size if np.ndim(self.bin_size) else [self.bin_size] * len(flat)
        cell = tuple(round(x / eps) for x, eps in zip(flat, sizes, strict=True))
        if binning == "spatial":
            return cell
        if binning == "spatial_time":
            return (cell, time)
        raise ValueError(binning)

    def advantages(self, observations, rewards, episode_starts, last_dones, last_obs=None):  # noqa: C901 (loop by loop)
        """
        :param observations: (n_steps, n_envs, ...) observations
        :param rewards: (n_steps, n_envs)
        :param episode_starts: (n_steps, n_envs) flags given to the buffer
        :param last_dones: (n_envs,) whether each env's last step ended its episode
        :param last_obs: (n_envs, ...) observations after the rollout (for "bootstrap")
        :return: returns, baselines, advantages (each (n_steps, n_envs)) and in_group mask
        """
        n_steps = len(rewards)
        times = self.episode_times(episode_starts)
        trajectories = self.trajectories(episode_starts)
        returns = self.returns(rewards, trajectories)
        in_group = np.ones((n_steps, self.n_envs), dtype=bool)
        cut_trajectories = self.cut_trajectories(trajectories, n_steps, last_dones)
        if self.truncated_returns == "mask":
            for trajectory in cut_trajectories:
                for step, env in trajectory:
                    in_group[step][env] = False

        if callable(self.binning):
            custom_keys = self.binning(observations, times)
            levels = ["custom", "universal"]
        else:
            levels = [self.binning]
            while levels[-1] != "universal":
                levels.append(COARSER[levels[-1]])

        def key_of(level, step, env):
            if level == "custom":
                return int(custom_keys[step][env])
            return self.key(level, observations[step][env], int(times[step][env]), step)

        value_at_cut = [0.0] * self.n_envs
        fitted = None
        remembered_before = list(self.memory)
        goal_was_seen = self.goal_was_seen
        # kept with the rollout in the memory
        self.seen = self.goal_seen(rewards, episode_starts, times, last_dones)
        self.streak = self.episodes_to_the_limit(rewards, episode_starts, times, last_dones)
        if self.baseline != "bins":
            fitted = self.fitted(observations, times, trajectories, cut_trajectories, returns, in_group, last_obs, rewards)
        if fitted is not None:
            fitted_baselines, completed, value_at_cut, found = fitted
            for (step, env), value in completed.items():
                returns[step][env] = value
            optimism = self.baseline == "linear" and self.baseline_kwargs["optimism"] and self.gae_lambda < 1.0
            unseen = not self.seen and not goal_was_seen
            if optimism and unseen and self.one_cost(rewards):
                queries = []
                if self.truncated_returns == "bootstrap" and cut_trajectories:
                    queries = [self.features(last_obs[env], self.time_of_next_step[env]) for env in range(self.n_envs)]
                recent = remembered_before[max(0, len(remembered_before) - self.baseline_kwargs["memory"]) :]
                recent = recent if self.baseline_kwargs["memory"] else []
                self.raise_by_novelty(observations, times, fitted_baselines, completed, queries, value_at_cut, found,
                                      recent)  # fmt: skip
        elif self.truncated_returns == "bootstrap":
            # The bins' value of the state after the rollout: its observation, the next episode time, rollout row n_steps
            next_times = np.array([self.time_of_next_step])
            for trajectory in cut_trajectories:
                env = trajectory[-1][1]
                value = 0.0
                for level in levels:
                    if level == "custom":
                        next_key = int(self.binning(np.asarray(last_obs)[None], next_times)[0][env])
                    else:
                        next_key = self.key(level, last_obs[env], self.time_of_next_step[env], n_steps)
                    complete = []
                    for other in trajectories:
                        if any(other is cut for cut in cut_trajectories):
                            continue
                        for step, other_env in other:
                            if key_of(level, step, other_env) == next_key:
                                complete.append(returns[step][other_env])  # the first visit of `other`
                                break
                    if len(complete) >= self.min_bin_count:
                        value = sum(complete) / len(complete)
                        break
                for step, env in trajectory:
                    returns[step][env] += self.gamma ** (n_steps - step) * value
                value_at_cut[env] = value

        # Bins of first-visit returns, per level: key -> list of (trajectory index, return)
        bins_by_level = []
        for level in levels:
            bins = {}
            for index, trajectory in enumerate(trajectories):
                visited = []
                for step, env in trajectory:
                    if not in_group[step][env]:
                        continue
                    key = key_of(level, step, env)
                    if key not in visited:
                        visited.append(key)
                        bins.setdefault(key, []).append((index, returns[step][env]))
            bins_by_level.append(bins)

        baselines = returns.copy()
        scales = np.ones((n_steps, self.n_envs))
        for index, trajectory in enumerate(trajectories):
            for step, env in trajectory:
                if not in_group[step][env]:
                    continue
                for number, (level, bins) in enumerate(zip(levels, bins_by_level, strict=True)):
                    members = bins[key_of(level, step, env)]
                    values = [value for owner, value in members if not (self.leave_one_out and owner == index)]
                    if len(values) >= self.min_bin_count:
                        baselines[step][env] = sum(values) / len(values)
                        if self.advantage_scale == "bin_std":
                            scales[step][env] = self.spread(levels[number:], bins_by_level[number:], key_of, step, env)
                        break
        if fitted is not None:
            for (step, env), value in fitted_baselines.items():
                baselines[step][env] = value
        if self.gae_lambda == 1.0:
            return returns, baselines, (returns - baselines) / scales, in_group
        advantages = np.zeros((n_steps, self.n_envs))
        for trajectory in trajectories:
            following = 0.0
            for position in reversed(range(len(trajectory))):
                step, env = trajectory[position]
                if position + 1 < len(trajectory):
                    next_value = baselines[trajectory[position + 1][0]][env]
                elif step == n_steps - 1 and not last_dones[env]:
                    next_value = value_at_cut[env]
                else:
                    next_value = 0.0
                delta = rewards[step][env] + self.gamma * next_value - baselines[step][env]
                following = delta + self.gamma * self.gae_lambda * following
                if in_group[step][env]:
                    advantages[step][env] = following / scales[step][env]
        return returns, baselines, advantages, in_group

    # ------------------------------------------------------------------------------------------------ fitted baselines

    def fitted(self, observations, times, trajectories, cut_trajectories, returns, in_group, last_obs, rewards):
        """
        The fitted baseline's cross-fitted estimate of the group's samples, and the linear baseline's memory updated.

        :return: None where the bins serve (a group of fewer than two trajectories, and no linear memory; or none at
            all, which the memory skips); else the
            baseline of every group sample {(step, env): value}, its return (a cut one completed by its own fold's fit)
            and each env's value after the rollout (by the fold of its cut trajectory; 0 where none)
        """
        bootstrap = self.truncated_returns == "bootstrap"
        self.pooled_choices = []
        # pooled_choice="previous": each candidate's squared error on the folds' own samples, summed over the folds
        self.candidate_errors = [0.0, 0.0]
        group = [t for t in trajectories if in_group[t[0][0]][t[0][1]]]
        group.sort(key=lambda t: (t[0][0], t[0][1]))  # dealt in the order they start: by row, then by env
        if not group:
            return None  # every trajectory masked: nothing to fit, and nothing remembered
        remembers = self.baseline == "linear" and len(self.memory) > 0
        fallback = len(group) < 2 and not remembers
        n_folds = min(self.baseline_kwargs["n_folds"], len(group))
        # the features of each env's state after the rollout, where a cut return is to be completed
        queries = {}
        if bootstrap and cut_trajectories:
            for env in range(self.n_envs):
                queries[env] = self.features(last_obs[env], self.time_of_next_step[env])
        samples = []
        for rank, trajectory in enumerate(group):
            cut = bootstrap and any(trajectory is other for other in cut_trajectories)
            folds = (rank % n_folds, rank) if len(group) >= 2 else (0, rank)
            samples += self.trajectory_samples(trajectory, observations, times, returns, rewards, cut, queries, folds)
        # in the order of the buffer's samples: env by env, step by step (the knn's stride reads it)
        samples.sort(key=lambda sample: (sample.env, sample.step))
        if fallback:
            # nothing to fit on yet: the bins' baselines; the linear baseline remembers the rollout all the same
            if self.baseline == "linear" and self.remembers() and samples:
                values = [sample.y for sample in samples]
                self.remember({"samples": samples, "low": min(values), "high": max(values), "seen": self.seen,
                               "streak": self.streak, "prefers_pooled": False}, times)  # fmt: skip
                self.last_fit = None
            return None
        if self.baseline == "knn":
            samples, queries = self.standardised(samples, queries)
        baselines, completed, value_at_cut, fits, found = {}, {}, [0.0] * self.n_envs, [], set()
        if len(group) >= 2:
            folds = [
                ([s for s in samples if s.fold != fold], [s for s in samples if s.fold == fold]) for fold in range(n_folds)
            ]
        else:
            folds = [([], samples)]  # a single trajectory: fitted on the memory alone
        for train, own in folds:
            if self.baseline == "linear":
                own_baselines, values, fit = self.linear_fold(train, own, queries)
            else:
                own_baselines, values, fit = self.knn_fold(train, own, queries)
            fits.append(fit)
            for sample in own:
                value = values.get(sample.env, 0.0)
                baselines[(sample.step, sample.env)] = own_baselines[(sample.step, sample.env)]
                completed[(sample.step, sample.env)] = sample.y + sample.g * value
                if sample.g:
                    value_at_cut[sample.env] = value
                    if sample.env in values:
                        found.add(sample.env)
        if self.baseline == "linear" and self.remembers():
            values = list(completed.values())
            rollout = {"samples": samples, "low": min(values, default=math.inf), "high": max(values, default=-math.inf),
                       "seen": self.seen, "streak": self.streak,
                       "prefers_pooled": self.candidate_errors[1] < self.candidate_errors[0]}  # fmt: skip
            self.remember(rollout, times)
            longest = max(len(fit["coefficients"]) for fit in fits)
            self.last_fit = {
                "coefficients": [
                    sum(fit["coefficients"][j] if j < len(fit["coefficients"]) else 0.0 for fit in fits) / len(fits)
                    for j in range(longest)
                ],
                "low": min(fit["low"] for fit in fits),
                "high": max(fit["high"] for fit in fits),
            }
        return baselines, completed, value_at_cut, found

    def trajectory_samples(self, trajectory, observations, times, returns, rewards, cut, queries, folds):
        """
        :param cut: whether the trajectory's return is cut and to be completed
        :param folds: its fold and its place in the order of dealing
        :return: its samples, in order, each linked to the next
        """
        n_steps = len(returns)
        samples = []
        for step, env in trajectory:
            sample = Sample(
                step,
                env,
                self.features(observations[step][env], times[step][env]),
                float(returns[step][env]),
                self.gamma ** (n_steps - step) if cut else 0.0,
                queries[env] if cut else None,
                *folds,
                float(rewards[step][env]),
            )
            if samples:
                samples[-1].nxt = sample
            samples.append(sample)
        return samples

    def one_cost(self, rewards):
        """:return: whether every reward is negative, equal on every env at each step, and within 1% of the last step's"""
        for step in range(len(rewards)):
            for env in range(self.n_envs):
                if not rewards[step][env] < 0 or abs(rewards[step][env] - rewards[step][0]) > 1e-6 * -rewards[step][0]:
                    return False
            if step and abs(rewards[step][0] - rewards[step - 1][0]) > 0.01 * -rewards[step - 1][0]:
                return False
        return True

    def remember(self, rollout, times):
        """Keep the rollout in the memory (the oldest forgotten past its length), and, however long the memory, its
        longest episode time, if longer than every one before, and whether it found the goal."""
        kept = max(self.baseline_kwargs["memory"], self.baseline_kwargs["pooled_memory"])
        self.memory = [*self.memory, rollout][max(0, len(self.memory) + 1 - kept) :] if kept else []
        for row in times:
            for time in row:
                self.longest_time = max(self.longest_time, int(time))
        self.goal_was_seen = self.goal_was_seen or rollout["seen"]
        self.limit_streak = rollout["streak"](self.limit_streak)
        if self.goal_lapses and self.limit_streak >= 16:
            self.goal_was_seen = False

    def episodes_to_the_limit(self, rewards, episode_starts, times, last_dones):
        """
        :return: a function of the episodes ended at the longest time in a row before the rollout that gives that
            number after it: step by step, every episode ending at the longest time (this rollout's or any earlier
            one's) adds one, and a step where an episode ends before it, or two envs' rewards differ, sets it to 0
        """
        n_steps = len(rewards)
        longest = self.longest_time
        for step in range(n_steps):
            for env in range(self.n_envs):
                longest = max(longest, int(times[step][env]))
        count, reset = 0, False
        for step in range(n_steps):
            goal, limits = False, 0
            for env in range(self.n_envs):
                ends = episode_starts[step + 1][env] if step + 1 < n_steps else last_dones[env]
                if ends and times[step][env] < longest:
                    goal = True
                elif ends:
                    limits += 1
                if abs(rewards[step][env] - rewards[step][0]) > 1e-6 * abs(rewards[step][0]):
                    goal = True
            if goal:
                count, reset = 0, True
            else:
                count += limits
        return (lambda before: count) if reset else (lambda before: before + count)

    def goal_seen(self, rewards, episode_starts, times, last_dones):
        """
        :return: whether an episode ended inside the rollout before its longest episode time or any earlier rollout's,
            or two envs' rewards differ at a step (to 1e-6 of the first env's)
        """
        n_steps = len(rewards)
        longest = self.longest_time
        for step in range(n_steps):
            for env in range(self.n_envs):
                longest = max(longest, int(times[step][env]))
        for env in range(self.n_envs):
            for step in range(n_steps):
                ends = episode_starts[step + 1][env] if step + 1 < n_steps else last_dones[env]
                if ends and times[step][env] < longest:
                    return True
                if abs(rewards[step][env] - rewards[step][0]) > 1e-6 * abs(rewards[step][0]):
                    return True
        return False

    def raise_by_novelty(self, observations, times, baselines, completed, queries, value_at_cut, found, remembered):
        """
        Raise each group sample's baseline (and each found env's value after the rollout) by the spread of the
        completed returns times the square root of its leverage over the mean leverage of the rows scored (the samples,
        then the queries): the leverage under the Gram of the rollout's group samples and every remembered sample,
        unweighted, each column but the constant's penalised by ridge times the rows' count times its variance.
        """
        keys = list(baselines)
        rows = [self.features(observations[step][env], times[step][env]) for step, env in keys]
        fitted_on = [*rows, *[sample.x for rollout in remembered for sample in rollout["samples"]]]
        n_columns, count = len(rows[0]), len(fitted_on)
        gram = [[sum(row[i] * row[j] for row in fitted_on) for j in range(n_columns)] for i in range(n_columns)]
        variances = []
        for j in range(n_columns):
            mean = sum(row[j] for row in fitted_on) / count
            variances.append(max(sum(row[j] ** 2 for row in fitted_on) / count - mean * mean, 0.0))
        largest = max(variances)
        floor = min(v for v in variances if v > 1e-12 * largest) if largest > 0 else 1.0
        for j in range(n_columns):
            gram[j][j] += self.baseline_kwargs["ridge"] * count * (1e-12 if j == 0 else max(variances[j], floor))
        leverages = []
        for row in [*rows, *queries]:
            solved = np.linalg.solve(np.array(gram), np.array(row))
            leverages.append(sum(x * y for x, y in zip(row, solved, strict=True)))
        mean_leverage = sum(leverages) / len(leverages)
        values = [completed[key] for key in keys]
        center = sum(values) / len(values)
        spread = (sum((value - center) ** 2 for value in values) / len(values)) ** 0.5
        for key, leverage in zip(keys, leverages, strict=False):
            baselines[key] += spread * math.sqrt(leverage / mean_leverage)
        for env, leverage in enumerate(leverages[len(rows) :]):
            if env in found:
                value_at_cut[env] += spread * math.sqrt(leverage / mean_leverage)

    def linear_fold(self, train, own, queries):
        """
        :param train: the samples fitted on (the other folds')
        :param own: the samples whose baselines are fitted
        :param queries: {env: features of its state after the rollout}, where returns are completed
        :return: the own samples' baselines {(step, env): value}, each env's value after the rollout ({} where the
            returns are not completed) and the fit
        """
        n_features = len((own or train or self.memory[-1]["samples"])[0].x)
        kwargs, level = self.baseline_kwargs, self.baseline_kwargs["level"]
        remembered = self.remembered(len(train), kwargs["memory"], kwargs["recency"], kwargs["memory_weight"])
        # (level, its memory): the level given, and with pooled_memory one level for the last pooled_memory rollouts
        candidates = [(level, remembered)]
        if kwargs["pooled_memory"] and self.memory:
            candidates.append(("pooled", self.remembered(len(train), kwargs["pooled_memory"], kwargs["pooled_recency"],
                                                         None)))  # fmt: skip
        completion = None
        if self.truncated_returns == "bootstrap":
            if remembered and self.last_fit is not None:  # the memory of the level given
                completion = self.last_fit
            else:
                # the complete returns of the other folds, and the remembered rollouts as they saw their returns
                complete = [sample for sample in train if sample.g == 0]
                if complete or remembered:
                    completion = self.ranged_fit(complete, remembered, None, CANDIDATE_SIZES[0], level)
        # under "previous" too, a fold without two training trajectories to halve keeps the level given
        if kwargs["pooled_choice"] == "previous" and len(candidates) > 1 and len({s.rank for s in train}) > 1:
            chosen = 1 if self.memory[-1]["prefers_pooled"] else 0
            for number, candidate in enumerate(candidates):
                _, candidate_size = self.chosen_fit(train, [candidate], completion, n_features)
                candidate_fit = self.iterated_fit(train, candidate, completion, candidate_size)
                for sample in own:
                    self.candidate_errors[number] += (value(candidate_fit, sample.x) - target(sample, completion)) ** 2
                if number == chosen:
                    fit = candidate_fit
        else:
            chosen, size = self.chosen_fit(train, candidates, completion, n_features)
            fit = self.iterated_fit(train, candidates[chosen], completion, size)
        if len(candidates) > 1:
            self.pooled_choices.append(chosen == 1)
        baselines = {(s.step, s.env): value(fit, s.x) for s in own}
        values = {}
        if completion is not None:
            values = {env: value(fit, query) for env, query in queries.items()}
        return baselines, values, fit

    def iterated_fit(self, train, candidate, completion, size):
        """:return: the candidate's fit (level, remembered) of ``size`` features, then refitted on its own completions"""
        level, remembered = candidate
        fit = self.ranged_fit(train, remembered, completion, size, level)
        if completion is not None:
            for _ in range(VALUE_ITERATIONS):
                fit = self.ranged_fit(train, remembered, fit, size, level)
        return fit

    def ranged_fit(self, rows, remembered, completion, size, level):
        """:return: the fit (``fit``) with the smallest and largest of the returns it was fitted on (``target_range``)"""
        low, high = self.target_range(rows, remembered, completion)
        return {"coefficients": self.fit(rows, remembered, completion, size, level), "low": low, "high": high}

    def remembers(self):
        """:return: whether the linear baseline keeps rollouts, for its fit or for its pooled candidate"""
        return self.baseline_kwargs["memory"] > 0 or self.baseline_kwargs["pooled_memory"] > 0

    def remembered(self, n_train, count, recency, cap):
        """
        :param n_train: the current samples fitted on
        :param count: the last ``count`` remembered rollouts are read
        :return: (weight, rollout) of each of them, oldest first: recency ** a, a rollouts back, all scaled so that
            together they weigh at most cap times n_train samples (no cap where it is None)
        """
        read = self.memory[max(0, len(self.memory) - count) :] if count else []
        raw = []
        for index in range(len(read)):
            raw.append(recency ** (len(read) - index))
        total = 0.0
        for weight, rollout in zip(raw, read, strict=True):
            total += weight * len(rollout["samples"])
        scale = 1.0  # the memory alone (no current sample): unscaled
        if cap is not None and total > 0 and n_train > 0 and total > cap * n_train:
            scale = cap * n_train / total
        return [(weight * scale, rollout) for weight, rollout in zip(raw, read, strict=True)]

    def chosen_fit(self, train, candidates, completion, n_features):
        """
        :param candidates: (level, remembered rollouts weighted for the whole of ``train``, as the package weighs them)
        :return: the index of the first candidate and the size of fit (the sizes in order where choose_size, else
            all the features) whose fit on one half of ``train`` (and its memory) predicts the other half best, summed
            both ways; without two halves, the first candidate, and all the features where it has a memory or the
            size is not chosen, else the time's alone
        """
        # the training trajectories, in the order they were dealt, alternate halves
        ranks = sorted({s.rank for s in train})
        halves = [[s for s in train if ranks.index(s.rank) % 2 == half] for half in (0, 1)]
        choose_size = self.baseline_kwargs["choose_size"]
        if not halves[0] or not halves[1] or (len(candidates) == 1 and not choose_size):
            return 0, n_features if candidates[0][1] or not choose_size else CANDIDATE_SIZES[0]
        sizes = [n_features]
        if choose_size:
            sizes = sorted({min(size, n_features) for size in (*CANDIDATE_SIZES, n_features)})
        best_error, best = math.inf, None
        for number, (level, remembered) in enumerate(candidates):
            for size in sizes:
                error = 0.0
                for half in (0, 1):
                    fit = self.ranged_fit(halves[1 - half], remembered, completion, size, level)
                    for sample in halves[half]:
                        error += (value(fit, sample.x) - target(sample, completion)) ** 2
                if best is None or error < best_error:
                    best_error, best = error, (number, size)
        return best

    @staticmethod
    def target_range(samples, remembered, completion):
        """:return: the smallest and largest of the samples' targets and of the remembered rollouts' returns"""
        low, high = math.inf, -math.inf
        for sample in samples:
            low, high = min(low, target(sample, completion)), max(high, target(sample, completion))
        for _, rollout in remembered:
            low, high = min(low, rollout["low"]), max(high, rollout["high"])
        return low, high

    def fit(self, rows, remembered, completion, size, level):
        """
        Weighted ridge regression of the targets on the first ``size`` features and the remembered rollouts' level
        columns (``level_row``); each coefficient but the constant's penalised by ridge times the weight of all rows
        times its column's weighted variance (at least the smallest one that is not ~0).

        :param rows: the current samples fitted on (weight 1; their level columns 0)
        :param remembered: (weight, rollout) of each remembered rollout
        :param completion: the fit that completes the cut returns, or None
        :return: the coefficients of the features (the level columns' dropped); None where there is no row
        """
        n_levels = len(self.level_row(0, len(remembered), level))
        n_columns = size + n_levels
        # each row: its columns, its weight, its sample and its level columns
        data = []
        for sample in rows:
            data.append(([*sample.x[:size], *[0.0] * n_levels], 1.0, sample, [0.0] * n_levels))
        for number, (weight, rollout) in enumerate(remembered):
            levels = self.level_row(number, len(remembered), level)
            for sample in rollout["samples"]:
                data.append(([*sample.x[:size], *levels], weight, sample, levels))
        if not data:
            return None
        total = sum(weight for _, weight, _, _ in data)
        # column by column, to take each sum over the rows in one pass
        columns = [[row[j] for row, _, _, _ in data] for j in range(n_columns)]
        weighted = [[weight * value for (_, weight, _, _), value in zip(data, column, strict=True)] for column in columns]
        gram = [[0.0] * n_columns for _ in range(n_columns)]
        for i in range(n_columns):
            for j in range(i, n_columns):
                gram[i][j] = gram[j][i] = sum(map(operator.mul, weighted[i], columns[j]))
        variances = []
        for j in range(n_columns):
            mean = sum(weighted[j]) / total
            variances.append(max(gram[j][j] / total - mean * mean, 0.0))
        largest = max(variances)
        floor = min(v for v in variances if v > 1e-12 * largest) if largest > 0 else 1.0
        ridge = self.baseline_kwargs["ridge"]
        for j in range(n_columns):
            gram[j][j] += ridge * total * (1e-12 if j == 0 else max(variances[j], floor))

        def solved(targets):
            moments = [sum(map(operator.mul, weighted[i], targets)) for i in range(n_columns)]
            return [float(value) for value in np.linalg.solve(np.array(gram), np.array(moments))]

        if self.baseline_kwargs["target"] == "returns" or self.gae_lambda == 1.0:
            return solved([target(sample, completion) for _, _, sample, _ in data])[:size]

        def lambda_targets(solution):
            following = self.lambda_returns(data, solution, size, completion)
            return [following[id(sample)] for _, _, sample, _ in data]

        # The lambda-returns are affine in the fit (its coefficients and level columns): read over no fit and over each
        # unit fit, they give the fit of the lambda-returns over a fit s as a + M s; the fit of its own is s = a + M s
        base = lambda_targets([0.0] * n_columns)
        moved = []
        for j in range(n_columns):
            unit = lambda_targets([1.0 if k == j else 0.0 for k in range(n_columns)])
            moved.append(solved([after - before for after, before in zip(unit, base, strict=True)]))
        system = np.eye(n_columns) - np.array(moved).T
        return [float(value) for value in np.linalg.solve(system, np.array(solved(base)))][:size]

    @staticmethod
    def level_row(number, n_remembered, level):
        """:return: the level columns of the remembered rollout ``number`` (oldest first) of ``n_remembered``"""
        if level == "own":
            return [1.0 if other == number else 0.0 for other in range(n_remembered)]
        if level == "trend":
            return [float(n_remembered - number)] if n_remembered else []
        return []

    def lambda_returns(self, data, solution, size, completion):
        """
        :return: {id(sample): its lambda-return} over the values of ``solution`` (the features' coefficients, then the
            remembered rollouts' level columns): ``r + gamma * ((1 - lambda) * v(next) + lambda * y(next))`` along the
            trajectory, ``r`` at its end, ``r + gamma * completion's value`` after a cut (where returns are completed)
        """
        lam = self.gae_lambda
        values, following = {}, {}
        for _, _, sample, levels in data:
            values[id(sample)] = dot(sample.x[:size], solution[:size]) + dot(levels, solution[size:])
        # a trajectory's later samples first
        for _, _, sample, _ in sorted(data, key=lambda row: -row[2].step):
            if sample.nxt is not None:
                nxt = id(sample.nxt)
                following[id(sample)] = sample.r + self.gamma * ((1 - lam) * values[nxt] + lam * following[nxt])
            elif sample.g and completion is not None:
                following[id(sample)] = sample.r + self.gamma * value(completion, sample.q)
            else:
                following[id(sample)] = sample.r
        return following

    def knn_fold(self, train, own, queries):
        """
        :param train: the samples fitted on (the other folds'), standardised
        :param own: the samples whose baselines are fitted, standardised
        :param queries: {env: standardised features of its state after the rollout}
        :return: the own samples' baselines (the mean target of the nearest train samples, their cut returns completed
            with the values), each env's value after the rollout (the mean return of the nearest complete train
            samples; {} where there is none) and no fit
        """
        values = {}
        complete = [(s.x, s.y) for s in train if s.g == 0]
        if self.truncated_returns == "bootstrap" and complete:
            values = {env: self.nearest_mean(complete, query) for env, query in queries.items()}
        targets = [(s.x, s.y + s.g * values.get(s.env, 0.0)) for s in train]
        return {(s.step, s.env): self.nearest_mean(targets, s.x) for s in own}, values, None

    def nearest_mean(self, candidates, query):
        """:return: the mean target of the n_neighbors candidates (x, target) nearest the query, every ceil(n /
        max_samples)-th candidate searched"""
        stride = -(-len(candidates) // self.baseline_kwargs["max_samples"])
        searched = [candidates[index] for index in range(0, len(candidates), stride)]
        distances = sorted((sum((a - b) ** 2 for a, b in zip(x, query, strict=True)), y) for x, y in searched)
        nearest = distances[: self.baseline_kwargs["n_neighbors"]]
        return sum(y for _, y in nearest) / len(nearest)

    @staticmethod
    def standardised(samples, queries):
        """:return: the samples and queries with every feature standardised by the mean and std of the samples'"""
        n_features = len(samples[0].x)
        means = [sum(s.x[j] for s in samples) / len(samples) for j in range(n_features)]
        stds = [(sum((s.x[j] - means[j]) ** 2 for s in samples) / len(samples)) ** 0.5 for j in range(n_features)]
        stds = [std if std != 0 else 1.0 for std in stds]

        def scaled(row):
            return [(value - mean) / std for value, mean, std in zip(row, means, stds, strict=True)]

        scaled_samples = [Sample(s.step, s.env, scaled(s.x), s.y, s.g, None, s.fold, s.rank, s.r) for s in samples]
        return scaled_samples, {env: scaled(query) for env, query in queries.items()}

    def features(self, obs, time):
        """
        A sample's features: for knn, [*observation, time] (standardised later); for linear, [1, t, t^2, t^3, *z, *z^2,
        *Fourier features of z] with t = time / 100 and z the observation clipped to [-10, 10] (randomly projected on
        64 dimensions where it has more).
        """
        flat = [float(x) for x in np.asarray(obs, dtype=np.float64).reshape(-1)]
        if self.baseline == "knn":
            return [*flat, float(time)]
        clipped = [min(max(x, -10.0), 10.0) for x in flat]
        projection, weights, phases = self.random_maps(len(flat))
        z = clipped
        if projection is not None:
            z = [sum(x * projection[j][k] for j, x in enumerate(clipped)) for k in range(PROJECTED)]
        count = len(phases)
        fourier = []
        for k in range(count):
            angle = sum(value * weights[j][k] for j, value in enumerate(z)) + phases[k]
            fourier.append(math.sqrt(2.0 / count) * math.cos(angle))
        t = time / 100.0
        return [1.0, t, t * t, t * t * t, *z, *[value * value for value in z], *fourier]

    def random_maps(self, n_dims):
        """
        :return: the projection (n_dims x 64, normal of std 1/8; None for 64 dimensions or fewer), then the Fourier
            features' W (normal of std 1 / scale, one row per projected dimension) and b (uniform in [0, 2 pi)), drawn
            in this order from a NumPy generator seeded with fourier_seed (None: 0), as lists
        """
        if n_dims not in self.random_maps_of:
            count = self.baseline_kwargs["fourier"]
            rng = np.random.default_rng(self.baseline_kwargs["fourier_seed"] or 0)
            projection = None
            if n_dims > PROJECTED:
                projection = rng.normal(0.0, 1.0 / math.sqrt(PROJECTED), size=(n_dims, PROJECTED)).tolist()
            scale = self.baseline_kwargs["fourier_scale"] or math.sqrt(n_dims)
            weights = rng.normal(0.0, 1.0 / scale, size=(min(n_dims, PROJECTED), count)).tolist()
            phases = rng.uniform(0.0, 2 * math.pi, size=count).tolist()
            self.random_maps_of[n_dims] = (projection, weights, phases)
        return self.random_maps_of[n_dims]

    def episode_times(self, episode_starts):
        """Steps since each sample's episode began, carried on from the previous rollout; (n_steps, n_envs)."""
        n_steps = len(episode_starts)
        times = np.zeros((n_steps, self.n_envs), dtype=np.int64)
        for env in range(self.n_envs):
            for step in range(n_steps):
                if episode_starts[step][env]:
                    times[step][env] = 0
                else:
                    times[step][env] = self.time_of_next_step[env]
                self.time_of_next_step[env] = times[step][env] + 1
        return times

    def trajectories(self, episode_starts):
        """Runs of one env's samples between episode starts inside the rollout: a list of lists of (step, env)."""
        trajectories = []
        for env in range(self.n_envs):
            for step in range(len(episode_starts)):
                if step == 0 or episode_starts[step][env]:
                    trajectories.append([])
                trajectories[-1].append((step, env))
        return trajectories

    def returns(self, rewards, trajectories):
        """Discounted sum of each trajectory's rewards from every sample on; (n_steps, n_envs)."""
        returns = np.zeros((len(rewards), self.n_envs))
        for trajectory in trajectories:
            running = 0.0
            for step, env in reversed(trajectory):
                running = rewards[step][env] + self.gamma * running
                returns[step][env] = running
        return returns

    @staticmethod
    def cut_trajectories(trajectories, n_steps, last_dones):
        """The trajectories whose episode the rollout's end cut."""
        return [t for t in trajectories if t[-1][0] == n_steps - 1 and not last_dones[t[-1][1]]]

    @staticmethod
    def spread(levels, bins_by_level, key_of, step, env):
        """Std of the first visits' returns in the sample's bin at the first of the levels that has two and a spread."""
        for level, bins in zip(levels, bins_by_level, strict=True):
            values = [value for _, value in bins[key_of(level, step, env)]]
            if len(values) >= 2:
                mean = sum(values) / len(values)
                std = (sum((value - mean) ** 2 for value in values) / len(values)) ** 0.5
                if std > 0:
                    return std
        return 1.0


def target(sample, completion):
    """:return: the sample's return, completed (where cut) by the fit ``completion``'s value of its env's next state"""
    if completion is None or not sample.g:
        return sample.y
    return sample.y + sample.g * value(completion, sample.q)


def value(fit, features):
    """:return: the fit's value of the features, within the range of the returns it was fitted on"""
    return clip(dot(features, fit["coefficients"]), fit["low"], fit["high"])


def dot(features, coefficients):
    """:return: the fit's value: its coefficients times the first features"""
    return sum(features[j] * coefficients[j] for j in range(len(coefficients)))


def clip(value, low, high):
    return min(max(value, low), high)
