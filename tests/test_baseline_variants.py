"""GPG's linear baseline on another algorithm's rollouts, in variants (``sb3_gpg_bench.baseline_variants``)."""

import io

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import HumanOutputFormat, Logger

from sb3_gpg import GPG
from sb3_gpg.estimator import fitted_baselines
from sb3_gpg_bench.baseline_variants import FEATURE_SEED, VARIANTS, BaselineVariants, SavedRollouts, variants_on_saved
from sb3_gpg_bench.suite import LOGGED_KEYS, logged_series


class _Recorded(BaselineVariants):
    """Keeps, per rollout, the variants' explained variance and the model's own."""

    def _init_callback(self) -> None:
        super()._init_callback()
        self.rows: list[dict[str, float]] = []

    def _on_rollout_end(self) -> None:
        super()._on_rollout_end()
        row = {name: variant.buffer.group_stats["baseline_explained_variance"] for name, variant in self.variants.items()}
        own = getattr(self.model.rollout_buffer, "group_stats", {})
        self.rows.append(
            {
                **row,
                "in_sample": self.model.logger.name_to_value["variants/in_sample"],
                "own": own.get("baseline_explained_variance", np.nan),
            }
        )


def test_the_default_variant_on_gpgs_own_rollouts_is_gpgs_baseline():
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    model = GPG("MlpPolicy", env, n_steps=64, seed=0, device="cpu", baseline_kwargs={"fourier_seed": FEATURE_SEED})
    callback = _Recorded()
    model.learn(4 * 64 * 2, callback=callback)
    assert len(callback.rows) == 4
    assert all(row["default"] == row["own"] for row in callback.rows)
    # the variants are fits of their own: without a memory the later rollouts' fits differ
    assert any(row["no_memory"] != row["default"] for row in callback.rows[1:])


def _parameters(model) -> list[th.Tensor]:
    return [parameter.detach().clone() for parameter in model.policy.parameters()]


def test_the_variants_change_nothing_in_ppos_training_and_are_logged():
    trained = []
    for callback in (None, BaselineVariants()):
        model = PPO("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), n_steps=64, n_epochs=2, seed=0, device="cpu")
        stream = io.StringIO()
        model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(stream)]))
        model.learn(3 * 64 * 2, callback=callback)
        trained.append(_parameters(model))
    assert all(th.equal(a, b) for a, b in zip(*trained, strict=True))
    series = logged_series(stream.getvalue(), LOGGED_KEYS)
    for name in (*VARIANTS, "in_sample", "lambda"):
        assert len(series[f"variants/{name}"]) == 3, name


def test_the_unprojected_variant_reads_every_dimension_and_puts_the_projection_back():
    # 72 observation dimensions: above the 64 that the default projects on
    def wide(**kwargs):
        env = gym.make("Pendulum-v1", **kwargs)
        box = gym.spaces.Box(-np.inf, np.inf, (72,), np.float32)
        rng = np.random.default_rng(0)
        mixing = rng.normal(size=(3, 72)).astype(np.float32)
        return gym.wrappers.TransformObservation(env, lambda obs: obs @ mixing, box)

    model = PPO("MlpPolicy", make_vec_env(wide, n_envs=2, seed=0), n_steps=64, n_epochs=1, seed=0, device="cpu")
    callback = _Recorded()
    model.learn(3 * 64 * 2, callback=callback)
    # (a fit that chooses the time's features alone reads no observation: the first rollout's, here)
    assert any(row["unprojected"] != row["default"] for row in callback.rows)
    assert fitted_baselines.MAX_OBS_FEATURES == 64
    projection, _, _ = fitted_baselines.random_maps(72, 256, None, FEATURE_SEED)
    assert projection is not None and projection.shape == (72, 64)


def test_saved_rollouts_score_offline_as_the_callback_scored_them(tmp_path, monkeypatch):
    saved, alone = tmp_path / "saved", tmp_path / "alone"
    monkeypatch.setenv("SAVED_ROLLOUTS", str(saved))
    # the rollouts ending at 128, 256 and 384 steps, then 640 and 768: a second window, whose variants start over
    monkeypatch.setenv("SAVED_ROLLOUTS_STEPS", "0-400,600-800")
    monkeypatch.setenv("BASELINE_VARIANTS_LAMBDA", "0.8")  # no "auto" window, which a window's start forgets
    model = PPO("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), n_steps=64, n_epochs=1, seed=0, device="cpu")
    online = _Recorded()
    model.learn(6 * 64 * 2, callback=[online, SavedRollouts()])
    offline = variants_on_saved(saved, VARIANTS, 0.8)
    # each window's first rollout gives the episode times only
    assert [steps for steps, _ in offline["default"]] == [256, 384, 768]
    # the first window starts with the episodes, so without a memory its fits are the callback's
    assert [value for _, value in offline["no_memory"][:2]] == [row["no_memory"] for row in online.rows[1:3]]
    # the second window is scored as it would be alone: nothing of the first carries into it
    alone.mkdir()
    for name in ("rollout_000000640.npz", "rollout_000000768.npz"):
        (alone / name).write_bytes((saved / name).read_bytes())
    by_itself = variants_on_saved(alone, VARIANTS, 0.8)
    for name in (*VARIANTS, "in_sample"):
        assert by_itself[name] == offline[name][2:], name


def test_a_variants_level_changes_the_fit_only_where_rollouts_are_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("SAVED_ROLLOUTS", str(tmp_path))
    monkeypatch.setenv("SAVED_ROLLOUTS_STEPS", "0-1000")
    model = PPO("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), n_steps=64, n_epochs=1, seed=0, device="cpu")
    model.learn(4 * 64 * 2, callback=SavedRollouts())
    variants = {"default": {}, "pooled": {"level": "pooled"}}
    series = {name: [value for _, value in values] for name, values in variants_on_saved(tmp_path, variants).items()}
    assert series["pooled"][0] == series["default"][0]  # the first rollout remembers nothing
    assert series["pooled"][1:] != series["default"][1:]


def test_the_variants_take_the_swaps_lambda_where_the_entry_sets_one(monkeypatch):
    monkeypatch.setenv("BASELINE_VARIANTS_LAMBDA", "0.8")
    model = PPO("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), n_steps=64, n_epochs=1, seed=0, device="cpu")
    callback = BaselineVariants()
    model.learn(64 * 2, callback=callback)
    assert {variant.buffer.gae_lambda for variant in callback.variants.values()} == {0.8}
