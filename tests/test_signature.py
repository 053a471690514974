"""
The algorithms' constructors as inspect.signature, IDEs and mypy read them: PPO's parameters, then GPG's own options,
typed, with the algorithms' defaults; what the estimator runs with (``estimator_options``); ``set_env``; the paper.
"""

import inspect
from dataclasses import fields

import pytest
from sb3_contrib import MaskablePPO, RecurrentPPO
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from sb3_gpg import GPG, MaskableGPG, MaskableRecurrentGPG, RecurrentGPG
from sb3_gpg.estimator.options import ALGORITHM_DEFAULTS, GROUP_OPTION_NAMES, GroupOptions

# Each algorithm and the one whose parameters come first (MaskableRecurrentGPG's constructor is RecurrentGPG's)
ANCHORS = {GPG: PPO, MaskableGPG: MaskablePPO, RecurrentGPG: RecurrentPPO, MaskableRecurrentGPG: RecurrentPPO}
POLICIES = {GPG: "MlpPolicy", MaskableGPG: "MlpPolicy", RecurrentGPG: "MlpLstmPolicy", MaskableRecurrentGPG: "MlpLstmPolicy"}
algorithms = pytest.mark.parametrize("algorithm", list(ANCHORS), ids=lambda algorithm: algorithm.__name__)


@algorithms
def test_group_options_are_typed_keyword_parameters_after_ppos(algorithm):
    parameters = inspect.signature(algorithm).parameters
    anchor = list(inspect.signature(ANCHORS[algorithm]).parameters)
    assert list(parameters) == [*anchor, *GROUP_OPTION_NAMES]
    for field in fields(GroupOptions):
        parameter = parameters[field.name]
        assert parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, field.name
        assert parameter.annotation is not inspect.Parameter.empty, field.name
        assert parameter.annotation == field.type, field.name
        assert parameter.default == ALGORITHM_DEFAULTS.get(field.name, field.default), field.name
        assert f":param {field.name}:" in (algorithm.__doc__ or ""), field.name


@algorithms
def test_a_wrong_keyword_raises_a_type_error_naming_it(algorithm):
    with pytest.raises(TypeError, match="binnig"):
        algorithm(POLICIES[algorithm], "CartPole-v1", binnig="time")
    with pytest.raises(TypeError, match="group_options"):
        algorithm(POLICIES[algorithm], "CartPole-v1", group_options=GroupOptions())


def test_maskable_gpg_refuses_ppos_arguments_that_maskable_ppo_has_not():
    with pytest.raises(TypeError, match="use_sde"):
        MaskableGPG("MlpPolicy", "CartPole-v1", use_sde=True)


@algorithms
def test_docstrings_cite_the_paper(algorithm):
    doc = inspect.getdoc(algorithm) or ""
    assert "Paper: *Group Policy Gradient*, Junhua Chen, Zixi Zhang, Hantao Zhong and Rika Antonova" in doc


@pytest.fixture
def trained_on_pendulum():
    """A tiny GPG under the default options ("auto": the linear baseline, which remembers the last rollouts)."""
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    return GPG("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu").learn(256)


def test_set_env_forgets_the_old_tasks_memory(trained_on_pendulum):
    model = trained_on_pendulum
    assert len(model.rollout_buffer.baseline_memory) > 0
    model.set_env(make_vec_env("Pendulum-v1", n_envs=2, seed=1))
    assert len(model.rollout_buffer.baseline_memory) == 0
    model.learn(128, reset_num_timesteps=False)
    assert len(model.rollout_buffer.baseline_memory) == 1


def test_estimator_options_are_those_the_estimator_runs_with(trained_on_pendulum):
    model = trained_on_pendulum
    assert model.baseline == "auto" and model.baseline_kwargs is None and model.truncated_returns is None  # as given
    options = model.estimator_options
    assert options is model.rollout_buffer.group_options
    assert (options.baseline, options.truncated_returns) == ("linear", "bootstrap")
    assert isinstance(options.baseline_kwargs, dict) and "memory" in options.baseline_kwargs
    # under GPG's gae_lambda="auto" the target follows each rollout's lambda: "auto" until then
    assert model.gae_lambda == "auto" and options.baseline_kwargs["target"] == "auto"
    with pytest.raises(AttributeError):
        model.estimator_options = GroupOptions()  # read-only
