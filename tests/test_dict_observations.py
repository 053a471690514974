"""
Dict observations (an image and a vector, SB3's SimpleMultiObsEnv), for each of the four algorithms: training fills the
Dict buffer, the masked algorithms never take a masked action, and predict takes the Dict with its masks and LSTM
states. ``test_estimator_options`` checks the Dict buffers' advantages against the reference.
"""

import numpy as np
import pytest
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import SimpleMultiObsEnv

from tests.helpers import Algorithm

ALLOWED = np.array([True, True, False, True])


def test_trains_and_predicts_on_dict_observations(algorithm: Algorithm):
    env = make_vec_env(lambda: ActionMasker(SimpleMultiObsEnv(random_start=False), lambda env: ALLOWED), n_envs=4, seed=0)
    model = algorithm.cls(algorithm.policy(dict_observations=True), env, seed=0, **algorithm.small).learn(256)
    buffer = model.rollout_buffer
    # Both keys, each sample whole (flattened by the update: one row per sample)
    for key, space in model.observation_space.spaces.items():
        assert buffer.observations[key].shape == (algorithm.small["n_steps"] * 4, *space.shape)
    if algorithm.masked:
        assert (buffer.actions != 2).all()

    obs = model.observation_space.sample()
    masks = {"action_masks": np.array([False, False, True, False])} if algorithm.masked else {}
    action, state = model.predict(obs, **masks)  # one observation, not a batch
    assert model.action_space.contains(int(action)) and (not algorithm.masked or action == 2)
    if algorithm.recurrent:
        assert state[0].shape == (1, 1, 8)
        _, next_state = model.predict(obs, state=state, episode_start=np.zeros(1, dtype=bool), **masks)
        assert not np.allclose(next_state[0], state[0])


def test_spatial_binning_on_a_dict_with_an_image_names_the_dict():
    from sb3_gpg import GPG

    with pytest.raises(ValueError, match=r"^spatial binning on a Dict observation whose 'img' part holds images puts"):
        GPG("MultiInputPolicy", SimpleMultiObsEnv(), binning="spatial")
