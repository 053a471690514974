"""
scripts/variance_probe.py: the decomposition (sb3_gpg_bench.variance_probe) on cases whose answer is known, and a tiny
run end to end.
"""

import json
import runpy
from pathlib import Path

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg import GPG
from sb3_gpg_bench.variance_probe import decompose

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "variance_probe.py"


def test_decompose_by_hand():
    # State means 2 and 6: var (ddof 1) 8; within-state variances 2 and 2; between 8 - 2 / 2 = 7, total 7 + 2 = 9
    result = decompose(np.array([[1.0, 3.0], [5.0, 7.0]]), times=np.array([0, 500]), max_time=1000)
    assert result["within_variance"] == pytest.approx(2.0)
    assert result["between_variance"] == pytest.approx(7.0)
    assert result["total_variance"] == pytest.approx(9.0)
    assert result["between_share"] == pytest.approx(7 / 9)
    # Two states leave no degree of freedom for a time fit: the time explains nothing
    assert result["time_degree"] == 0 and result["time_share"] == 0.0
    assert result["action_noise_share"] == pytest.approx(2 / 9)


def test_decompose_known_variances():
    """Returns = state mean + noise, the means' variance 4 and the noise's 1: between 0.8 of the total."""
    rng = np.random.default_rng(0)
    n_states, n_continuations = 40, 2000
    times = np.sort(rng.integers(0, 1000, size=n_states))
    # Means linear in the time, scaled to a sample variance of exactly 4: the time explains all of the between share
    means = (times - times.mean()) / times.std(ddof=1) * 2.0
    returns = means[:, None] + rng.normal(size=(n_states, n_continuations))
    result = decompose(returns, times, max_time=1000)
    assert result["between_share"] == pytest.approx(0.8, abs=0.01)
    assert result["time_share"] == pytest.approx(0.8, abs=0.01)
    assert result["state_beyond_time_share"] == pytest.approx(0.0, abs=0.01)
    # The same means in a random order: the time explains (close to) none of them
    shuffled = rng.permutation(means)[:, None] + rng.normal(size=(n_states, n_continuations))
    result = decompose(shuffled, times, max_time=1000)
    assert result["between_share"] == pytest.approx(0.8, abs=0.01)
    assert result["time_share"] < 0.15
    assert sum(result[k] for k in ("time_share", "state_beyond_time_share", "action_noise_share")) == pytest.approx(1.0)


def test_decompose_no_between_share():
    """Every state's continuations are the same values in another order: the state means are equal, the between
    variance estimate is negative (var of the means 0, minus the within variance / K), and the share is clipped to 0."""
    rng = np.random.default_rng(1)
    values = rng.normal(size=8)
    returns = np.stack([rng.permutation(values) for _ in range(6)])
    result = decompose(returns, times=np.arange(6) * 100, max_time=1000)
    assert result["between_share_raw"] < 0
    assert result["between_share"] == 0.0 and result["time_share"] == 0.0
    assert result["action_noise_share"] == 1.0
    with pytest.raises(ValueError, match="at least 2 continuations"):
        decompose(returns[:, :1], times=np.arange(6), max_time=1000)


def test_probe_end_to_end(tmp_path):
    """A GPG model trained briefly, saved as the RL Zoo CLI saves it (a checkpoint, the final model, VecNormalize
    statistics): the probe writes its JSON and table, with shares in [0, 1] and every estimator setting."""
    env_id = "InvertedPendulum-v5"
    run = tmp_path / "logs" / "gpg" / f"{env_id}_1"
    (run / env_id).mkdir(parents=True)
    env = VecNormalize(make_vec_env(env_id, n_envs=4, seed=0))
    model = GPG("MlpPolicy", env, n_steps=128, batch_size=256, n_epochs=2, seed=0, device="cpu")
    model.learn(1024)
    model.save(run / "rl_model_1024_steps.zip")
    model.learn(1024, reset_num_timesteps=False)
    model.save(run / f"{env_id}.zip")
    env.save(str(run / env_id / "vecnormalize.pkl"))

    out = tmp_path / "out"
    main = runpy.run_path(str(SCRIPT))["main"]
    main(["--env", env_id, "-f", str(tmp_path / "logs"), "--n-states", "3", "--n-continuations", "2",
          "--horizon", "20", "--episodes", "3", "--n-envs", "4", "--n-steps", "32", "--rollouts", "1",
          "--out", str(out)])  # fmt: skip
    data = json.loads((out / "variance_probe.json").read_text())
    assert {"settings", "results"} <= set(data)
    assert [r["checkpoint"] for r in data["results"]] == ["1024 steps", "final"]
    for result in data["results"]:
        assert np.array(result["returns"]).shape == (3, 2)
        assert result["restore_max_obs_difference"] < 1e-8
        assert "raw rewards" in result["reward_note"]
        shares = result["decomposition"]
        for key in ("between_share", "time_share", "state_beyond_time_share", "action_noise_share"):
            assert 0.0 <= shares[key] <= 1.0
        estimators = result["estimators"]
        assert "error" not in estimators and estimators["same_samples"]
        assert [(s["baseline"], s["gae_lambda"]) for s in estimators["settings"]] == [
            (baseline, lam) for baseline in ("bins", "linear", "knn") for lam in (1.0, 0.95)
        ]
        for setting in estimators["settings"]:
            assert setting["effective_horizon"] == pytest.approx(1 / (1 - result["gamma"] * setting["gae_lambda"]))
            # each env's last effective horizon of rows, of a rollout of 32 (no sample leaves the loss under "keep")
            assert setting["end_rows_share"] == pytest.approx(min(32, round(setting["effective_horizon"])) / 32)
            assert 0.0 <= setting["end_square_share"] <= 1.0
    assert "| InvertedPendulum-v5 | final |" in (out / "variance_probe.md").read_text()
