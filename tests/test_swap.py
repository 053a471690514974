"""
The swap, tried as a user who swaps the class would: each scenario runs once with the anchor (PPO, MaskablePPO,
RecurrentPPO) and once with its GPG counterpart, and both must behave alike: accept a setting, or refuse it at the same
step with the same exception type; give ``predict`` results of the same shapes and types (single and vectorised
observations, states and episode starts, action masks, channel-last images); save files that load; and match in
evaluations, callback outputs and VecNormalize statistics, on every action and observation space the pair supports.

``DIFFERENCES`` (tests/swap_scenarios.py, with the scenarios) lists where GPG differs on purpose, and why; a scenario
listed there checks GPG's own outcome instead.
"""

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
from sb3_contrib.common.maskable.evaluation import evaluate_policy as maskable_evaluate_policy
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback, EvalCallback
from stable_baselines3.common.envs import FakeImageEnv, IdentityEnv
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg import GPG, MaskableGPG, RecurrentGPG
from sb3_gpg.estimator.options import GROUP_OPTION_NAMES
from tests.swap_scenarios import (
    ANCHORS,
    DIFFERENCES,
    N_STEPS,
    PAIRS,
    SETTINGS,
    SPACES,
    UNSUPPORTED,
    Pair,
    SpacesEnv,
    channel_first,
    learned,
    make_env,
    make_model,
    run_pair,
    signature,
    takes_masked_choice,
)

# Warnings are not compared: GPG warns about the critic's settings it ignores and about rollouts too short for groups
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(params=PAIRS, ids=ANCHORS)
def pair(request) -> Pair:
    return request.param


def test_differences_name_scenarios():
    scenarios = {*SETTINGS, "load the anchor's file"}
    assert all(name in scenarios or name.startswith("default ") for _, name in DIFFERENCES)
    assert {anchor for anchor, _ in DIFFERENCES} <= set(ANCHORS)


def test_constructor_arguments(pair):
    """
    GPG takes the anchor's arguments in the anchor's order, then its own options, typed (tests/test_signature.py); the
    defaults differ as DIFFERENCES says.
    """
    anchor, gpg = (inspect.signature(algorithm).parameters for algorithm in pair)
    assert list(gpg)[: len(anchor)] == list(anchor) and list(anchor)[-1] == "_init_setup_model"
    assert list(gpg)[len(anchor) :] == list(GROUP_OPTION_NAMES)
    for name, parameter in anchor.items():
        difference = DIFFERENCES.get((pair.name, f"default {name}"))
        assert gpg[name].default == (parameter.default if difference is None else difference.gpg), name
        assert difference is None or parameter.default != difference.gpg, f"{name}: alike, so DIFFERENCES should not list it"


@pytest.mark.parametrize("setting", SETTINGS)
def test_settings_accepted_or_refused_alike(pair, setting):
    def scenario(algorithm, steps):
        model = make_model(pair, algorithm, SpacesEnv(), **SETTINGS[setting])
        steps("learn")
        return model.learn(2 * model.n_steps).num_timesteps  # two rollouts: the second meets what the first update did

    anchor, gpg = run_pair(pair, setting, scenario)
    assert setting != "defaults" or gpg == anchor == 2 * N_STEPS


@pytest.mark.parametrize(
    "algorithm, kwargs, message",
    [
        (GPG, dict(clip_range_vf=-0.2), r"clip_range_vf=-0.2: PPO refuses .* Pass a positive value, or None"),
        (MaskableGPG, dict(clip_range_vf="0.2"), "neither a number nor a schedule"),
        (RecurrentGPG, dict(policy_kwargs=dict(shared_lstm=True)), "Add enable_critic_lstm=False, or remove shared_lstm"),
        (
            RecurrentGPG,
            dict(policy_kwargs=dict(shared_lstm=True, enable_critic_lstm=False, share_features_extractor=False)),
            "when the features extractor is not shared.* Remove one of the two",
        ),
        (GPG, dict(n_steps=1, batch_size=1, normalize_advantage=False), "a one-sample rollout has no group"),
        (GPG, dict(learning_rate=-1), r"learning_rate=-1: the learning rate must be positive .* Pass a positive rate"),
        (MaskableGPG, dict(learning_rate=lambda progress: progress - 1), "a schedule whose value at progress 1 is 0"),
        (RecurrentGPG, dict(n_epochs=0), r"n_epochs=0: .* Pass n_epochs >= 1"),
        (GPG, dict(n_epochs=2.5), r"n_epochs=2.5: each update needs a whole number of epochs"),
        (MaskableGPG, dict(max_grad_norm=-1.0), r"max_grad_norm=-1.0: .* must be >= 0, e.g. 0.5"),
        (RecurrentGPG, dict(target_kl=-0.1), r"target_kl=-0.1: pass None \(no early stop\) or a divergence >= 0"),
        (GPG, dict(ent_coef=float("nan")), "ent_coef=nan: the entropy coefficient must be a finite number"),
        (GPG, dict(gamma="0.99"), r"gamma='0.99' must be a number\. It is text: pass the number without quotes"),
        (GPG, dict(batch_size=0, normalize_advantage=False), r"batch_size=0: .* Pass batch_size >= 1"),
    ],
)
def test_refusals_say_what_to_do(algorithm, kwargs, message):
    policy = "MlpLstmPolicy" if algorithm is RecurrentGPG else "MlpPolicy"
    with pytest.raises(ValueError, match=message):
        algorithm(policy, SpacesEnv(), **kwargs)


@pytest.mark.parametrize("observations, actions", SPACES)
def test_spaces_and_predict(pair, observations, actions):
    def scenario(algorithm, steps):
        env = make_env(observations, actions)
        model = learned(pair, algorithm, env, steps)
        steps("predict")
        single, _ = SpacesEnv(observations, actions).reset(seed=1)
        vectorised = env.reset()
        cases: dict[str, tuple[Any, dict[str, Any]]] = {"single": (single, {}), "vectorised": (vectorised, {})}
        if observations in ("image", "Dict"):
            cases["single, channel first"] = (channel_first(single), {})
            cases["vectorised, channel first"] = (channel_first(vectorised), {})
        if pair.maskable:
            masks = np.stack(env.env_method("action_masks"))
            cases["single, masks"] = (single, dict(action_masks=masks[0]))
            cases["vectorised, masks"] = (vectorised, dict(action_masks=masks))
            draws = np.stack([model.predict(vectorised, action_masks=masks)[0] for _ in range(10)])
            assert not takes_masked_choice(draws, model.action_space)
        results = {name: model.predict(obs, deterministic=True, **kwargs) for name, (obs, kwargs) in cases.items()}
        state = results["vectorised"][1]
        results["state, episode_start"] = model.predict(vectorised, state=state, episode_start=np.array([True, False]))
        return {name: signature(result) for name, result in results.items()}

    anchor, gpg = run_pair(pair, f"{observations} observations, {actions} actions", scenario)
    assert anchor == gpg and (gpg is not None or (pair.name, actions) in UNSUPPORTED)


@pytest.mark.parametrize("observations", ["Box", "image"])
def test_evaluate_policy(pair, observations):
    def scenario(algorithm, steps):
        env = make_env(observations)
        model = learned(pair, algorithm, env, steps)
        results = {}
        for evaluate in pair.evaluations():
            steps(evaluate.__module__)
            # A single env, not vectorised, channel last: as a user passes it
            mean, std = evaluate(model, SpacesEnv(observations), n_eval_episodes=2, warn=False)
            rewards, lengths = evaluate(model, env, n_eval_episodes=4, return_episode_rewards=True, warn=False)
            results[evaluate.__module__] = signature((mean, std)), len(rewards), lengths
        return results

    anchor, gpg = run_pair(pair, f"evaluate_policy, {observations} observations", scenario)
    assert gpg is not None and anchor == gpg


def test_maskable_evaluation_of_channel_last_images():
    """MaskableGPG.predict once checked the masks against the image before SB3's policy put it channel first."""

    def scenario(algorithm, steps):
        env = ActionMasker(FakeImageEnv(screen_height=36, screen_width=36), lambda env: np.arange(6) > 0)
        model = learned(PAIRS[1], algorithm, env, steps)
        steps("evaluate")
        return maskable_evaluate_policy(model, env, n_eval_episodes=1, warn=False)

    anchor, gpg = run_pair(PAIRS[1], "masked channel-last images", scenario)
    assert gpg is not None and signature(anchor) == signature(gpg)


@pytest.mark.parametrize(
    "name, use_masking, learns, refused",
    [
        ("learn without masks", True, True, True),
        ("evaluate without masks", True, False, True),
        ("use_masking=False", False, True, False),
    ],
)
def test_masking_switch(name, use_masking, learns, refused):
    def scenario(algorithm, steps):
        env = IdentityEnv(3)  # no action_masks()
        model = make_model(PAIRS[1], algorithm, env)
        if learns:
            steps("learn")
            model.learn(N_STEPS, use_masking=use_masking)
        steps("evaluate")
        return maskable_evaluate_policy(model, env, n_eval_episodes=1, warn=False, use_masking=use_masking)

    _, gpg = run_pair(PAIRS[1], name, scenario)
    assert (gpg is None) == refused


def test_save_load(pair, tmp_path):
    def scenario(algorithm, steps):
        env = make_env()
        model = learned(pair, algorithm, env, steps)
        steps("save")
        path = tmp_path / f"{algorithm.__name__}.zip"
        model.save(path)
        steps("load")
        loaded = algorithm.load(path, env=env)
        obs = env.reset()
        same = np.array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
        steps("learn after load")
        loaded.learn(N_STEPS * env.num_envs, reset_num_timesteps=False)
        return same, loaded.num_timesteps, signature(algorithm.load(path).predict(obs))

    anchor, gpg = run_pair(pair, "save and load", scenario)
    assert anchor == gpg and gpg[0]


def test_load_the_anchor_file(pair, tmp_path):
    path = tmp_path / "anchor.zip"
    make_model(pair, pair.anchor, make_env()).save(path)

    def scenario(algorithm, steps):
        steps("load")
        return algorithm.load(path)

    run_pair(pair, "load the anchor's file", scenario)


def test_callbacks(pair, tmp_path):
    def scenario(algorithm, steps):
        folder = tmp_path / algorithm.__name__
        evaluation = (MaskableEvalCallback if pair.maskable else EvalCallback)(
            make_env(), eval_freq=N_STEPS // 2, n_eval_episodes=2, log_path=folder, best_model_save_path=folder, warn=False
        )
        checkpoints = CheckpointCallback(N_STEPS // 2, folder / "checkpoints")
        model = make_model(pair, algorithm, make_env(), n_steps=N_STEPS // 2)
        steps("learn")
        model.learn(2 * N_STEPS, callback=CallbackList([evaluation, checkpoints]))
        steps("load the best model")
        algorithm.load(folder / "best_model.zip")
        logged = np.load(folder / "evaluations.npz")
        files = sorted(str(Path(path).relative_to(folder)) for path in folder.rglob("*"))
        return files, logged["timesteps"].tolist(), logged["results"].shape, evaluation.n_calls, checkpoints.n_calls

    anchor, gpg = run_pair(pair, "callbacks", scenario)
    assert gpg is not None and anchor == gpg


def test_vec_normalize(pair, tmp_path):
    def scenario(algorithm, steps):
        folder = tmp_path / algorithm.__name__
        env = VecNormalize(make_env(), gamma=0.9)
        model = learned(pair, algorithm, env, steps)
        steps("save")
        model.save(folder / "model.zip")
        env.save(folder / "vec_normalize.pkl")
        steps("load")
        eval_env = VecNormalize.load(str(folder / "vec_normalize.pkl"), make_env())
        eval_env.training, eval_env.norm_reward = False, False
        loaded = algorithm.load(folder / "model.zip", env=eval_env)
        steps("evaluate")
        evaluate = pair.evaluations()[-1]
        _, lengths = evaluate(loaded, eval_env, n_eval_episodes=2, return_episode_rewards=True, warn=False)
        return env.obs_rms.count, env.ret_rms.count, eval_env.obs_rms.count, lengths

    anchor, gpg = run_pair(pair, "VecNormalize", scenario)
    assert gpg is not None and anchor == gpg
