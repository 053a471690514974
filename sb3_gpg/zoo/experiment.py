"""
rl_zoo3's ``ExperimentManager`` with sb3_gpg's defaults and checks for GPG's algorithms (``ZooExperimentManager``), and
its EnvPool variant (``--vec-env envpool``, any ``--algo``).
"""

import argparse
import functools
import warnings
from typing import Any

from rl_zoo3.callbacks import SaveVecNormalizeCallback
from rl_zoo3.hyperparams_opt import HYPERPARAMS_SAMPLER
from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
from sb3_contrib.common.maskable.utils import is_masking_supported
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper, VecMonitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from sb3_gpg.common.maskable_recurrent.callbacks import MaskableRecurrentEvalCallback
from sb3_gpg.common.observation_space import options_for_space
from sb3_gpg.common.vec_env.envpool import make_envpool_env
from sb3_gpg.estimator.options import GroupOptions
from sb3_gpg.zoo.extensions import ExtendedExperimentManager
from sb3_gpg.zoo.registry import (
    GPG_ALGOS,
    ZooError,
    check_gpg_hyperparams,
    check_gpg_settings,
    sample_gpg_params,
    sample_gpg_rollout,
    searched_baselines,
    searched_binnings,
)

# The algorithms evaluated with action masks, and the callback that does it (sb3_gpg's carries the LSTM states too)
MASKED_EVALUATION = {"gpg_mask": MaskableEvalCallback, "gpg_mask_lstm": MaskableRecurrentEvalCallback}


class ZooExperimentManager(ExtendedExperimentManager):
    """
    rl_zoo3's ``ExperimentManager`` with sb3_gpg's extensions (``ExtendedExperimentManager``: ``eval_seed``,
    ``trial_score_window``); for sb3_gpg's algorithms (``GPG_ALGOS``) it defaults to sb3_gpg's hyperparameter file,
    checks the entry, evaluates ``gpg_mask`` and ``gpg_mask_lstm`` with action masks and searches the binnings that
    suit the observations. Other algorithms run as rl_zoo3 runs them.
    """

    def __init__(self, args: argparse.Namespace, algo: str, *zoo_args: Any, config: str | None = None, **kwargs: Any):
        if algo in GPG_ALGOS and config is None:
            # Saved in args.yml as the file the run used
            config = args.conf_file = str(GPG_ALGOS[algo][1])
        super().__init__(args, algo, *zoo_args, config=config, **kwargs)
        # the entry's estimator options, checked against the training envs' observations once they are made
        self._entry_options: GroupOptions | None = None

    def read_hyperparameters(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if self.algo not in GPG_ALGOS:
            return super().read_hyperparameters()
        try:
            hyperparams, saved_hyperparams = super().read_hyperparameters()
        except ValueError as error:  # rl_zoo3's error for a file with neither the env's entry nor a 'default' one
            raise ZooError(str(error)) from None
        self._entry_name = f"{self.config} for {self.env_name.gym_id}" + (" with -params" if self.custom_hyperparams else "")
        options = check_gpg_hyperparams(hyperparams, self._entry_name, GPG_ALGOS[self.algo][0])
        if not self.optimize_hyperparameters:  # a search samples its own
            self._entry_options = options
        if "env_kwargs" in hyperparams and not self.env_kwargs:
            # rl_zoo3 builds its evaluation env, and saves the args.yml that enjoy and record_video read, from the
            # command line's env kwargs only: give them the entry's, or e.g. CliffWalking's time limit is missing
            self.env_kwargs = self.args.env_kwargs = hyperparams["env_kwargs"]
            if self._eval_env_kwargs_args is None:
                self.eval_env_kwargs = self.env_kwargs
        return hyperparams, saved_hyperparams

    def _preprocess_hyperparams(self, hyperparams: dict[str, Any]) -> tuple[dict[str, Any], Any, Any, Any]:
        processed = super()._preprocess_hyperparams(hyperparams)
        if self.algo in GPG_ALGOS and not self.optimize_hyperparameters:  # a search samples valid settings
            check_gpg_settings(processed[0], self.n_envs, self._entry_name, GPG_ALGOS[self.algo][0])
        return processed

    def create_envs(self, n_envs: int, eval_env: bool = False, no_log: bool = False) -> VecEnv:
        env = super().create_envs(n_envs, eval_env=eval_env, no_log=no_log)
        if not eval_env and self.algo in MASKED_EVALUATION and not is_masking_supported(env):
            env.close()
            raise ZooError(
                f"--algo {self.algo} reads action masks, which {self.env_name.gym_id}'s envs do not give (no "
                "action_masks() method): use --algo gpg (gpg_lstm for an LSTM), or an env with action masks."
            )
        options = self._entry_options
        if not eval_env and options is not None:
            # what the observations cannot serve is known once the envs are made, before rl_zoo3 builds the model
            try:
                options_for_space(options, env.observation_space)
            except ValueError as error:
                env.close()
                raise ZooError(f"{self._entry_name}: {error}") from None
        return env

    def create_callbacks(self) -> None:
        if self.algo not in MASKED_EVALUATION:
            super().create_callbacks()
            return
        # rl_zoo3 evaluates with SB3's EvalCallback, which predicts without action masks: a masked evaluation takes its
        # place, with rl_zoo3's arguments
        eval_freq, self.eval_freq = self.eval_freq, -1
        super().create_callbacks()
        if eval_freq > 0 and not self.optimize_hyperparameters:
            self.eval_freq = max(eval_freq // self.n_envs, 1)
            self.callbacks.append(
                MASKED_EVALUATION[self.algo](
                    self.create_envs(self.n_eval_envs, eval_env=True),
                    callback_on_new_best=SaveVecNormalizeCallback(save_freq=1, save_path=self.params_path),
                    best_model_save_path=self.save_path,
                    n_eval_episodes=self.n_eval_episodes,
                    log_path=self.save_path,
                    eval_freq=self.eval_freq,
                    deterministic=self.deterministic_eval,
                )
            )

    def hyperparameters_optimization(self) -> None:
        if self.algo not in GPG_ALGOS:
            return super().hyperparameters_optimization()
        # rl_zoo3's objective gives the sampler no observation space: this study's is bound to the env's
        env = self.create_envs(1, no_log=True)
        self._searched_space = env.observation_space
        binnings, baselines = searched_binnings(env.observation_space), searched_baselines(env.observation_space)
        env.close()
        if self.n_jobs > 1:
            warnings.warn(
                f"--n-jobs {self.n_jobs}: trials that share a process share its envs' shape, so the search keeps the "
                "entry's n_envs and normalize; run one process per worker on a shared --storage to search them too."
            )
        registered = HYPERPARAMS_SAMPLER[self.algo]
        HYPERPARAMS_SAMPLER[self.algo] = functools.partial(self._sample_gpg_params, binnings=binnings, baselines=baselines)
        try:
            return super().hyperparameters_optimization()
        finally:  # rl_zoo3's dict is the process's: leave it as registered
            HYPERPARAMS_SAMPLER[self.algo] = registered

    def objective(self, trial: Any) -> float:
        if self.algo in GPG_ALGOS and self.n_jobs == 1:
            # The group's shape, before rl_zoo3 makes the trial's envs from it
            rollout = sample_gpg_rollout(trial, self._searched_space)
            self.n_envs = rollout["n_envs"]
            self.normalize = rollout.get("normalize", self.normalize)
        return super().objective(trial)

    def _sample_gpg_params(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """``sample_gpg_params``, with VecNormalize's discount set to the sampled gamma, as rl_zoo3 does for an entry."""
        hyperparams = sample_gpg_params(*args, **kwargs)
        if self.n_jobs == 1 and self.normalize:
            self.normalize_kwargs = {**self.normalize_kwargs, "gamma": hyperparams["gamma"]}
        return hyperparams


class VecMonitorSlot(VecEnvWrapper):
    """
    A wrapper that changes nothing, in the Gymnasium evaluation envs of an EnvPool run where the EnvPool training envs
    have their ``VecMonitor`` (``EnvPoolMonitor``, a subclass): SB3's ``EvalCallback`` warns when the training envs
    are not an instance of the evaluation envs' type, and copies ``VecNormalize``'s statistics by walking the two
    wrapper chains in step, which fails where one chain is a wrapper longer. Evaluation returns stay ``Monitor``'s.
    """

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> VecEnvStepReturn:
        return self.venv.step_wait()


class EnvPoolMonitor(VecMonitor, VecMonitorSlot):
    """SB3's ``VecMonitor`` (its behaviour, unchanged), of the type ``VecMonitorSlot`` holds the place of."""


class EnvPoolExperimentManager(ZooExperimentManager):
    """
    ``ZooExperimentManager`` whose training envs come from EnvPool (with the run's ``monitor.csv``, for
    ``plots train``); evaluation envs stay Gymnasium's, so that scores are measured on the reference env.

    :param vec_env_type: ``envpool`` (rl_zoo3's ``--vec-env``, which sb3_gpg lets take it)
    """

    def __init__(self, *args: Any, vec_env_type: str = "envpool", **kwargs: Any):
        # rl_zoo3 looks up dummy and subproc only; create_envs below replaces the class it finds
        super().__init__(*args, vec_env_type="dummy", **kwargs)

    def create_envs(self, n_envs: int, eval_env: bool = False, no_log: bool = False) -> VecEnv:
        # rl_zoo3 makes every env as self.vec_env_class(env_fns, **self.vec_env_kwargs) (its hook for special VecEnvs,
        # default_vec_env_cls): EnvPool's for training, DummyVecEnv's for evaluation
        monitor_dir = None if eval_env or no_log else self.save_path
        with self._create_envs_lock:
            # rl_zoo3 leaves it unannotated (inferred as ABCMeta); any VecEnv maker does
            self.vec_env_class = self._make_eval_env if eval_env else functools.partial(self._make_envpool_env, monitor_dir)  # type: ignore[assignment]
            return super().create_envs(n_envs, eval_env=eval_env, no_log=no_log)

    @staticmethod
    def _make_eval_env(env_fns: list, **kwargs: Any) -> VecEnv:
        """
        :param env_fns: rl_zoo3's Gymnasium env makers
        :param kwargs: rl_zoo3's ``vec_env_kwargs``
        :return: their DummyVecEnv, in the wrapper that matches the training envs' ``EnvPoolMonitor``
        """
        return VecMonitorSlot(DummyVecEnv(env_fns, **kwargs))

    def _make_envpool_env(self, monitor_dir: str | None, env_fns: list, **_: Any) -> VecEnv:
        """
        :param monitor_dir: where ``monitor.csv`` goes, None for no log
        :param env_fns: rl_zoo3's Gymnasium env makers: only their number is used
        :return: EnvPool's envs for training, in a ``VecMonitor`` where the run keeps a log and a ``VecMonitorSlot``
            otherwise (both change nothing in training)
        """
        if self.env_wrapper is not None:
            raise ZooError(
                f"--vec-env envpool: the entry's env_wrapper ({self.env_wrapper}) cannot wrap EnvPool's C++ envs; "
                "drop it from the hyperparameters or train with --vec-env dummy."
            )
        env = make_envpool_env(self.env_name.gym_id, n_envs=len(env_fns), seed=self.seed, **self.env_kwargs)
        if monitor_dir is None:
            return VecMonitorSlot(env)
        with warnings.catch_warnings():  # "already wrapped with a Monitor": both write the same episode statistics
            warnings.simplefilter("ignore", UserWarning)
            return EnvPoolMonitor(env, filename=monitor_dir)
