"""
Variance probe: on a MuJoCo task, how much of the variance of the discounted return any state baseline
could explain, and how much GPG's estimators explain on rollouts of the same policy.

For each checkpoint of an agent trained with the RL Zoo CLI (``python -m sb3_gpg.train --algo gpg --env ENV -f LOGS``,
or rl_zoo3's PPO with ``--algo ppo``):

1. States: ``--episodes`` episodes of the agent's stochastic policy (as in training, observations normalised with the
   run's frozen VecNormalize statistics where it has them); ``--n-states`` states drawn uniformly among all the steps
   visited. Each state is the MuJoCo ``qpos``/``qvel`` and the TimeLimit's step count.
2. Continuations: from each state restored (``set_state``, the observation recomputed with ``_get_obs``, the time
   limit's step count restored), ``--n-continuations`` runs of at most ``--horizon`` steps of the stochastic policy,
   each with its own action noise; their discounted returns with the agent's gamma, on the env's raw rewards (not
   bootstrapped after the horizon).
3. Decomposition of those returns (``sb3_gpg_bench.variance_probe.decompose``): the share between states (one-way ANOVA
   corrected for the finite number of continuations: the most that any state baseline can explain), the share explained
   by the state's episode time alone (a cubic in the time), and the rest: the noise of the future actions.
4. Estimators: for time bins and ``baseline="linear"`` / ``"knn"``, each with gae_lambda 1.0 and 0.95, a GPG model
   with the agent's policy weights collects ``--rollouts`` rollouts of ``--n-envs`` x ``--n-steps`` (the same samples
   for every setting: same seeds) and reports 1 - Var(advantages) / Var(returns) over the rollout buffer, and the
   effective horizon 1 / (1 - gamma * lambda), and the share of the advantages' sum of squares that sits in each env's
   last effective horizon of rows before the rollout's end (as training logs it, ``gpg/end_advantage_share``): where the
   rollout's end cuts returns (``truncated_returns="keep"``), those few samples can carry much of it, and the advantage
   normalisation shrinks the rest by as much.

Writes ``variance_probe.json`` (every number) and ``variance_probe.md`` (tables per task and checkpoint) to ``--out``:

    python scripts/variance_probe.py --algo gpg --env HalfCheetah-v5 -f logs --out benchmarks/variance_probe
"""

import argparse
import copy
import json
import re
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
from tqdm import tqdm

from sb3_gpg import GPG
from sb3_gpg.estimator.returns import env_major
from sb3_gpg_bench.variance_probe import decompose

ALGOS: dict[str, type[BaseAlgorithm]] = {"gpg": GPG, "ppo": PPO}
ESTIMATORS = [
    (name, baseline, gae_lambda)
    for name, baseline in (("time bins", "bins"), ("linear", "linear"), ("knn", "knn"))
    for gae_lambda in (1.0, 0.95)
]
REWARD_NOTE = (
    "The probe's returns are discounted sums of the env's raw rewards; training normalised the rewards (VecNormalize), "
    "which rescales every return by one factor and leaves the shares unchanged."
)
RAW_REWARD_NOTE = "The probe's returns are discounted sums of the env's raw rewards, as in training."


def find_run(folder: Path, algo: str, env_id: str, exp_id: int) -> Path:
    """
    :param folder: the RL Zoo log folder (``-f``)
    :param exp_id: the run's id (``ENV_<id>``), 0: the latest
    :return: the run's folder, ``folder/algo/ENV_<id>``
    """
    if exp_id == 0:
        ids = [
            int(m.group(1))
            for p in (folder / algo).glob(f"{env_id}_*")
            if (m := re.fullmatch(rf"{re.escape(env_id)}_(\d+)", p.name))
        ]
        if not ids:
            raise FileNotFoundError(f"no run of {algo} on {env_id} under {folder / algo}")
        exp_id = max(ids)
    run = folder / algo / f"{env_id}_{exp_id}"
    if not run.is_dir():
        raise FileNotFoundError(f"no run folder {run}")
    return run


def find_checkpoints(run: Path, env_id: str, which: list[str]) -> list[dict[str, Any]]:
    """
    :param run: the run's folder
    :param which: ``all`` (every ``rl_model_<steps>_steps.zip`` and the final model), ``final``, or step counts
    :return: per checkpoint: its label, steps (None for the final model), model path, VecNormalize statistics path
        (None where the run has none) and which statistics they are
    """
    saved = {
        int(m.group(1)): p
        for p in run.glob("rl_model_*_steps.zip")
        if (m := re.fullmatch(r"rl_model_(\d+)_steps\.zip", p.name))
    }
    final_stats = run / env_id / "vecnormalize.pkl"
    chosen: list[int | None] = []
    for item in which:
        if item == "all":
            chosen += [*sorted(saved), None]
        elif item == "final":
            chosen.append(None)
        elif item.isdigit() and int(item) in saved:
            chosen.append(int(item))
        else:
            raise ValueError(f"no checkpoint {item!r} in {run}: saved steps {sorted(saved)} (or 'final', 'all')")
    checkpoints = []
    for steps in dict.fromkeys(chosen):
        model = run / f"{env_id}.zip" if steps is None else saved[steps]
        if not model.exists():
            raise FileNotFoundError(f"no final model {model} (an interrupted run? name checkpoint steps instead)")
        own_stats = run / f"rl_model_vecnormalize_{steps}_steps.pkl"
        if steps is not None and own_stats.exists():
            stats, note = own_stats, "the checkpoint's own"
        elif final_stats.exists():
            stats = final_stats
            note = "the run's final (rl_zoo3 saves none with its checkpoints)" if steps is not None else "the run's final"
        else:
            stats, note = None, "none (the run did not normalise)"
        checkpoints.append(dict(label="final" if steps is None else f"{steps} steps", steps=steps, model=model,
                                vecnormalize=stats, vecnormalize_note=note))  # fmt: skip
    return checkpoints


class Observer:
    """The policy's view of raw observations: the run's frozen VecNormalize statistics applied, or nothing."""

    def __init__(self, env_id: str, stats_path: Path | None):
        """:param stats_path: the run's ``vecnormalize.pkl``, None for none"""
        self.stats: VecNormalize | None = None
        if stats_path is not None:
            self.stats = VecNormalize.load(str(stats_path), DummyVecEnv([lambda: gym.make(env_id)]))
            self.stats.training = False

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return obs if self.stats is None else self.stats.normalize_obs(obs)

    @property
    def normalized_rewards(self) -> bool:
        return self.stats is not None and bool(self.stats.norm_reward)


def time_limit(env: gym.Env) -> gym.wrappers.TimeLimit | None:
    """:return: the env's TimeLimit wrapper, None where it has none"""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            return env
        env = env.env
    return None


def act(agent: BaseAlgorithm, observer: Observer, obs: np.ndarray) -> np.ndarray:
    """:return: the stochastic policy's actions for a batch of raw observations, clipped to the action space as in training"""
    actions, _ = agent.predict(observer(obs), deterministic=False)
    return actions


def collect_states(agent: BaseAlgorithm, env: gym.Env, observer: Observer, n_states: int, n_episodes: int,
                   rng: np.random.Generator, seed: int) -> list[dict[str, Any]]:  # fmt: skip
    """
    :param env: a MuJoCo env with a TimeLimit
    :param n_episodes: episodes to run; the states are drawn uniformly among all their steps, without replacement
    :return: the states: ``qpos``, ``qvel``, ``time`` (the TimeLimit's step count) and ``obs`` (the raw observation)
    """
    visited: list[dict[str, Any]] = []
    for episode in range(n_episodes):
        obs, _ = env.reset(seed=seed + episode)
        time = 0
        done = False
        while not done:
            data = env.unwrapped.data
            visited.append(dict(qpos=data.qpos.copy(), qvel=data.qvel.copy(), time=time, obs=np.asarray(obs).copy()))
            obs, _, terminated, truncated, _ = env.step(act(agent, observer, obs[None])[0])
            done = terminated or truncated
            time += 1
    if len(visited) < n_states:
        raise ValueError(f"{n_episodes} episodes visited {len(visited)} states, fewer than --n-states {n_states}")
    return [visited[i] for i in sorted(rng.choice(len(visited), size=n_states, replace=False))]


def restore(env: gym.Env, state: dict[str, Any]) -> np.ndarray:
    """:return: the observation of the restored state, recomputed from the MuJoCo data"""
    env.unwrapped.set_state(state["qpos"], state["qvel"])
    limit = time_limit(env)
    if limit is not None:
        limit._elapsed_steps = state["time"]
    return env.unwrapped._get_obs()


def continue_from(agent: BaseAlgorithm, envs: list[gym.Env], observer: Observer, state: dict[str, Any], horizon: int,
                  gamma: float) -> tuple[np.ndarray, np.ndarray, float]:  # fmt: skip
    """
    :param envs: one env per continuation, stepped in lockstep (the policy sees them as a batch)
    :return: the continuations' discounted returns and lengths, and the largest difference between a restored
        observation and the one the state was saved with (0 where restoring is exact)
    """
    obs = np.stack([restore(env, state) for env in envs])
    mismatch = float(np.abs(obs - state["obs"]).max())
    returns = np.zeros(len(envs))
    lengths = np.zeros(len(envs), dtype=int)
    running = np.ones(len(envs), dtype=bool)
    for step in range(horizon):
        actions = act(agent, observer, obs)
        for i in np.flatnonzero(running):
            obs[i], reward, terminated, truncated, _ = envs[i].step(actions[i])
            returns[i] += gamma**step * float(reward)
            lengths[i] += 1
            running[i] = not (terminated or truncated)
        if not running.any():
            break
    return returns, lengths, mismatch


def load_weights(model: GPG, agent: BaseAlgorithm) -> dict[str, Any]:
    """
    Loads the agent's actor into the GPG model: every parameter of GPG's actor-only policy, by name; the agent's
    critic (PPO's value network) is left out.

    :return: what was left out
    :raises ValueError: where the agent lacks a parameter of the GPG policy or its shape differs (another net_arch)
    """
    source = agent.policy.state_dict()
    target = model.policy.state_dict()
    missing = sorted(set(target) - set(source))
    mismatched = sorted(k for k in set(target) & set(source) if target[k].shape != source[k].shape)
    if missing or mismatched:
        raise ValueError(f"the agent's policy does not fit GPG's actor: missing {missing}, other shapes {mismatched}")
    model.policy.load_state_dict({key: source[key] for key in target})
    return {"left_out": sorted(set(source) - set(target))}


def probe_estimators(agent: BaseAlgorithm, env_id: str, stats_path: Path | None, args: argparse.Namespace,
                     gamma: float) -> dict[str, Any]:  # fmt: skip
    """
    :return: per estimator setting, the explained variance 1 - Var(advantages) / Var(returns) over each rollout and
        their mean, the baselines' own out-of-fold explained variance (``baseline_explained_variance``), and the
        effective horizon; or the error where the agent's weights do not load
    """
    n_steps = args.n_steps or getattr(agent, "n_steps", 512)
    truncated = args.truncated_returns or getattr(agent, "truncated_returns", "keep")
    policy_kwargs = dict(agent.policy_kwargs)  # PPO's critic settings among them: GPG ignores them (warning silenced below)
    rows, first_rewards, same_samples, left_out = [], None, True, None
    for name, baseline, gae_lambda in ESTIMATORS:
        env = make_vec_env(env_id, n_envs=args.n_envs, seed=args.seed)
        stats = Observer(env_id, stats_path).stats
        if stats is not None:
            env = VecNormalize(env, norm_obs=stats.norm_obs, norm_reward=False, clip_obs=stats.clip_obs, gamma=gamma,
                               training=False)  # fmt: skip
            env.obs_rms = copy.deepcopy(stats.obs_rms)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # GPG's notes on PPO's critic settings, ignored as they say
            model = GPG("MlpPolicy", env, n_steps=n_steps, batch_size=n_steps * args.n_envs, gamma=gamma,
                        gae_lambda=gae_lambda, baseline=baseline, truncated_returns=truncated, policy_kwargs=policy_kwargs,
                        use_sde=getattr(agent, "use_sde", False), seed=args.seed, device="cpu")  # fmt: skip
        try:
            left_out = load_weights(model, agent)["left_out"]
        except (ValueError, RuntimeError) as error:
            return {"error": f"GPG's policy could not take the agent's weights: {error}"}
        _, callback = model._setup_learn(n_steps * args.n_envs * args.rollouts, callback=None)
        explained, baseline_explained, end_shares, end_sample_shares = [], [], [], []
        for rollout in range(args.rollouts):
            model.collect_rollouts(model.env, callback, model.rollout_buffer, n_steps)
            buffer = model.rollout_buffer
            # env-major, as the buffer's in_loss
            returns, advantages = env_major(buffer.returns), env_major(buffer.advantages)
            if buffer.in_loss is not None:
                returns, advantages = returns[buffer.in_loss], advantages[buffer.in_loss]
            explained.append(float(1.0 - advantages.var() / returns.var()) if returns.var() > 0 else float("nan"))
            baseline_explained.append(float(buffer.group_stats["baseline_explained_variance"]))
            end_shares.append(float(buffer.group_stats["end_advantage_share"]))
            end_sample_shares.append(float(buffer.group_stats["end_sample_share"]))
            if rollout == 0:
                if first_rewards is None:
                    first_rewards = buffer.rewards.copy()
                same_samples &= bool(np.array_equal(first_rewards, buffer.rewards))
        rows.append(dict(setting=name, baseline=baseline, gae_lambda=gae_lambda,
                         effective_horizon=1.0 / (1.0 - gamma * gae_lambda), explained_variance=float(np.mean(explained)),
                         explained_variance_per_rollout=explained,
                         baseline_explained_variance=float(np.mean(baseline_explained)),
                         end_rows_share=float(np.mean(end_sample_shares)),
                         end_square_share=float(np.mean(end_shares))))  # fmt: skip
        env.close()
    return dict(n_steps=n_steps, n_envs=args.n_envs, rollouts=args.rollouts, truncated_returns=truncated,
                same_samples=same_samples, critic_left_out=left_out, settings=rows)  # fmt: skip


def probe_checkpoint(env_id: str, algo: str, checkpoint: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """:return: every number of one checkpoint: its states' returns, the decomposition and the estimators'"""
    agent = ALGOS[algo].load(str(checkpoint["model"]), device="cpu")
    gamma = float(agent.gamma)
    observer = Observer(env_id, checkpoint["vecnormalize"])
    th.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    env = gym.make(env_id)
    limit = time_limit(env)
    if limit is None or not hasattr(env.unwrapped, "set_state"):
        raise ValueError(f"{env_id}: the probe needs a MuJoCo env (set_state) with a TimeLimit")
    states = collect_states(agent, env, observer, args.n_states, args.episodes, rng, args.seed)
    envs = [gym.make(env_id) for _ in range(args.n_continuations)]
    for i, continuation_env in enumerate(envs):
        continuation_env.reset(seed=args.seed + 10_000 + i)
    returns, lengths, mismatch = [], [], 0.0
    for state in tqdm(states, desc=f"{env_id} {checkpoint['label']}", unit="state"):
        state_returns, state_lengths, state_mismatch = continue_from(agent, envs, observer, state, args.horizon, gamma)
        returns.append(state_returns)
        lengths.append(state_lengths)
        mismatch = max(mismatch, state_mismatch)
    returns_array = np.asarray(returns)
    times = np.array([state["time"] for state in states])
    max_time = float(limit._max_episode_steps)
    result = dict(
        env=env_id, algo=algo, checkpoint=checkpoint["label"], steps=checkpoint["steps"], model=str(checkpoint["model"]),
        vecnormalize=None if checkpoint["vecnormalize"] is None else str(checkpoint["vecnormalize"]),
        vecnormalize_statistics=checkpoint["vecnormalize_note"], gamma=gamma, horizon=args.horizon,
        discount_left_after_horizon=gamma**args.horizon, max_episode_steps=max_time,
        reward_note=REWARD_NOTE if observer.normalized_rewards else RAW_REWARD_NOTE,
        restore_max_obs_difference=mismatch, n_states=len(states), n_continuations=args.n_continuations,
        state_times=times.tolist(), returns=returns_array.tolist(), mean_continuation_length=float(np.mean(lengths)),
        decomposition=decompose(returns_array, times, max_time),
    )  # fmt: skip
    if not args.skip_estimators:
        result["estimators"] = probe_estimators(agent, env_id, checkpoint["vecnormalize"], args, gamma)
    return result


def number(value: float) -> str:
    """:return: the value with two decimals, or in scientific notation where it is that far from [-1, 1]"""
    return f"{value:.2f}" if abs(value) < 1000 else f"{value:.1e}"


def markdown(results: list[dict[str, Any]]) -> str:
    """:return: the Markdown tables of the results: the decomposition, then the estimators, per task and checkpoint"""
    lines = [
        "# Variance probe",
        "",
        "Share of the variance of the discounted return (K continuations of at most H steps from each of N states). "
        "Between states: the most any state baseline can explain. Time: what the episode time alone explains. "
        "Future actions: the noise no baseline removes.",
        "",
        "| Task | Checkpoint | N x K, H | gamma | Between states | Time | State beyond time | Future actions | Mean return |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        d = r["decomposition"]
        lines.append(f"| {r['env']} | {r['checkpoint']} | {r['n_states']} x {r['n_continuations']}, {r['horizon']} "
                     f"| {r['gamma']:g} | {d['between_share']:.2f} | {d['time_share']:.2f} "
                     f"| {d['state_beyond_time_share']:.2f} | {d['action_noise_share']:.2f} "
                     f"| {np.mean(r['returns']):.1f} |")  # fmt: skip
    lines += [
        "",
        "What GPG's estimators explain on rollouts of the same policy: 1 - Var(advantages) / Var(returns) over the rollout "
        "buffer (mean over the rollouts, then each rollout's), the baseline's own out-of-fold explained variance (mean), "
        "the effective horizon 1 / (1 - gamma * lambda), and the share of the advantages' sum of squares in each env's "
        "last effective horizon of rows before the rollout's end (the share of the samples there beside it).",
        "",
        "| Task | Checkpoint | Setting | Cut returns | lambda | Effective horizon | 1 - Var(A)/Var(R) | Per rollout "
        "| Baseline's EV | A² at the rollout's end (of the samples) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        estimators = r.get("estimators")
        if estimators is None:
            continue
        if "error" in estimators:
            lines.append(f"| {r['env']} | {r['checkpoint']} | {estimators['error']} | | | | | | | |")
            continue
        for s in estimators["settings"]:
            end = f"{s['end_square_share']:.2f} ({s['end_rows_share']:.2f})"
            lines.append(f"| {r['env']} | {r['checkpoint']} | {s['setting']} | {estimators['truncated_returns']} "
                         f"| {s['gae_lambda']:g} "
                         f"| {s['effective_horizon']:.1f} | {number(s['explained_variance'])} "
                         f"| {' / '.join(map(number, s['explained_variance_per_rollout']))} "
                         f"| {number(s['baseline_explained_variance'])} | {end} |")  # fmt: skip
    notes = [
        f"- {r['env']}, {r['checkpoint']}: {r['reward_note']} VecNormalize statistics: {r['vecnormalize_statistics']}."
        for r in results
    ]
    return "\n".join([*lines, "", *notes, ""])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--algo", choices=sorted(ALGOS), default="gpg", help="the agent's algorithm (the RL Zoo CLI's --algo)")
    parser.add_argument("--env", nargs="+", required=True, help="MuJoCo env ids, e.g. HalfCheetah-v5")
    parser.add_argument("-f", "--folder", type=Path, default=Path("logs"), help="the RL Zoo log folder")
    parser.add_argument("--exp-id", type=int, default=0, help="the run's id (ENV_<id>); 0: the latest")
    parser.add_argument("--checkpoints", nargs="+", default=["all"],
                        help="'all' (every rl_model_<steps>_steps.zip, then the final model), 'final', or steps")  # fmt: skip
    parser.add_argument("--n-states", type=int, default=30, help="states N")
    parser.add_argument("--n-continuations", type=int, default=8, help="continuations K per state (at least 2)")
    parser.add_argument("--horizon", type=int, default=300, help="steps H of a continuation at most")
    parser.add_argument("--episodes", type=int, default=10, help="episodes whose steps the states are drawn from")
    parser.add_argument("--n-envs", type=int, default=8, help="the estimators' group: envs per rollout")
    parser.add_argument(
        "--n-steps", type=int, default=None, help="the estimators' steps per env and rollout; default: the agent's"
    )
    parser.add_argument(
        "--rollouts", type=int, default=3, help="the estimators' rollouts (their explained variances are averaged)"
    )
    parser.add_argument("--truncated-returns", choices=["keep", "mask", "bootstrap"], default=None,
                        help="the estimators' truncated_returns; default: the agent's (GPG), else keep")  # fmt: skip
    parser.add_argument("--skip-estimators", action="store_true", help="only the decomposition")
    parser.add_argument("--seed", type=int, default=0, help="seed of the episodes, the states drawn, the action noise")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/variance_probe"), help="folder of the JSON and the table")
    args = parser.parse_args(argv)
    if args.n_continuations < 2:
        parser.error("--n-continuations must be at least 2")
    return args


def main(argv: list[str] | None = None) -> None:
    """
    :param argv: the command line, without the program's name (None: sys.argv)
    """
    args = parse_args(argv)
    th.set_num_threads(1)
    results = []
    for env_id in args.env:
        run = find_run(args.folder, args.algo, env_id, args.exp_id)
        for checkpoint in find_checkpoints(run, env_id, args.checkpoints):
            results.append(probe_checkpoint(env_id, args.algo, checkpoint, args))
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    (args.out / "variance_probe.json").write_text(json.dumps(dict(settings=settings, results=results), indent=1) + "\n")
    table = markdown(results)
    (args.out / "variance_probe.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
