"""Smoke configurations of the benchmark scripts: they run end to end, write their outputs and resume."""

import argparse
import functools
import gzip
import json
import runpy
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch as th
import yaml
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_gpg import GPG
from sb3_gpg.zoo.registry import check_gpg_hyperparams
from sb3_gpg_bench import suites
from sb3_gpg_bench.experiments import EpisodeSeeds, PeriodicEvaluation, make_envs, shared_hyperparameters
from sb3_gpg_bench.suite import TRAINING_LOG, Run, budget_of, cpu, finished, random_scores, run_suite, train, zoo_entry
from sb3_gpg_bench.suites import PINNED_ENTRIES_FILE, PPO_ENTRY, SUITES, Setting, trial_params
from sb3_gpg_bench.timing import condition
from sb3_gpg_bench.timing import meta as run_meta
from sb3_gpg_bench.timing import resumed as resumed_parts
from tests.forkserver import SERVER

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def run(*args, cwd):
    result = SERVER.run(*args, cwd=cwd, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_paper_benchmark_smoke_and_resume(tmp_path):
    args = [str(SCRIPTS / "benchmark_paper.py"), "--envs", "CartPole-v1", "--n-envs", "1", "2", "--seeds", "0",
            "--iterations", "2", "--eval-every", "1", "--eval-episodes", "2", "--n-steps", "16", "--jobs", "2",
            "--out", "out"]  # fmt: skip
    output = run(*args, cwd=tmp_path)
    assert "4 runs, 0 already done" in output
    out = tmp_path / "out"
    assert len(list((out / "runs").glob("*.csv"))) == 4
    curves = (out / "curves.csv").read_text().splitlines()
    assert curves[0] == "env,algo,n_envs,seed,iteration,env_steps,wall_time,vec_env,eval_mean"
    assert len(curves) == 1 + 4 * 2  # 4 runs x 2 evaluations
    assert "| 2 | gpg |" in (out / "table.md").read_text()
    assert (out / "CartPole-v1_iterations.png").stat().st_size > 10_000
    assert "4 runs, 4 already done, 0 to run" in run(*args, cwd=tmp_path)
    # An invocation over part of the folder's grid reports every finished run in it, not only its own
    part = [*args[: args.index("--n-envs") + 1], "2", *args[args.index("--seeds") :]]
    assert "1 runs, 1 already done" in run(*part, "--algos", "ppo", cwd=tmp_path)
    assert "| 1 | gpg |" in (table := (out / "table.md").read_text()) and "| 2 | ppo |" in table
    assert len((out / "curves.csv").read_text().splitlines()) == 1 + 4 * 2

    run(str(SCRIPTS / "benchmark_paper.py"), "--summary", "--out", ".", cwd=tmp_path)  # every grid under --out: here, out/
    summary = (tmp_path / "summary.md").read_text()
    assert "| 1 | gpg | " in summary and "(1) | 255.7 |" in summary  # 1 env, GPG: one seed here, the paper's value beside
    assert "| 128 | ppo | not run | 474.2 |" in summary


def test_speed_benchmark_smoke(tmp_path):
    output = run(str(SCRIPTS / "benchmark_speed.py"), "--configs", "CartPole-v1:2:time", "--n-steps", "16", "--repeats", "1",
                 "--peak-iterations", "1", "--output", "speed.md", cwd=tmp_path)  # fmt: skip
    table = (tmp_path / "speed.md").read_text()
    assert "| CartPole-v1 | 2 | time | dummy | 16 |" in table and "MiB" in table
    assert (tmp_path / "speed.json").exists()
    assert "iter ratio" in output


def test_estimator_benchmark_smoke(tmp_path):
    run(str(SCRIPTS / "benchmark_speed.py"), "--estimator", "--shapes", "small:2:16:3", "--repeats", "1",
        "--output", "estimator.md", cwd=tmp_path)  # fmt: skip
    lines = (tmp_path / "estimator.md").read_text().splitlines()
    assert "| option | small (2 x 16, 3 dims) |" in lines
    assert sum(line.startswith("| the default with 8 folds") for line in lines) == 2
    script_path = str(SCRIPTS / "benchmark_speed.py")
    refused = SERVER.run(script_path, "--estimator", "--shapes", "small:2:16", cwd=tmp_path, timeout=600)
    assert refused.returncode == 2 and "'small:2:16': give a rollout's shape as" in refused.stderr
    refused = SERVER.run(script_path, "--shapes", "small:2:16:3", cwd=tmp_path, timeout=600)
    assert refused.returncode == 2 and "pass --estimator" in refused.stderr
    script = runpy.run_path(script_path)
    for wrong in ("small:0:16:3", "small:2:16:x", "small:2:16:3:1"):
        with pytest.raises(argparse.ArgumentTypeError):
            script["estimator_shape"](wrong)
    # the rollouts timed have the shape asked for, observation size included
    estimator_times = script["estimator_times"]
    module, shapes = estimator_times.__globals__, set()
    estimate = module["estimate"]

    def recorded(observations, *args, **kwargs):
        shapes.add(observations.shape)
        return estimate(observations, *args, **kwargs)

    module["estimate"] = recorded
    estimator_times(1, 0, [("wide", 1, 8, 40)])
    assert shapes == {(8, 1, 40)}


@pytest.mark.slow
def test_gpu_benchmark_smoke_on_the_cpu(tmp_path):
    output = run(str(SCRIPTS / "benchmark_gpu.py"), "--devices", "cpu-1", "cpu-N", "--rows", "mlp-64", "cnn-84x84x1",
                 "--repeats", "1", "--n-steps", "8", "--jsonl", "rows.jsonl", cwd=tmp_path)  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    # a CNN on one thread is left out
    assert [(row["row"], row["device"]) for row in rows[1:]] == [
        ("mlp-64", "cpu-1"),
        ("mlp-64", "cpu-N"),
        ("cnn-84x84x1", "cpu-N"),
    ]
    assert all(row["ratio"] == row["gpg_iteration"] / row["ppo_iteration"] > 0 for row in rows[1:])
    assert "GPG/PPO" in output


def test_gpu_benchmark_page_regenerates_from_its_committed_runs(tmp_path):
    committed = SCRIPTS.parent / "benchmarks"
    runs = sorted((committed / "gpu").glob("speed_run*.jsonl"), key=lambda path: int(path.stem.removeprefix("speed_run")))
    run(str(SCRIPTS / "benchmark_gpu.py"), "--report", *map(str, runs), "--output", "speed_gpu.md", cwd=tmp_path)
    assert (tmp_path / "speed_gpu.md").read_text() == (committed / "speed_gpu.md").read_text()


@pytest.mark.slow
def test_paper_benchmark_stops_at_a_checkpoint_and_resumes(tmp_path):
    # A run far too long to finish: --stop-after ends it at its first checkpoint after 15 s (every 2 iterations)
    args = [str(SCRIPTS / "benchmark_paper.py"), "--envs", "CartPole-v1", "--n-envs", "2", "--seeds", "0", "--algos", "gpg",
            "--eval-every", "2", "--eval-episodes", "1", "--n-steps", "16", "--jobs", "1", "--out", "out"]  # fmt: skip
    runs = tmp_path / "out" / "runs"
    name = "CartPole-v1__gpg__2envs__seed0"
    output = run(*args, "--iterations", "1000000", "--stop-after", "0.25", cwd=tmp_path)
    assert "stopped by --stop-after" in output and "No finished run" in output
    assert not (runs / f"{name}.csv").exists()
    partial = [line.split(",") for line in (runs / f"{name}.partial.csv").read_text().splitlines()[1:]]
    stopped_at = int(partial[-1][4])
    assert [int(row[4]) for row in partial] == list(range(2, stopped_at + 1, 2))
    assert (runs / f"{name}.checkpoint.zip").exists()

    # Resumed with a budget of two more iterations
    output = run(*args, "--iterations", str(stopped_at + 2), cwd=tmp_path)
    assert "1 run(s) resume from their checkpoint" in output and "1 to run" in output
    curve = [line.split(",") for line in (runs / f"{name}.csv").read_text().splitlines()]
    assert curve[0][-2:] == ["eval_mean", "resumed_at"]
    assert [int(row[4]) for row in curve[1:]] == list(range(2, stopped_at + 3, 2))
    assert [int(row[5]) for row in curve[1:]] == [32 * int(row[4]) for row in curve[1:]]  # env steps go on from the checkpoint
    assert {row[-1] for row in curve[1:]} == {str(stopped_at)}
    assert sorted(path.name for path in runs.iterdir()) == [f"{name}.csv"]  # checkpoint files removed once finished


def test_paper_benchmark_minibatches():
    # LunarLander keeps RL Zoo's minibatch of 64 at every env count; --n-minibatches fixes their number instead
    assert shared_hyperparameters("LunarLander-v3", 128, None)[0]["batch_size"] == 64
    assert shared_hyperparameters("LunarLander-v3", 16, None, n_minibatches=256)[0]["batch_size"] == 64
    assert shared_hyperparameters("LunarLander-v3", 128, None, n_minibatches=256)[0]["batch_size"] == 512
    # CleanRL's classic control settings: 4 minibatches of the rollout, unless overridden
    assert shared_hyperparameters("CartPole-v1", 4, None)[0]["batch_size"] == 128
    kwargs, _ = shared_hyperparameters("CartPole-v1", 4, None, n_minibatches=8)
    assert kwargs["batch_size"] == 64 and "n_minibatches" not in kwargs


def test_periodic_evaluation_follows_the_update_one_seed_per_episode():
    # The runners' evaluation (the committed runs were made so): at the rollout start after every eval_every iterations,
    # after that iteration's update, one deterministic episode on each consecutive evaluation seed (a learning rate at
    # which every update changes these returns)
    def model() -> GPG:
        return GPG("MlpPolicy", make_envs("CartPole-v1", 2, 0), n_steps=16, batch_size=32, learning_rate=1e-2,
                   binning="universal", seed=0, device="cpu")  # fmt: skip

    trained = model()
    eval_env = make_envs("CartPole-v1", 1, 0, wrapper_class=EpisodeSeeds)
    evaluation = PeriodicEvaluation(eval_env, 2, lambda e: dict(iteration=e.iteration, mean=e.last_mean_reward),
                                    eval_seed=100, n_eval_episodes=3)  # fmt: skip
    trained.learn(6 * 32, callback=evaluation)
    evaluation.evaluate()  # after the last iteration

    by_hand, plain_env, expected = model(), make_envs("CartPole-v1", 1, 0), []
    for iteration in (2, 4, 6):
        by_hand.learn(2 * 32, reset_num_timesteps=False)
        returns = []
        for k in range(3):
            plain_env.seed(100 + k)
            returns.append(evaluate_policy(by_hand, plain_env, n_eval_episodes=1)[0])
        expected.append(dict(iteration=iteration, mean=float(np.mean(returns))))
    assert evaluation.rows == expected


def test_paper_benchmark_ablation_subset_and_unknown_algo(tmp_path):
    script = str(SCRIPTS / "benchmark_paper.py")
    # --algos picks variants of the ablation instead of running them all (10); --report-only trains nothing
    output = run(script, "--ablation", "--algos", "gpg_universal", "gpg_time", "--n-envs", "4", "--seeds", "0",
                 "--report-only", "--out", "out", cwd=tmp_path)  # fmt: skip
    assert "2 runs, 0 already done, 2 to run" in output
    result = SERVER.run(script, "--algos", "gpg_spatial_2.0", "--out", "out", cwd=tmp_path, timeout=120)
    assert result.returncode == 2 and "unknown --algos ['gpg_spatial_2.0']" in result.stderr


def test_main_job_trains_evaluates_and_saves(tmp_path):
    # The README's main job, shortened: python -m sb3_gpg trains with a progress bar, evaluates and saves
    output = run("-m", "sb3_gpg", "--timesteps", "256", "--eval-episodes", "2", "--save", "model", cwd=tmp_path)
    assert "training GPG on CartPole-v1, 256 steps" in output and "Evaluation over 2 episodes" in output
    assert (tmp_path / "model.zip").stat().st_size > 1_000


def short_rollouts(monkeypatch):
    """The main job's GPG with rollouts of 64 steps per env: what a test of its options checks needs no more"""
    import sb3_gpg

    monkeypatch.setattr(sb3_gpg, "GPG", functools.partial(GPG, n_steps=64, batch_size=64))


def test_main_job_trains_on_one_torch_thread_unless_told_otherwise(monkeypatch):
    from sb3_gpg.__main__ import main

    short_rollouts(monkeypatch)  # and a full rollout on two threads thrashes a busy machine
    try:
        th.set_num_threads(2)
        main(["--timesteps", "64", "--eval-episodes", "1"])
        assert th.get_num_threads() == 1
        main(["--timesteps", "64", "--eval-episodes", "1", "--num-threads", "2"])
        assert th.get_num_threads() == 2
    finally:
        th.set_num_threads(1)


def test_main_job_on_envpool(monkeypatch, capsys):
    pytest.importorskip("envpool")
    from sb3_gpg.__main__ import main

    short_rollouts(monkeypatch)
    main(["--timesteps", "512", "--n-envs", "4", "--vec-env", "envpool", "--eval-episodes", "2"])
    output = capsys.readouterr().out
    assert "4 env(s) (envpool)" in output and "Evaluation over 2 episodes" in output


@pytest.mark.slow
def test_paper_and_speed_benchmarks_on_envpool(tmp_path):
    pytest.importorskip("envpool")
    args = [str(SCRIPTS / "benchmark_paper.py"), "--envs", "CartPole-v1", "--n-envs", "2", "--seeds", "0",
            "--iterations", "2", "--eval-every", "1", "--eval-episodes", "1", "--n-steps", "16", "--jobs", "1",
            "--vec-env", "envpool", "--out", "out"]  # fmt: skip
    run(*args, cwd=tmp_path)
    assert "| 2 | gpg | " in (table := (tmp_path / "out" / "table.md").read_text()) and "(1) [envpool] |" in table
    rows = (tmp_path / "out" / "runs" / "CartPole-v1__ppo__2envs__seed0.csv").read_text().splitlines()
    assert rows[0].split(",")[-2:] == ["vec_env", "eval_mean"] and rows[1].split(",")[-2] == "envpool"

    run(str(SCRIPTS / "benchmark_speed.py"), "--configs", "CartPole-v1:2:time:envpool", "CartPole-v1:2:time:subproc",
        "--n-steps", "16", "--repeats", "1", "--peak-iterations", "0", "--output", "speed.md", cwd=tmp_path)  # fmt: skip
    table = (tmp_path / "speed.md").read_text()
    assert "| CartPole-v1 | 2 | time | envpool | 16 |" in table and "| CartPole-v1 | 2 | time | subproc | 16 |" in table
    profile = run(str(SCRIPTS / "benchmark_speed.py"), "--profile", "CartPole-v1:2:time:envpool", "--n-steps", "16",
                  "--repeats", "1", cwd=tmp_path)  # fmt: skip
    assert "GPG, CartPole-v1:2:time:envpool, 1 iterations" in profile and "on_policy.py:" in profile and "(train)" in profile


@pytest.mark.slow
def test_paper_benchmark_verify(tmp_path):
    args = [str(SCRIPTS / "benchmark_paper.py"), "--envs", "CartPole-v1", "--n-envs", "1", "--seeds", "0", "1",
            "--algos", "gpg", "--iterations", "2", "--eval-every", "1", "--eval-episodes", "1", "--n-steps", "16",
            "--jobs", "2", "--out", "out"]  # fmt: skip
    run(*args, cwd=tmp_path)
    assert "2 of 2 finished runs reproduced their first evaluation" in run(*args, "--verify", cwd=tmp_path)

    # A committed first evaluation that training does not give again is reported, with exit status 1
    path = tmp_path / "out" / "runs" / "CartPole-v1__gpg__1envs__seed1.csv"
    lines = path.read_text().splitlines()
    fields = lines[1].split(",")
    lines[1] = ",".join([*fields[:-1], str(float(fields[-1]) + 1.0)])
    path.write_text("\n".join(lines) + "\n")
    result = SERVER.run(*args, "--verify", cwd=tmp_path, timeout=600)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert "seed1: iteration 1" in result.stdout and "DIFFERENT" in result.stdout
    assert "1 of 2 finished runs reproduced" in result.stdout


def test_long_horizon_study_smoke(tmp_path):
    run(str(SCRIPTS / "study_long_horizon.py"), "run", "--stage", "gamma", "--envs", "LunarLander-v3", "--seeds", "0",
        "--algos", "gpg", "ppo", "--jobs", "1", "--iterations", "2", "--eval-every", "1", "--n-steps", "16", "--out", "out",
        "--vec-env", "dummy", cwd=tmp_path)  # fmt: skip
    results = (tmp_path / "out" / "results.md").read_text()
    assert "## LunarLander-v3_gamma_0.99" in results  # a cell with a shared setting changed has its own folder
    assert all(f"| 16 | {algo} | 0 |" in results for algo in ("gpg", "ppo"))
    assert "gpg_bootstrap" not in results  # in the stage, but not among --algos


def test_long_horizon_study_names_what_is_not_in_the_stage(tmp_path):
    for option, name in (("--algos", "gpg_bootsrap"), ("--envs", "CartPole-v1")):
        result = SERVER.run(str(SCRIPTS / "study_long_horizon.py"), "run", "--stage", "lr", option, name, "--out", "out",
                            cwd=tmp_path, timeout=120)  # fmt: skip
        assert result.returncode == 2 and f"{option}: ['{name}'] not in stage 'lr'" in result.stderr
        assert not (tmp_path / "out").exists()  # nothing started


def test_paper_benchmark_gamma_overrides_both_algorithms():
    assert shared_hyperparameters("LunarLander-v3", 16, None)[0]["gamma"] == 0.999
    assert shared_hyperparameters("LunarLander-v3", 16, None, None, 0.99)[0]["gamma"] == 0.99


def test_paper_benchmark_lr_schedule_override():
    assert shared_hyperparameters("LunarLander-v3", 16, None)[0]["learning_rate"] == 3e-4
    annealed = shared_hyperparameters("LunarLander-v3", 16, None, lr_schedule="lin")[0]["learning_rate"]
    assert annealed(1.0) == pytest.approx(3e-4) and annealed(0.0) == 0.0  # SB3's progress_remaining: 1 -> 0
    assert shared_hyperparameters("CartPole-v1", 4, None, lr_schedule="const")[0]["learning_rate"] == 2.5e-4


@pytest.mark.parametrize(
    "family, envs, algos",
    [
        ("maskable", ["Taxi-v4"], ["gpg_mask", "ppo_mask"]),
        ("recurrent", ["CartPoleNoVel-v1"], ["gpg_lstm", "ppo_lstm"]),
    ],
)
@pytest.mark.slow
def test_contrib_benchmark_smoke(tmp_path, family, envs, algos):
    args = [str(SCRIPTS / "small_grids.py"), "contrib", "--family", family, "--envs", *envs, "--algos", *algos, "--seeds",
            "0", "--jobs", "1", "--iterations", "2", "--n-steps", "16", "--out", "out"]  # fmt: skip
    assert f"{2 * len(envs)} runs, 0 already done, {2 * len(envs)} to run" in run(*args, cwd=tmp_path)
    results = (tmp_path / "out" / "results.md").read_text()
    assert all(f"| {env} | {algo} | 1 |" in results for env in envs for algo in algos)
    assert (tmp_path / "out" / "curves.png").stat().st_size > 10_000
    assert "already done, 0 to run" in run(*args, cwd=tmp_path)


@pytest.mark.parametrize(
    "command, folder",
    [(["contrib", "--family", "maskable"], "maskable"), (["contrib", "--family", "recurrent"], "recurrent"),
     (["mask-recurrent"], "mask_recurrent"), (["tiny-budgets"], "tiny_budgets")],
)  # fmt: skip
def test_small_grids_reports_regenerate_the_committed_tables(tmp_path, command, folder):
    committed = SCRIPTS.parent / "benchmarks" / folder
    out = tmp_path / folder
    shutil.copytree(committed, out, ignore=shutil.ignore_patterns("*.png", "results.md"))
    run(str(SCRIPTS / "small_grids.py"), *command, "--report-only", "--out", str(out), cwd=tmp_path)
    assert (out / "results.md").read_text() == (committed / "results.md").read_text()


def test_tiny_budgets_run_a_setting_once_as_gpg_resolves_it():
    from sb3_gpg_bench.tiny_budgets import TINY_SETTINGS, TINY_TASKS, distinct_settings

    box = distinct_settings(TINY_TASKS["IdentityEnvBox(eps=0.5)"], list(TINY_SETTINGS))
    discrete = distinct_settings(TINY_TASKS["IdentityEnv(4)"], list(TINY_SETTINGS))
    # the default is the linear baseline on Box observations (so naming it is no setting of its own there), the bins
    # on Discrete ones; knn reads Box ones only
    assert "baseline=linear" not in box and "baseline=bins" in box and "baseline=knn" in box
    assert "baseline=bins" not in discrete and "baseline=knn" not in discrete and "leave_one_out" in discrete
    assert "gamma=0.4" not in discrete  # the discrete tests' own gamma


def test_long_horizon_study_compares_with_ppo_on_the_same_seeds():
    _versus = runpy.run_path(str(SCRIPTS / "study_long_horizon.py"))["_versus"]  # the script's own, not shared
    ppo = {0: 280.0, 1: 250.0, 2: 270.0}
    assert _versus({0: 260.0, 1: 240.0}, ppo) == "-15.0"  # not against PPO's 3-seed mean (-1.7)
    assert _versus({0: 260.0, 3: 100.0}, ppo) == "-20.0 (seeds 0)"  # seed 3 has no PPO run to pair with
    assert _versus({3: 100.0}, ppo) == ""


def test_long_horizon_study_reads_borrowed_runs(tmp_path):
    # HalfCheetah's 16-env defaults and PPO are the paper grid's runs: the study's report reads them beside its own
    run_files = runpy.run_path(str(SCRIPTS / "study_long_horizon.py"))["run_files"]
    own = tmp_path / "long_horizon" / "HalfCheetah-v5" / "runs"
    grid = tmp_path / "paper" / "halfcheetah" / "runs"
    grid_runs = ["gpg__16envs__seed0.csv", "gpg__16envs__seed1.partial.csv", "gpg__4envs__seed0.csv"]
    for folder, names in ((own, ["gpg_bootstrap__16envs__seed0.csv"]), (grid, grid_runs)):
        folder.mkdir(parents=True)
        for name in names:
            (folder / f"HalfCheetah-v5__{name}").write_text("")
    names = [path.name for path in run_files(tmp_path / "long_horizon", own.parent)]
    assert names == ["HalfCheetah-v5__gpg_bootstrap__16envs__seed0.csv", "HalfCheetah-v5__gpg__16envs__seed0.csv"]


@pytest.mark.slow
def test_zoo_suite_runs_resumes_and_reports_a_tiny_grid(tmp_path):
    args = [str(SCRIPTS / "zoo_suite.py"), "run", "--suite", "smoke", "--seeds", "100", "--budget", "512", "--jobs", "2",
            "--out", "out"]  # fmt: skip
    assert "2 runs, 0 already done, 2 to run" in run(*args, cwd=tmp_path)
    for name in ("CartPole-v1__ppo__seed100", "CartPole-v1__gpg_linear__seed100"):
        files = sorted(path.name for path in (tmp_path / "out" / "runs" / name).iterdir())
        assert files == ["args.yml", "config.yml", "evaluations.npz", "meta.json", "training_log.json.gz"]  # no model files
        evaluations = np.load(tmp_path / "out" / "runs" / name / "evaluations.npz")
        # every twentieth of the budget (RL Zoo rounds the frequency down to whole steps of all envs), 10 episodes each
        assert len(evaluations["results"]) >= 20 and evaluations["results"].shape[1] == 10
        saved_args = yaml.load((tmp_path / "out" / "runs" / name / "args.yml").read_text(), Loader=yaml.UnsafeLoader)
        assert dict(saved_args)["seed"] == 100 and dict(saved_args)["eval_seed"] == 10_100  # evaluated apart
        # when each evaluation was written, and the machine's load through the run
        meta = json.loads((tmp_path / "out" / "runs" / name / "meta.json").read_text())
        assert len(meta["evaluation_wall_s"]) == len(evaluations["timesteps"])
        assert 0 < meta["evaluation_wall_s"][0] <= meta["evaluation_wall_s"][-1] <= meta["wall_time_s"] + 1
        assert meta["load"]["runs_beside_max"] >= 0 and len(meta["load"]["samples"]) >= 1
        assert meta["cpu"] == cpu()  # the processor, whose rounding a MuJoCo task's runs depend on
    assert (
        "- - - baseline\n    - linear"
        in (tmp_path / "out" / "runs" / "CartPole-v1__gpg_linear__seed100" / "config.yml").read_text()
    )
    assert "2 runs, 2 already done, 0 to run" in run(*args, cwd=tmp_path)
    table = (tmp_path / "out" / "table.md").read_text()
    assert "| CartPole-v1 | ppo | 1 |" in table and "| CartPole-v1 | gpg_linear | 1 |" in table
    assert (tmp_path / "out" / "curves.png").stat().st_size > 10_000
    assert not (tmp_path / "out" / "aggregate.md").exists()  # no random policy's scores yet

    # PPO's run paused at each rollout (at a time passed already; a part's first rollout sets back what resuming changed)
    # and gone on with by the same command, part by part, is the run made through
    paused_args = [*args[:-1], "paused_out", "--settings", "ppo", "--paused-in", "unfinished", "--pause-at",
                   "2000-01-01T00:00"]  # fmt: skip
    name = "CartPole-v1__ppo__seed100"  # RL Zoo's entry: 8 envs x 32 steps a rollout
    for steps in (0, 256):
        result = SERVER.run(*paused_args, cwd=tmp_path, timeout=600)
        assert result.returncode != 0 and f"paused at step {steps} of 512" in result.stderr + result.stdout
        assert not (tmp_path / "paused_out" / "runs" / name).exists()
    run(*paused_args, cwd=tmp_path)
    assert not (tmp_path / "unfinished" / name).exists()
    through, resumed = tmp_path / "out" / "runs" / name, tmp_path / "paused_out" / "runs" / name
    for file in ("evaluations.npz", "config.yml", "args.yml", TRAINING_LOG):
        assert (resumed / file).read_bytes() == (through / file).read_bytes(), file
    parts = run_meta(resumed)["segments"]
    assert len(parts) == 3 and run_meta(resumed)["wall_time_s"] == pytest.approx(sum(p["wall_time_s"] for p in parts), abs=0.1)
    assert len(run_meta(resumed)["evaluation_wall_s"]) == len(np.load(through / "evaluations.npz")["timesteps"])
    assert run_meta(resumed)["evaluation_wall_s"] == sorted(run_meta(resumed)["evaluation_wall_s"])
    assert resumed_parts(resumed) == 2 and resumed_parts(through) == 0 and condition(resumed) is None

    # The same run submitted to a Ray instance started here trains to the same evaluations
    pytest.importorskip("ray")
    ray_args = [*args[:-1], "ray_out", "--settings", "ppo", "--ray-address", "local"]
    assert "1 runs, 0 already done, 1 to run, on Ray (local)" in run(*ray_args, cwd=tmp_path)
    run_folders = [tmp_path / out / "runs" / "CartPole-v1__ppo__seed100" for out in ("out", "ray_out")]
    evaluations = [np.load(folder / "evaluations.npz") for folder in run_folders]
    np.testing.assert_array_equal(evaluations[0]["results"], evaluations[1]["results"])


def test_zoo_suite_refuses_what_is_not_in_the_suite(tmp_path):
    def zoo_suite(*args):
        return SERVER.run(str(SCRIPTS / "zoo_suite.py"), *args, "--suite", "smoke", "--out", "out", cwd=tmp_path, timeout=120)

    result = zoo_suite("report", "--envs", "Hopper-v5")
    assert result.returncode == 2 and "not in the smoke suite: Hopper-v5; its tasks: CartPole-v1" in result.stderr
    result = zoo_suite("run")
    assert result.returncode == 2 and "run: give the --seeds" in result.stderr


def test_random_policy_scores_are_seeded_episodes_of_uniform_actions():
    scores = random_scores(["CartPole-v1", "Pendulum-v1"], seed=10_000, n_episodes=20)
    assert scores == random_scores(["CartPole-v1", "Pendulum-v1"], seed=10_000, n_episodes=20)
    # CartPole: about 22 steps when acting at random; Pendulum: 200 steps of at most 0 and about -1200 in all
    assert 10 < scores["CartPole-v1"]["mean"] < 40 and -1600 < scores["Pendulum-v1"]["mean"] < -800
    assert scores["CartPole-v1"]["episodes"] == 20


def test_a_training_that_exits_before_its_budget_is_not_kept(monkeypatch):
    # RL Zoo saves a training stopped by Ctrl-C and exits 0: the grid must not take it for a finished run
    stopped = subprocess.CompletedProcess([], 0, stdout="|    total_timesteps | 256      |\n", stderr="KeyboardInterrupt")
    monkeypatch.setattr("sb3_gpg_bench.suite.run_watched", lambda *args: (stopped, {}, []))
    with pytest.raises(RuntimeError, match="stopped at step 256 of 400 \\(interrupted\\?\\): not kept"):
        train(Run("CartPole-v1", Setting("ppo", "ppo"), 100), eval_seed_offset=10_000, budget=400)


@pytest.mark.slow
def test_zoo_suite_keeps_the_runs_that_finish_when_one_fails(tmp_path):
    bad = Setting("bad", "gpg", ("binning:'nonsense'",))
    runs = [Run("CartPole-v1", bad, 100), Run("CartPole-v1", Setting("ppo", "ppo"), 100)]
    with pytest.raises(RuntimeError, match=r"1 of 2 runs failed:\nCartPole-v1__bad__seed100: .*binning"):
        run_suite(runs, tmp_path, eval_seed_offset=10_000, budget=512)
    assert json.loads((tmp_path / "runs" / "CartPole-v1__ppo__seed100" / "meta.json").read_text())["eval_seed"] == 10_100
    assert not (tmp_path / "runs" / "CartPole-v1__bad__seed100").exists()
    # A finished run is kept only for the grid it was run for
    assert finished(runs[1], tmp_path, 10_000, 512)
    with pytest.raises(ValueError, match="ran 512 steps with evaluation seed 10100, this grid asks for 800 and 10100"):
        finished(runs[1], tmp_path, 10_000, 800)
    with pytest.raises(ValueError, match="paused_in"):
        run_suite(runs, tmp_path, 10_000, 512, pause_at=0.0)


def test_zoo_suite_trains_every_setting_for_rl_zoo_ppo_budget():
    # GPG's own entry would train 2e5 steps on Acrobot (PPO: 1e6)
    assert budget_of("Acrobot-v1", None) == 1_000_000 and budget_of("Pendulum-v1", None) == 100_000
    assert budget_of("HalfCheetah-v5", None) == 1_000_000  # from RL Zoo's v4 entry
    assert budget_of("CartPole-v1", 400) == 400


def test_every_gpg_setting_of_every_suite_is_a_valid_entry_on_each_task():
    # A setting's -params are parsed as rl_zoo3 parses them and checked with its task's entry, so a typo fails here
    # rather than hours into a grid
    from rl_zoo3.utils import StoreDict

    parser = argparse.ArgumentParser()
    parser.add_argument("-params", nargs="+", action=StoreDict, default={})
    checked = 0
    pinned_entries = yaml.safe_load(PINNED_ENTRIES_FILE.read_text())
    for name, suite in SUITES.items():
        for setting in suite.settings:
            if setting.algo != "gpg":
                continue
            params = parser.parse_args(["-params", *setting.params] if setting.params else []).params
            pinned = None
            if setting.base == PPO_ENTRY:  # rl_zoo3's PPO entry for each task, run by GPG
                pinned = {env_id: zoo_entry("ppo", env_id)[0] for env_id in suite.tasks}
            elif setting.base:
                pinned = pinned_entries[setting.base]
            for env_id in suite.tasks if pinned is None else sorted(pinned):
                entry = (zoo_entry("gpg", env_id)[0] if pinned is None else pinned[env_id]) | params
                check_gpg_hyperparams(entry, f"{name}/{setting.name}/{env_id}")
                if "policy_kwargs" in entry:
                    assert isinstance(eval(entry["policy_kwargs"], {"nn": th.nn}), dict)
                checked += 1
    assert checked > 50


def test_study_summary_lists_the_best_trials_and_the_importances(tmp_path, monkeypatch):
    import optuna

    from sb3_gpg.zoo.registry import sample_gpg_params, sample_gpg_rollout

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "study.log")))
    study = optuna.create_study(study_name="s", storage=storage, sampler=optuna.samplers.RandomSampler(seed=0))
    box = make_envs("CartPole-v1", 1, seed=0).observation_space
    for score in (10.0, 30.0, 20.0, 5.0):
        trial = study.ask()
        n_envs = sample_gpg_rollout(trial, box)["n_envs"]
        sample_gpg_params(trial, 2, n_envs, {})
        study.tell(trial, score)
    study.tell(study.ask(), state=optuna.trial.TrialState.PRUNED)
    output = run(str(SCRIPTS / "study_summary.py"), "--storage", "study.log", "--study-name", "s", "--best", "2",
                 "--out", "out", cwd=tmp_path)  # fmt: skip
    assert "5 trials: 4 complete, 1 pruned." in output
    best = [line for line in output.splitlines() if line.startswith("| 1 | 30.0 |") or line.startswith("| 2 | 20.0 |")]
    assert len(best) == 2 and "n_envs=" in best[0] and "| 0 | 10.0 |" not in output  # the two best only
    assert "| one_minus_gamma |" in output and (tmp_path / "out" / "s.png").stat().st_size > 10_000
    # A trial as a zoo_tuning setting, read from the journal: rl_zoo3's overrides that build the trial's model
    sampled = study.trials[1].params
    monkeypatch.setattr(suites, "BENCHMARKS", tmp_path)
    (tmp_path / "mujoco_search").mkdir()
    # committed compressed, as the MuJoCo search's journals are (sb3_gpg_bench.journal)
    (tmp_path / "mujoco_search" / "s_v5.log.gz").write_bytes(gzip.compress((tmp_path / "study.log").read_bytes()))
    for horizon_digits in (False, True):
        overrides = dict(override.split(":", 1) for override in trial_params("s", 1, horizon_digits))
        assert float(overrides["gamma"]) == pytest.approx(1 - sampled["one_minus_gamma"], rel=1e-3)
        assert int(overrides["n_envs"]) == 2 ** sampled["n_envs_pow"]
