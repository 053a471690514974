"""
PPO with one part of its critic taken away, for the critic diagnosis (``scripts/zoo_suite.py --suite critic_diagnosis``):
RL Zoo callbacks (the ``callback`` hyperparameter) that change PPO's value function and nothing else, so that PPO's
own update loop, settings and logging stay as they are.

- ``FreshCritic``, no memory: the value network is re-initialised (weights and Adam's moments) after every rollout and
  trained by PPO's value loss on that rollout alone. The values the next rollout's advantages read come from a critic
  that saw one rollout, as GPG's fitted baseline does; PPO's own critic carries every earlier rollout in its weights.
- ``LinearCritic``, no capacity: the value function is linear in the features of GPG's linear baseline (the clipped
  observation, its square, a cubic in the episode time and a constant), trained by PPO's value loss across rollouts
  as PPO trains its own. The episode time comes from ``gymnasium.wrappers.TimeAwareObservation`` (``env_wrapper``),
  the observation's last entry, which the actor does not see.

``ReturnsExplained`` changes nothing: it logs how much of the rollout's Monte-Carlo returns PPO's values explain, on
the footing of GPG's ``train/baseline_explained_variance``: values predicted before the update that uses them, against
discounted returns whose cut by the rollout's end is completed by the value of the state after it
(``diagnosis/returns_explained_variance``, GPG's footing under ``truncated_returns="bootstrap"``) or left cut
(``diagnosis/cut_returns_explained_variance``, its footing under ``"keep"``). SB3's ``train/explained_variance`` scores
the values against lambda-returns built from those same values, which flatters them.

``AdvantageSignal`` changes nothing either: for GPG and PPO alike, it logs what sets how far an update moves a
Gaussian policy's noise (the swap's diagnosis, ``sb3_gpg_bench.dynamics``).

``MonteCarloCritic`` trains PPO's critic on the Monte-Carlo returns, as GPG's baseline is fitted, rather than on
lambda-returns over its own values. ``TimeCritic`` gives PPO's critic the episode time (its actor does not read it),
and ``BaselineWithoutTime`` takes the time out of GPG's linear baseline. The three are the swap's diagnosis's tests of
what separates PPO's critic from GPG's baseline on BipedalWalker-v3.

``HeldOutResiduals`` changes nothing either: for GPG, it keeps per rollout the count, mean and variance of the returns
in the loss and of their residuals from the held-out baselines, from which an explained variance pooled over many
rollouts follows (a rollout of a few samples of one trajectory has returns too alike for its own to mean much).
"""

import importlib
import json
import os
from functools import partial

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from sb3_gpg.estimator.fitted_baselines import OBS_CLIP

# the module whose feature function BaselineWithoutTime replaces (the package's name "estimate" is its function)
estimate_module = importlib.import_module("sb3_gpg.estimator.estimate")
# the rollout's parts whose policy gradients ``AdvantageSignal`` compares
AGREEMENT_PARTS = 8


class RolloutEndCallback(BaseCallback):
    """An RL Zoo callback that acts once per rollout, in ``_on_rollout_end``, after the rollout's returns are computed."""

    def _on_step(self) -> bool:
        return True

    @property
    def on_policy_model(self) -> OnPolicyAlgorithm:
        """:return: the model, an on-policy algorithm"""
        assert isinstance(self.model, OnPolicyAlgorithm)
        return self.model


class FreshCritic(RolloutEndCallback):
    """Re-initialise PPO's value network after each rollout, before the update trains it on that rollout."""

    def _on_rollout_end(self) -> None:
        policy = self.model.policy
        assert isinstance(policy, ActorCriticPolicy)
        gains: list[tuple[nn.Module, float]] = [(policy.mlp_extractor.value_net, np.sqrt(2)), (policy.value_net, 1.0)]
        if not policy.share_features_extractor:
            gains.append((policy.vf_features_extractor, np.sqrt(2)))
        for module, gain in gains:
            if policy.ortho_init:
                module.apply(partial(policy.init_weights, gain=gain))
            else:
                for layer in module.modules():
                    if isinstance(layer, nn.Linear):
                        layer.reset_parameters()
        for module, _ in gains:
            for parameter in module.parameters():
                policy.optimizer.state.pop(parameter, None)


class ReturnsExplained(RolloutEndCallback):
    """Log the explained variance of PPO's rollout values against the rollout's Monte-Carlo returns."""

    def _on_rollout_end(self) -> None:
        buffer = self.on_policy_model.rollout_buffer
        for key, completed in (("returns", True), ("cut_returns", False)):
            returns = monte_carlo_returns(self.on_policy_model, self.locals, completed)
            variance = np.var(returns)
            explained = float("nan") if variance == 0 else float(1 - np.var(returns - buffer.values) / variance)
            self.logger.record(f"diagnosis/{key}_explained_variance", explained)


class MonteCarloCritic(RolloutEndCallback):
    """
    PPO's critic trained on the rollout's Monte-Carlo returns, as GPG's baseline is fitted, rather than on the
    lambda-returns over its own values: after the advantages are computed (GAE over the critic's values, unchanged),
    the buffer's returns, the value loss's targets, are replaced by the discounted returns, a cut one completed by the
    value of the state after the rollout.
    """

    def _on_rollout_end(self) -> None:
        buffer = self.on_policy_model.rollout_buffer
        buffer.returns = monte_carlo_returns(self.on_policy_model, self.locals, True).astype(buffer.returns.dtype)


def monte_carlo_returns(model: OnPolicyAlgorithm, rollout_locals: dict, completed: bool) -> np.ndarray:
    """
    :param rollout_locals: ``collect_rollouts``'s locals at the rollout's end (the values and dones after it)
    :param completed: whether a return that the rollout's end cuts is completed by the value of the state after it
    :return: each sample's discounted return within its episode (SB3 adds a time-limit cut's bootstrap to the last
        reward)
    """
    buffer = model.rollout_buffer
    last_values = rollout_locals["values"].detach().cpu().numpy().reshape(-1)
    not_done = 1.0 - np.asarray(rollout_locals["dones"], dtype=np.float64)
    following = last_values * not_done if completed else np.zeros_like(last_values)
    returns = np.zeros_like(buffer.rewards, dtype=np.float64)
    for step in reversed(range(buffer.buffer_size)):
        returns[step] = buffer.rewards[step] + model.gamma * following
        # the step's return ends where the next sample starts an episode
        following = returns[step] * (1.0 - buffer.episode_starts[step])
    return returns


class AdvantageSignal(RolloutEndCallback):
    """
    Log, per rollout and before the update, the advantages' standard deviation (``diagnosis/advantage_std``: the
    update normalises them per minibatch) and, for Box actions and observations, their correlation with each action's
    log-std score under the policy that took it, ``sum(((a - mean) / std) ** 2 - 1)`` over the action's dimensions
    (``diagnosis/advantage_logstd_corr``): the normalised advantages' pull on the policy's log std, positive where
    noisier actions did better. Where it is near 0 the update leaves the noise as it is. Beside it, how far the
    samples agree on which way to move the action's mean (``diagnosis/mean_gradient_agreement``, ``_agreement``), and
    how far the advantages follow the reward of their own step (``diagnosis/advantage_reward_corr``: where the reward
    is progress, as BipedalWalker's is, which way the update moves the policy: towards striding or towards standing).
    """

    def _on_rollout_end(self) -> None:
        model = self.on_policy_model
        buffer = model.rollout_buffer
        advantages = np.asarray(buffer.advantages, dtype=np.float64).reshape(-1)
        self.logger.record("diagnosis/advantage_std", float(np.std(advantages)))
        rewards = np.asarray(buffer.rewards, dtype=np.float64).reshape(-1)
        self.logger.record("diagnosis/advantage_reward_corr", _correlation(advantages, rewards))
        if not isinstance(model.action_space, spaces.Box) or isinstance(buffer.observations, dict):
            return
        shape = model.observation_space.shape or ()
        observations = th.as_tensor(buffer.observations.reshape(-1, *shape), device=model.device)
        actions = th.as_tensor(buffer.actions.reshape(len(advantages), -1), device=model.device)
        with th.no_grad():
            normal = model.policy.get_distribution(observations).distribution
            assert isinstance(normal, th.distributions.Normal), "a Gaussian policy's (Box actions)"
            noise = (actions - normal.mean) / normal.stddev
        score = (noise**2 - 1).sum(dim=-1).cpu().numpy().astype(np.float64)
        self.logger.record("diagnosis/advantage_logstd_corr", _correlation(advantages, score))
        self.logger.record("diagnosis/mean_gradient_agreement", self._agreement(observations, actions, advantages))

    def _agreement(self, observations: th.Tensor, actions: th.Tensor, advantages: np.ndarray) -> float:
        """
        :return: the mean cosine between the gradients, over the policy's parameters but its log std, of the
            normalised advantages' mean log-likelihood on disjoint random parts of the rollout: near 1 where the
            samples agree on which way to move the action's mean, near 0 where they cancel
        """
        policy = self.on_policy_model.policy
        parameters = [p for name, p in policy.named_parameters() if p.requires_grad and "log_std" not in name]
        weights = th.as_tensor((advantages - advantages.mean()) / (advantages.std() + 1e-8), device=observations.device)
        # a stream of its own, so that the training's random state is untouched
        parts = np.array_split(np.random.default_rng(0).permutation(len(advantages)), AGREEMENT_PARTS)
        gradients = []
        for part in parts:
            rows = th.as_tensor(part, device=observations.device)
            log_prob = policy.get_distribution(observations[rows]).log_prob(actions[rows])
            grads = th.autograd.grad((weights[rows] * log_prob).mean(), parameters, allow_unused=True)
            gradients.append(th.cat([g.reshape(-1) for g in grads if g is not None]).double())
        unit = th.nn.functional.normalize(th.stack(gradients), dim=1)
        cosines = unit @ unit.T
        return float((cosines.sum() - cosines.diagonal().sum()) / (len(parts) * (len(parts) - 1)))


def _correlation(first: np.ndarray, second: np.ndarray) -> float:
    """:return: the two arrays' correlation over their entries (0 where either is constant)"""
    spread = np.std(first) * np.std(second)
    return float(np.mean((first - first.mean()) * (second - second.mean())) / spread) if spread > 0 else 0.0


class WithoutTime(nn.Module):
    """The actor's first layer, reading the observation without its last entry (the episode time)."""

    def __init__(self, layer: nn.Linear):
        super().__init__()
        self.layer = layer

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.layer(observations[..., :-1])


class RllabFeatures(nn.Module):
    """``[clip(obs), clip(obs)**2, t, t**2, t**3, 1]`` of an observation whose last entry is the episode time."""

    def forward(self, observations: th.Tensor) -> th.Tensor:
        obs = th.clamp(observations[..., :-1], -OBS_CLIP, OBS_CLIP)
        t = observations[..., -1:]
        return th.cat([obs, obs**2, t, t**2, t**3, th.ones_like(t)], dim=-1)


class TimeCritic(BaseCallback):
    """
    PPO's critic reading the episode time, as GPG's linear baseline does, its actor not: the actor's first layer is
    rebuilt to read the observation without its last entry (the time, from ``gymnasium.wrappers.TimeAwareObservation``),
    the critic keeps its network and reads the whole observation. The optimiser is rebuilt over the new parameters; a
    model trained with it does not load into its policy class: a diagnostic.
    """

    def _on_step(self) -> bool:
        return True

    def _on_training_start(self) -> None:
        policy = self.model.policy
        assert isinstance(policy, ActorCriticPolicy)
        first = policy.mlp_extractor.policy_net[0]
        assert isinstance(first, nn.Linear) and first.in_features == policy.features_dim
        actor_first = nn.Linear(first.in_features - 1, first.out_features)
        if policy.ortho_init:
            policy.init_weights(actor_first, gain=np.sqrt(2))
        policy.mlp_extractor.policy_net[0] = WithoutTime(actor_first)
        self._build_critic(policy)
        policy.to(self.model.device)
        learning_rate = self.model.lr_schedule(1)
        policy.optimizer = policy.optimizer_class(policy.parameters(), lr=learning_rate, **policy.optimizer_kwargs)  # type: ignore[call-arg]

    def _build_critic(self, policy: ActorCriticPolicy) -> None:
        """The critic as it is, here; a subclass replaces it (after the actor's layer, before the optimiser)."""


class LinearCritic(TimeCritic):
    """
    Replace PPO's value network by a linear function of GPG's linear-baseline features, before training starts; the
    actor keeps its architecture, its first layer reading the observation without the time (``TimeCritic``). A model
    trained with it no longer matches its policy class, so its saved file does not load: a diagnostic, not a policy
    to keep.
    """

    def _build_critic(self, policy: ActorCriticPolicy) -> None:
        assert policy.share_features_extractor
        policy.mlp_extractor.value_net = nn.Sequential(RllabFeatures())
        policy.mlp_extractor.latent_dim_vf = 2 * (policy.features_dim - 1) + 4
        policy.value_net = nn.Linear(policy.mlp_extractor.latent_dim_vf, 1)
        nn.init.zeros_(policy.value_net.weight)
        nn.init.zeros_(policy.value_net.bias)


class BaselineWithoutTime(BaseCallback):
    """
    GPG's fitted baseline without the episode time: while the model trains, the linear baseline's features are made
    with every sample's time at 0, so that its cubic in the time is constant and the fit reads the observation alone,
    as PPO's critic does. The binning and everything else still read the times. The estimator's feature function is
    replaced for the process (and put back when training ends): a diagnostic.
    """

    def _on_step(self) -> bool:
        return True

    def _on_training_start(self) -> None:
        self._features = estimate_module.linear_features

        def without_time(flat_obs: np.ndarray, times: np.ndarray, *args, **kwargs) -> np.ndarray:
            return self._features(flat_obs, np.zeros_like(times), *args, **kwargs)

        estimate_module.linear_features = without_time  # type: ignore[attr-defined]

    def _on_training_end(self) -> None:
        estimate_module.linear_features = self._features  # type: ignore[attr-defined]


class GoalLapses(BaseCallback):
    """
    The linear baseline's goal lapse (``optimism``: a goal found counts as seen only until ``LAPSE_EPISODES`` episodes
    in a row after it have run to the limit) under any GAE's lambda, where the algorithm keeps it to
    ``gae_lambda="auto"``: the model's group buffer's memory is told to lapse when training starts. A diagnostic.
    """

    def _on_step(self) -> bool:
        return True

    def _on_training_start(self) -> None:
        self.model.rollout_buffer.baseline_memory.goal_lapses = True  # type: ignore[attr-defined]


class HeldOutResiduals(RolloutEndCallback):
    """
    Append, per rollout of a GPG model, ``{"steps", "n", "returns_mean", "returns_var", "residuals_mean",
    "residuals_var"}`` as a JSON line to the file named by the environment variable ``HELD_OUT_RESIDUALS`` (RL Zoo
    builds its callbacks without arguments).
    """

    def _on_rollout_end(self) -> None:
        buffer = self.on_policy_model.rollout_buffer
        returns = buffer.returns.T.reshape(-1).astype(np.float64)  # env-major, as the buffer's in_loss
        residuals = returns - buffer.values.T.reshape(-1)
        in_loss = getattr(buffer, "in_loss", None)  # a GPG buffer's: the samples its group gives a signal
        if in_loss is not None:
            returns, residuals = returns[in_loss], residuals[in_loss]
        record: dict[str, float] = {"steps": self.num_timesteps, "n": len(returns)}
        for name, values in (("returns", returns), ("residuals", residuals)):
            record |= {f"{name}_mean": float(values.mean()), f"{name}_var": float(values.var())} if len(values) else {}
        with open(os.environ["HELD_OUT_RESIDUALS"], "a") as file:
            file.write(json.dumps(record) + "\n")
