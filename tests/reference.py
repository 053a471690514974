"""
A deliberately slow, loop-by-loop implementation of the paper's Algorithm 2 (GPG advantage estimation), with this
package's options (leave_one_out, min_bin_count, truncated_returns, advantage_scale), to check GroupRolloutBuffer
against.

It shares no code with sb3_gpg: plain Python loops over envs, steps, trajectories and bins, with dicts of lists.
The state-aware options (gae_lambda, the fitted baselines "linear" and "knn") are loops too; only the ridge
regression's linear system is solved by NumPy.
"""

import numpy as np

COARSER = {
    "spatial_time": "time",
    "time": "universal",
    "spatial": "universal",
    "state": "universal",
    "rollout_step": "universal",
}


class ReferenceGPG:
    """
    Feed it rollouts one after the other (episode times carry across rollouts, as in the buffer).

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
    :param baseline_kwargs: n_folds, ridge, memory, recency, fourier, fourier_scale and fourier_seed (linear),
        n_neighbors and max_samples (knn: every ceil(n / max_samples)-th training sample is searched); with memory K,
        the linear fit also reads the group samples of the last K rollouts fed, the one k rollouts back each weighing
        recency ** k; with fourier D, its features end with D random Fourier features of the clipped observation
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
    ):
        self.n_envs = n_envs
        self.gamma = gamma
        self.binning = binning
        self.bin_size = bin_size
        self.leave_one_out = leave_one_out
        self.min_bin_count = min_bin_count
        self.truncated_returns = truncated_returns
        self.advantage_scale = advantage_scale
        self.gae_lambda = gae_lambda
        self.baseline = baseline
        self.baseline_kwargs = {"n_folds": 2, "ridge": 1e-5, "n_neighbors": 16, "max_samples": 1024, "memory": 0,
                                "recency": 1.0, "fourier": 0, "fourier_scale": None, "fourier_seed": 0,
                                **(baseline_kwargs or {})}  # fmt: skip
        self.time_of_next_step = [0] * n_envs
        # the (features, return) pairs of the group samples of each rollout remembered, oldest first
        self.memory = []

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
        if self.truncated_returns == "bootstrap":
            # The state after the rollout: its observation, the next episode time, rollout row n_steps
            next_times = np.array([self.time_of_next_step])
            complete_samples = [
                (step, env) for t in trajectories if not any(t is cut for cut in cut_trajectories) for step, env in t
            ]
            # the linear baseline's memory completes them where the rollout has no complete return
            remembers = self.baseline == "linear" and bool(self.memory)
            for trajectory in cut_trajectories:
                env = trajectory[-1][1]
                value = 0.0
                if self.baseline != "bins" and (complete_samples or remembers):
                    train = [
                        (self.features(observations[st][en], times[st][en]), returns[st][en]) for st, en in complete_samples
                    ]
                    query = self.features(last_obs[env], self.time_of_next_step[env])
                    value = self.fitted_value(train, query)
                    levels_to_try = []
                else:
                    levels_to_try = levels
                for level in levels_to_try:
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
        group = [t for t in trajectories if in_group[t[0][0]][t[0][1]]]
        # dealt to folds in the order they start in the rollout: by row, then by env
        group = sorted(group, key=lambda t: (t[0][0], t[0][1]))
        if self.baseline != "bins" and len(group) >= 2:
            n_folds = min(self.baseline_kwargs["n_folds"], len(group))
            samples = [[(step, env) for step, env in t] for t in group]
            for fold in range(n_folds):
                train = [
                    (self.features(observations[step][env], times[step][env]), returns[step][env])
                    for number, t in enumerate(samples) if number % n_folds != fold for step, env in t
                ]  # fmt: skip
                group_features = [self.features(observations[step][env], times[step][env]) for t in samples for step, env in t]
                for number, t in enumerate(samples):
                    if number % n_folds == fold:
                        for step, env in t:
                            query = self.features(observations[step][env], times[step][env])
                            baselines[step][env] = self.fitted_value(train, query, scale_rows=group_features)
        elif self.baseline == "linear" and self.memory and group:
            # a single trajectory: its baseline from the remembered rollouts alone, all other trajectories
            for step, env in group[0]:
                baselines[step][env] = self.fitted_value([], self.features(observations[step][env], times[step][env]))
        if self.baseline == "linear" and self.baseline_kwargs["memory"] > 0:
            samples = [(step, env) for t in trajectories for step, env in t if in_group[step][env]]
            remembered = [
                (self.features(observations[step][env], times[step][env]), returns[step][env]) for step, env in samples
            ]
            self.memory = [*self.memory, remembered][-self.baseline_kwargs["memory"] :]
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

    def features(self, obs, time):
        """A sample's features for the fitted baselines: rllab's for linear, (obs, time) for knn (standardised later)."""
        flat = [float(x) for x in np.asarray(obs, dtype=np.float64).reshape(-1)]
        if self.baseline == "knn":
            return [*flat, float(time)]
        clipped = [min(max(x, -10.0), 10.0) for x in flat]
        t = time / 100.0
        return [*clipped, *[x * x for x in clipped], t, t * t, t * t * t, 1.0, *self.fourier_features(clipped)]

    def fourier_features(self, clipped):
        """
        sqrt(2 / D) cos(sum_j x_j W[j][k] + b[k]) for k < D, W drawn first (normal, std 1 / scale, one row per
        dimension), then b (uniform in [0, 2 pi)), from a NumPy generator seeded with fourier_seed.
        """
        count = self.baseline_kwargs["fourier"]
        if not count:
            return []
        rng = np.random.default_rng(self.baseline_kwargs["fourier_seed"])
        scale = self.baseline_kwargs["fourier_scale"] or len(clipped) ** 0.5
        weights = [[float(w) for w in row] for row in rng.normal(0.0, 1.0 / scale, size=(len(clipped), count))]
        phases = [float(b) for b in rng.uniform(0.0, 2 * np.pi, size=count)]
        projections = [sum(x * weights[j][k] for j, x in enumerate(clipped)) + phases[k] for k in range(count)]
        return [(2.0 / count) ** 0.5 * float(np.cos(value)) for value in projections]

    def fitted_value(self, train, query, scale_rows=None):
        """
        The fitted baseline's value of a query from (features, return) pairs. knn standardises with the mean and std of
        ``scale_rows`` (the whole group's features when cross-fitting), else of the training samples.
        """
        if self.baseline == "linear":
            size = len(query)
            # this rollout's samples weigh 1, the remembered rollout k rollouts back recency ** k
            rows = [(x, y, 1.0) for x, y in train]
            for age, rollout in enumerate(reversed(self.memory), start=1):
                rows += [(x, y, self.baseline_kwargs["recency"] ** age) for x, y in rollout]
            gram = [[sum(w * x[i] * x[j] for x, _, w in rows) + (self.baseline_kwargs["ridge"] if i == j else 0.0)
                     for j in range(size)] for i in range(size)]  # fmt: skip
            moments = [sum(w * x[i] * y for x, y, w in rows) for i in range(size)]
            weights = np.linalg.solve(np.array(gram), np.array(moments))
            prediction = sum(w * q for w, q in zip(weights, query, strict=True))
            # no value outside the returns fitted on
            return min(max(prediction, min(y for _, y, _ in rows)), max(y for _, y, _ in rows))
        rows = [x for x, _ in train] if scale_rows is None else scale_rows
        means = [sum(row[i] for row in rows) / len(rows) for i in range(len(query))]
        stds = [(sum((row[i] - means[i]) ** 2 for row in rows) / len(rows)) ** 0.5 or 1.0 for i in range(len(query))]

        def scaled(row):
            return [(value - mean) / std for value, mean, std in zip(row, means, stds, strict=True)]

        stride = -(-len(train) // self.baseline_kwargs["max_samples"])
        train = train[::stride]
        target = scaled(query)
        distances = sorted((sum((a - b) ** 2 for a, b in zip(scaled(x), target, strict=True)), y) for x, y in train)
        nearest = distances[: self.baseline_kwargs["n_neighbors"]]
        return sum(y for _, y in nearest) / len(nearest)

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
