"""The EnvPool VecEnv keeps SB3's VecEnv contract (DummyVecEnv's semantics), and GPG and PPO learn through it."""

import builtins
import warnings

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecFrameStack, VecNormalize

from sb3_gpg import GPG, EnvPoolVecEnv, make_envpool_env

pytest.importorskip("envpool")

# CartPole terminates when the pole leans past 12 degrees or the cart leaves [-2.4, 2.4]
ANGLE_LIMIT, POSITION_LIMIT = 12 * 2 * np.pi / 360, 2.4


def test_terminal_observation_and_same_step_reset():
    env = make_envpool_env("CartPole-v1", n_envs=3, seed=0, num_threads=1)
    obs = env.reset()
    pushes = np.zeros(3, dtype=np.int64)  # always left: every episode ends within a few dozen steps
    finished = 0
    for _ in range(100):
        previous = obs
        obs, rewards, dones, infos = env.step(pushes)
        assert rewards.dtype == np.float32 and rewards.shape == (3,)
        for index in range(3):
            assert ("terminal_observation" in infos[index]) == dones[index]
            if dones[index]:
                finished += 1
                terminal = infos[index]["terminal_observation"]
                assert abs(terminal[2]) > ANGLE_LIMIT or abs(terminal[0]) > POSITION_LIMIT
                # the returned observation is a fresh start (gymnasium resets CartPole within +-0.05)...
                assert np.all(np.abs(obs[index]) <= 0.05)
                # ... and the terminal one follows from the previous step
                assert np.abs(terminal - previous[index]).max() < 0.5
                assert infos[index]["TimeLimit.truncated"] is False
    assert finished >= 6
    env.close()


def test_time_limit_truncation_and_episode_statistics():
    env = make_envpool_env("CartPole-v1", n_envs=2, seed=1, max_episode_steps=5, num_threads=1)
    env.reset()
    alternate = np.array([0, 1], dtype=np.int64)  # balances the pole: only the time limit ends these episodes
    for step in range(1, 11):
        _, _, dones, infos = env.step(alternate if step % 2 else 1 - alternate)
        assert dones.tolist() == [step % 5 == 0] * 2
        for info in infos:
            assert info["TimeLimit.truncated"] is (step % 5 == 0)
            if step % 5 == 0:
                assert info["episode"]["r"] == 5.0 and info["episode"]["l"] == 5 and info["episode"]["t"] >= 0
            else:
                assert "episode" not in info
    env.close()


def test_episode_statistics_match_the_rewards():
    env = make_envpool_env("LunarLander-v3", n_envs=4, seed=2, num_threads=1)
    env.reset()
    returns, lengths, episodes = np.zeros(4), np.zeros(4, dtype=int), 0
    rng = np.random.default_rng(0)
    for _ in range(400):
        _, rewards, dones, infos = env.step(rng.integers(0, 4, size=4))
        returns += rewards
        lengths += 1
        for index in np.flatnonzero(dones):
            assert infos[index]["episode"]["l"] == lengths[index]
            assert infos[index]["episode"]["r"] == pytest.approx(returns[index], abs=1e-3)
            returns[index], lengths[index], episodes = 0.0, 0, episodes + 1
    assert episodes >= 4
    env.close()


def rollout(env, steps: int = 60, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    observations = [env.reset()]
    for _ in range(steps):
        observations.append(env.step(rng.integers(0, 2, size=env.num_envs))[0])
    return np.array(observations)


def test_seeding_is_reproducible_and_follows_sb3():
    first = rollout(make_envpool_env("CartPole-v1", n_envs=3, seed=7))
    again = rollout(make_envpool_env("CartPole-v1", n_envs=3, seed=7))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, rollout(make_envpool_env("CartPole-v1", n_envs=3, seed=8)))
    # SB3's convention: env i is seeded with seed + i
    single = make_envpool_env("CartPole-v1", n_envs=1, seed=8)
    np.testing.assert_array_equal(single.reset()[0], make_envpool_env("CartPole-v1", n_envs=3, seed=7).reset()[1])
    # seed() takes effect at the next reset, as for DummyVecEnv
    reseeded = make_envpool_env("CartPole-v1", n_envs=3, seed=123)
    rollout(reseeded, steps=5)
    reseeded.seed(7)
    np.testing.assert_array_equal(rollout(reseeded), first)
    # RL Zoo draws seeds up to 2**32, past EnvPool's int32: taken modulo 2**31 - n_envs, still reproducible
    large = 2**32 - 2
    np.testing.assert_array_equal(
        rollout(make_envpool_env("CartPole-v1", n_envs=3, seed=large)),
        rollout(make_envpool_env("CartPole-v1", n_envs=3, seed=large)),
    )


def test_spaces_are_gymnasium_s():
    lander = make_envpool_env("LunarLander-v3", n_envs=2, seed=0)
    assert lander.observation_space.low[0] == -2.5 and lander.observation_space.high[6] == 1.0
    cheetah = make_envpool_env("HalfCheetah-v5", n_envs=2, seed=0)
    assert cheetah.action_space == spaces.Box(-1.0, 1.0, (6,), np.float32)
    cliff = make_envpool_env("CliffWalking-v1", n_envs=2, seed=0)
    assert cliff.observation_space == spaces.Discrete(48)
    obs = cliff.reset()
    assert obs.dtype == cliff.observation_space.dtype and obs.tolist() == [36, 36]


def test_wrappers_on_top():
    env = VecFrameStack(VecNormalize(make_envpool_env("HalfCheetah-v5", n_envs=2, seed=0)), n_stack=3)
    obs = env.reset()
    assert obs.shape == (2, 17 * 3)
    for _ in range(3):
        obs, rewards, _, _ = env.step(np.zeros((2, 6), dtype=np.float32))
    assert obs.shape == (2, 17 * 3) and np.isfinite(obs).all() and np.isfinite(rewards).all()


def test_monitor_statistics_for_evaluation():
    env = make_envpool_env("CartPole-v1", n_envs=2, seed=0)
    assert env.env_is_wrapped(Monitor) == [True, True]
    model = GPG("MlpPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not wrapped with a Monitor" warning
        episode_returns, episode_lengths = evaluate_policy(model, env, n_eval_episodes=4, return_episode_rewards=True)
    assert len(episode_returns) == 4 and episode_returns == [float(length) for length in episode_lengths]


def test_clear_errors():
    with pytest.raises(ValueError, match="did you mean 'CartPole-v1'"):
        make_envpool_env("CartPol-v1")
    with pytest.raises(ValueError, match="does not render"):
        make_envpool_env("CartPole-v1", render_mode="rgb_array")
    with pytest.raises(ValueError, match="could not make"):
        make_envpool_env("CartPole-v1", no_such_option=3)
    env = make_envpool_env("CartPole-v1", n_envs=2)
    assert env.get_attr("render_mode") == [None, None] and not env.has_attr("gravity")
    with pytest.raises(AttributeError, match="run in C\\+\\+"):
        env.get_attr("gravity")
    with pytest.raises(NotImplementedError, match="no Python methods"):
        env.env_method("reset")
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        env.set_attr("gravity", 1.0)
    with pytest.raises(NotImplementedError, match="does not render"):
        env.render()
    env.set_options({"low": 0})
    with pytest.raises(ValueError, match="no reset options"):
        env.reset()


def test_missing_envpool_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_envpool(name, *args, **kwargs):
        if name == "envpool":
            raise ImportError("No module named 'envpool'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_envpool)
    with pytest.raises(ImportError, match=r'pip install "sb3-gpg\[envpool\]"'):
        EnvPoolVecEnv("CartPole-v1")


# The learning test's settings (benchmarks/learning_test_budgets/check.py trains with them on the tuning seeds)
THROUGH_ENVPOOL = dict(n_steps=128, batch_size=256, n_epochs=4, learning_rate=1e-3, device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("algo", [GPG, PPO], ids=["GPG", "PPO"])
def test_learns_cartpole_through_envpool(algo):
    env = make_envpool_env("CartPole-v1", n_envs=8, seed=0, num_threads=1)
    model = algo("MlpPolicy", env, seed=0, **THROUGH_ENVPOOL)
    model.learn(16 * 1024)  # sixteen rollouts: chosen on the tuning seeds 100-104 (benchmarks/learning_test_budgets)
    eval_env = make_envpool_env("CartPole-v1", n_envs=1, seed=100)
    mean_return, _ = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
    # An untrained policy lets the pole fall within a few dozen steps. The threshold sits well below CartPole's 500:
    # a deterministic evaluation after a few rollouts varies a lot with the seed and with torch's thread count
    assert mean_return >= 120
    assert len(model.ep_info_buffer) > 0  # rollout/ep_rew_mean is logged from the adapter's episode statistics


def test_backend_by_name():
    from sb3_gpg.common.env_util import make_vec_env_on

    assert isinstance(make_vec_env_on("CartPole-v1", 2, 0, "envpool", num_threads=1), EnvPoolVecEnv)
    with pytest.raises(ValueError, match="Unknown vec_env 'envpol': choose one of dummy, subproc, envpool"):
        make_vec_env_on("CartPole-v1", 2, 0, "envpol")
