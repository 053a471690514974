import inspect
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch as th
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, PyTorchObs, Schedule
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg.common.recurrent.buffers import RecurrentGroupDictRolloutBuffer, RecurrentGroupRolloutBuffer
from sb3_gpg.common.recurrent.policies import RecurrentActorOnlyPolicy
from sb3_gpg.estimator.binning import Binning
from sb3_gpg.gpg.gpg import GPG
from sb3_gpg.gpg_recurrent.policies import CnnLstmPolicy, MlpLstmPolicy, MultiInputLstmPolicy


class RecurrentGPG(GPG):
    """
    Group Policy Gradient with an LSTM actor: ``GPG`` as sb3-contrib's ``RecurrentPPO`` is PPO, for partially observed
    tasks. One LSTM (RecurrentPPO runs a second one for its critic by default); its states are carried through the
    rollout, reset at episode starts, stored with the samples, and the update replays it over padded sequences
    (sb3-contrib's recurrent buffer and sequence code). Returns, bins, group baselines and advantages are GPG's, with
    every option.

    Paper: *Group Policy Gradient*, Junhua Chen, Zixi Zhang, Hantao Zhong and Rika Antonova (University of Cambridge),
    Sections 3-4 and Algorithms 1-2 (not online yet, so no link; the docs' index says how to cite it).

    Its arguments and defaults are RecurrentPPO's (but ``gae_lambda``'s, 1) plus GPG's own; the critic's (``vf_coef``,
    ``clip_range_vf``, and in ``policy_kwargs`` ``enable_critic_lstm``, ``shared_lstm``, a ``vf`` entry in
    ``net_arch``, ``share_features_extractor``) are accepted and, when set, ignored with one warning.

    :param policy: The policy model to use (MlpLstmPolicy, CnnLstmPolicy, MultiInputLstmPolicy)
    :param env: The environment to learn from (if registered in Gym, can be str)
    :param learning_rate: The learning rate, it can be a function of the current progress remaining (from 1 to 0)
    :param n_steps: The number of steps to run for each environment per update; the group is the whole rollout,
        n_steps * n_envs samples
    :param batch_size: Minibatch size, in samples, as RecurrentPPO's: any size works, as sequences cut at a minibatch's
        border resume from the LSTM states stored there (backpropagation through time is truncated at the borders)
    :param n_epochs: Number of epoch when optimizing the surrogate loss
    :param gamma: Discount factor
    :param gae_lambda: GAE's lambda over the group baselines; 1 (the default, not PPO's 0.95): Monte-Carlo advantages;
        ``"auto"`` (``GPG``'s default): PPO's 0.95 for a rollout where the last rollouts' fitted baselines explained
        less than 0.85 of the variance of their returns, else 1 (``sb3_gpg.estimator.auto_lambda``); 1 under the bins
    :param clip_range: Clipping parameter, it can be a function of the current progress remaining (from 1 to 0).
    :param clip_range_vf: PPO's; ignored (no value function)
    :param normalize_advantage: Whether to normalize or not the advantage (per minibatch, as PPO)
    :param ent_coef: Entropy coefficient for the loss calculation
    :param vf_coef: PPO's; ignored (no value function)
    :param max_grad_norm: The maximum value for the gradient clipping
    :param use_sde: Whether to use generalized State Dependent Exploration (gSDE)
    :param sde_sample_freq: Sample a new noise matrix every n steps when using gSDE
    :param target_kl: Limit the KL divergence between updates, because the clipping is not enough to prevent large
        update. By default, there is no limit on the kl div.
    :param stats_window_size: Window size for the rollout logging, specifying the number of episodes to average
        the reported success rate, mean episode length, and mean reward over
    :param tensorboard_log: the log location for tensorboard (if None, no logging)
    :param policy_kwargs: additional arguments to be passed to the policy on creation (``lstm_hidden_size``,
        ``n_lstm_layers``, ``lstm_kwargs``, ...)
    :param verbose: Verbosity level: 0 for no output, 1 for info messages (such as device or wrappers used), 2 for
        debug messages
    :param seed: Seed for the pseudo random generators
    :param device: Device (cpu, cuda, ...) on which the code should be run.
        Setting it to auto, the code will be run on the GPU if possible.
    :param _init_setup_model: Whether or not to build the network at the creation of the instance
    :param binning: GPG's own options (``GroupOptions``; see ``GPG``): which samples share a baseline (``"time"``:
        the episode time, the paper's choice)
    :param bin_size: epsilon of the spatial bins, one float or one value per flattened observation dimension
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: a bin holding fewer returns takes its baseline from the next coarser binning
    :param truncated_returns: the returns the rollout's end cuts: ``"keep"``, ``"mask"`` or ``"bootstrap"``; None:
        ``"bootstrap"`` under a fitted baseline, ``"keep"`` under the bins
    :param advantage_scale: ``"none"``, or ``"bin_std"``: each advantage divided by its bin's spread of returns
    :param baseline: ``"auto"`` (``"linear"`` where the observations have Box values and ``binning`` is ``"time"``,
        else ``"bins"``), ``"bins"`` (the paper's estimator), ``"linear"`` or ``"knn"``
    :param baseline_kwargs: the fitted baseline's arguments (``GroupOptions``); None: their defaults
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpLstmPolicy": MlpLstmPolicy,
        "CnnLstmPolicy": CnnLstmPolicy,
        "MultiInputLstmPolicy": MultiInputLstmPolicy,
    }
    # builds on sb3-contrib's RecurrentActorCriticPolicy, not ActorOnlyPolicy
    policy: RecurrentActorOnlyPolicy  # type: ignore[assignment]
    rollout_buffer: RecurrentGroupRolloutBuffer
    policy_base: ClassVar[type[BasePolicy]] = RecurrentActorOnlyPolicy
    rollout_buffer_classes = (RecurrentGroupRolloutBuffer, RecurrentGroupDictRolloutBuffer)

    def __init__(
        self,
        policy: str | type[RecurrentActorOnlyPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 3e-4,
        n_steps: int = 128,
        batch_size: int = 128,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float | str = 1.0,
        clip_range: float | Schedule = 0.2,
        clip_range_vf: float | Schedule | None = None,
        normalize_advantage: bool = True,
        ent_coef: float = 0.0,
        vf_coef: float | None = None,
        max_grad_norm: float = 0.5,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        target_kl: float | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
        binning: Binning = "time",
        bin_size: float | Sequence[float] | np.ndarray = 1.0,
        leave_one_out: bool = False,
        min_bin_count: int = 1,
        truncated_returns: str | None = None,
        advantage_scale: str = "none",
        baseline: str = "auto",
        baseline_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(
            policy,  # type: ignore[arg-type]  # builds on sb3-contrib's RecurrentActorCriticPolicy (policy_base is checked)
            env,
            learning_rate=learning_rate,
            n_steps=n_steps,
            batch_size=batch_size,
            n_epochs=n_epochs,
            gamma=gamma,
            gae_lambda=gae_lambda,
            clip_range=clip_range,
            clip_range_vf=clip_range_vf,
            normalize_advantage=normalize_advantage,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            target_kl=target_kl,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=_init_setup_model,
            binning=binning,
            bin_size=bin_size,
            leave_one_out=leave_one_out,
            min_bin_count=min_bin_count,
            truncated_returns=truncated_returns,
            advantage_scale=advantage_scale,
            baseline=baseline,
            baseline_kwargs=baseline_kwargs,
        )

    def _setup_model(self) -> None:
        if isinstance(self.policy_class, type) and issubclass(self.policy_class, RecurrentActorOnlyPolicy):
            # The buffer is built before the policy: its LSTM's size comes from the policy's arguments
            defaults = inspect.signature(RecurrentActorOnlyPolicy.__init__).parameters
            lstm_layers = self.policy_kwargs.get("n_lstm_layers", defaults["n_lstm_layers"].default)
            lstm_size = self.policy_kwargs.get("lstm_hidden_size", defaults["lstm_hidden_size"].default)
            shape = (self.n_steps, lstm_layers, self.n_envs, lstm_size)
            self.rollout_buffer_kwargs = {**self.rollout_buffer_kwargs, "hidden_state_shape": shape}
        super()._setup_model()
        lstm = self.policy.lstm_actor
        zeros = th.zeros((lstm.num_layers, self.n_envs, lstm.hidden_size), device=self.device)
        # No critic LSTM: its slot in sb3-contrib's RNNStates (and in the buffer) has no width
        self._no_critic_states = (zeros[..., :0], zeros[..., :0])
        self._last_lstm_states = RNNStates((zeros, zeros.clone()), self._no_critic_states)

    def _sample_actions(
        self, obs_tensor: PyTorchObs, env: VecEnv, **policy_kwargs: Any
    ) -> tuple[th.Tensor, th.Tensor, dict[str, Any]]:
        """
        :param policy_kwargs: what the policy takes besides the observations and the LSTM's arguments
        :return: the actions from the LSTM policy (its states reset where an episode starts), their log
            probabilities, and the LSTM states they started from, to be stored with the step; the new states are
            kept for the next step
        """
        episode_starts = th.tensor(self._last_episode_starts, dtype=th.float32, device=self.device)
        actions, log_probs, lstm_states = self.policy.sample_actions(
            obs_tensor, self._last_lstm_states.pi, episode_starts, **policy_kwargs
        )
        stored = {"lstm_states": self._last_lstm_states}
        self._last_lstm_states = RNNStates(lstm_states, self._no_critic_states)
        return actions, log_probs, stored

    def _evaluate_actions(
        self, rollout_data: Any, actions: th.Tensor, **policy_kwargs: Any
    ) -> tuple[th.Tensor, th.Tensor | None]:
        _, log_prob, entropy = self.policy.evaluate_actions(
            rollout_data.observations, actions, rollout_data.lstm_states, rollout_data.episode_starts, **policy_kwargs
        )
        return log_prob, entropy

    def _rows_in_loss(self, rollout_data: Any) -> th.Tensor:
        return rollout_data.mask > 1e-8  # padding of the sequences, and samples left out of the loss

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_last_lstm_states", "_no_critic_states"]
