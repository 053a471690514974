"""
Save and load, for each of the four algorithms: the policy, the optimizer and every group option come back, the loaded
model predicts as the saved one (with its masks and LSTM states), training goes on, and a file saved by another
algorithm is refused with a message that names it.
"""

import numpy as np
import pytest
import torch as th

from sb3_gpg import GPG, MaskableGPG
from tests.helpers import Algorithm

# Every group option away from its default, so that one dropped on the way through the file shows
OPTIONS = {"binning": "spatial_time", "bin_size": [0.5, 1.0, 0.5, 1.0, 0.5], "leave_one_out": True, "min_bin_count": 2}
OPTIONS |= {"truncated_returns": "bootstrap", "advantage_scale": "bin_std", "gae_lambda": 0.9, "baseline": "linear"}
OPTIONS |= {"baseline_kwargs": {"ridge": 1e-3, "n_folds": 3}}


def test_save_load_restores_everything_and_training_goes_on(algorithm: Algorithm, tmp_path):
    env = algorithm.env()
    model = algorithm.cls(algorithm.policy(), env, seed=1, **OPTIONS, **algorithm.small).learn(128)
    model.save(tmp_path / "model")
    loaded = algorithm.cls.load(tmp_path / "model", env=env)

    assert type(loaded.policy) is type(model.policy)
    for name, tensor in model.policy.state_dict().items():
        th.testing.assert_close(loaded.policy.state_dict()[name], tensor)
    assert loaded.policy.optimizer.state_dict()["state"].keys() == model.policy.optimizer.state_dict()["state"].keys()
    for name, value in OPTIONS.items():
        np.testing.assert_array_equal(getattr(loaded, name), value, err_msg=name)
    assert repr(loaded.rollout_buffer.group_options) == repr(model.rollout_buffer.group_options)

    obs = env.reset()
    actions, state = algorithm.predict(model, env, obs)
    loaded_actions, loaded_state = algorithm.predict(loaded, env, obs)
    np.testing.assert_array_equal(loaded_actions, actions)
    if algorithm.recurrent:
        np.testing.assert_allclose(loaded_state[0], state[0])
        # predict carries the states on from the ones it is given
        _, next_state = algorithm.predict(loaded, env, obs, state=state, episode_start=np.zeros(env.num_envs, dtype=bool))
        assert not np.allclose(next_state[0], state[0])

    loaded.learn(128, reset_num_timesteps=False)
    assert loaded.num_timesteps == model.num_timesteps + 128 and loaded._n_updates > model._n_updates


def test_load_with_new_group_settings(algorithm: Algorithm, tmp_path):
    algorithm.cls(algorithm.policy(), algorithm.env(), **algorithm.small).save(tmp_path / "model")
    loaded = algorithm.cls.load(tmp_path / "model", env=algorithm.env(), binning="universal", leave_one_out=True)
    assert (loaded.rollout_buffer.binning, loaded.rollout_buffer.leave_one_out) == ("universal", True)


def test_custom_binning_callable_survives_save_load(algorithm: Algorithm, tmp_path):
    n_bins = 3
    model = algorithm.cls(
        algorithm.policy(), algorithm.env(), binning=lambda obs, t: np.minimum(t, n_bins - 1), **algorithm.small
    )
    model.learn(64)
    model.save(tmp_path / "model")
    loaded = algorithm.cls.load(tmp_path / "model", env=algorithm.env())
    loaded.learn(64)
    assert loaded.rollout_buffer.binning(np.zeros((2, 1, 5)), np.array([[0], [7]])).tolist() == [[0], [2]]
    assert loaded.rollout_buffer.group_stats["n_bins"] <= n_bins


def test_a_file_saved_by_the_ppo_it_replaces_is_refused_by_name(algorithm: Algorithm, tmp_path):
    anchor = algorithm.anchor(algorithm.policy(), algorithm.env(), n_steps=32, batch_size=32)
    anchor.save(tmp_path / "ppo")
    writer = "PPO or A2C" if algorithm.anchor.__name__ == "PPO" else algorithm.anchor.__name__
    with pytest.raises(ValueError, match=rf"saved by {writer} .*, not by {algorithm.name}: load it with the class"):
        algorithm.cls.load(tmp_path / "ppo")


def test_a_file_saved_by_another_gpg_names_the_class_to_load_it_with(algorithm: Algorithm, tmp_path):
    # Each of the three variants refuses GPG's files; GPG refuses MaskableGPG's
    saver = MaskableGPG if algorithm.cls is GPG else GPG
    saver("MlpPolicy", algorithm.env(), n_steps=32, batch_size=32).save(tmp_path / "other")
    with pytest.raises(ValueError, match=rf"saved by {saver.__name__} .*, not by {algorithm.name}: load it with "
                       rf"sb3_gpg.{saver.__name__}.load"):  # fmt: skip
        algorithm.cls.load(tmp_path / "other")
