"""
The RL Zoo suite's report on synthetic runs: PPO-normalised scores and rliable's aggregate; wall times under the same
load, minibatch updates, parameters and time to score.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import yaml

from sb3_gpg_bench import suite_report
from sb3_gpg_bench.suite_report import report
from sb3_gpg_bench.suites import Setting, Suite
from sb3_gpg_bench.timing import _note_evaluations, condition, run_watched, trainings_beside


@pytest.fixture(autouse=True)
def fewer_bootstrap_resamples(monkeypatch):
    """
    These tests check the point estimates, the tables and the figures, not how wide the intervals are: rliable's
    bootstrap, most of their time at the reports' resamples, runs a tenth of them here (seeded all the same).
    """
    monkeypatch.setattr(suite_report, "BOOTSTRAP_REPS", suite_report.BOOTSTRAP_REPS // 10)


def fake_run(out, name, final_returns, wall_time_s=60.0, beside=0, config=None, runs="runs", loads=(1.5, 1.5)):
    """
    A finished run whose evaluations rise to ``final_returns`` (one per episode) at the last of 20, evenly over its
    wall time, made with ``beside`` other trainings at most (None: before the load record) and the 1-min loads
    ``loads`` sampled at its start and after a minute.
    """
    folder = out / runs / name
    folder.mkdir(parents=True)
    results = np.linspace(0.0, 1.0, 20)[:, None] * np.asarray(final_returns, float)[None, :]
    np.savez(folder / "evaluations.npz", timesteps=np.arange(1, 21) * 100, results=results)
    meta = {"wall_time_s": wall_time_s, "n_timesteps": 2000}
    if beside is not None:
        meta["load"] = {"samples": [[0.0, loads[0], beside], [60.0, loads[1], beside]], "runs_beside_max": beside}
        meta["evaluation_wall_s"] = list(np.linspace(wall_time_s / 20, wall_time_s, 20))
    (folder / "meta.json").write_text(json.dumps(meta))
    if config is not None:
        (folder / "config.yml").write_text(yaml.dump(config))


def test_zoo_suite_report_normalises_by_ppo_and_random_and_aggregates_with_rliable(tmp_path):
    pytest.importorskip("rliable")
    out = tmp_path / "out"
    suite = Suite(["CartPole-v1", "Pendulum-v1"], [Setting("ppo", "ppo"), Setting("gpg", "gpg")], "ppo", 10_000)
    ppo = {"CartPole-v1": [500.0, 400.0], "Pendulum-v1": [-200.0, -300.0]}
    gpg = {"CartPole-v1": [450.0, 500.0], "Pendulum-v1": [-600.0, -250.0]}
    random = {"CartPole-v1": 20.0, "Pendulum-v1": -1200.0}
    for seed in (0, 1):
        for env_id in suite.tasks:
            fake_run(out, f"{env_id}__ppo__seed{seed}", [ppo[env_id][seed]] * 10)
            fake_run(out, f"{env_id}__gpg__seed{seed}", [gpg[env_id][seed]] * 10, wall_time_s=30.0)
    (out / "random_scores.json").write_text(json.dumps({env_id: {"mean": value} for env_id, value in random.items()}))
    text = report(suite, out)
    # By hand: PPO's means 450 and -250; GPG's normalised scores 430/430, 480/430 and 600/950, 950/950
    normalised = np.array([[430 / 430, 600 / 950], [480 / 430, 950 / 950]])
    assert f"| CartPole-v1 | gpg | 2 | 475.0 ± 25.0 | {np.linspace(0, 1, 20)[-5:].mean() * 475:.1f} ± " in text
    assert "| CartPole-v1 | gpg | 2 |" in text and "| 1.06 | 0.5 |" in text  # 475 / 450; 30 s in minutes
    assert f"{normalised[:, 0].mean():.2f} ± {normalised[:, 0].std():.2f}" in (out / "aggregate.md").read_text()
    iqm = scipy.stats.trim_mean(normalised.ravel(), 0.25)
    assert f"| gpg | 2 | {iqm:.2f} [" in text
    # P(GPG > PPO) per task over the 4 pairs of runs (a tie counts half), averaged: CartPole 2.5 (GPG 1.0 and 1.12
    # against PPO 1.12 and 0.88), Pendulum 1 (0.63 and 1.0 against 1.05 and 0.95): (0.625 + 0.25) / 2
    (aggregate_row,) = [line for line in text.splitlines() if line.startswith("| gpg | 2 |")]
    assert aggregate_row.split("|")[5].strip().startswith("0.44 [")
    assert (out / "profile.png").stat().st_size > 10_000 and (out / "curves.png").stat().st_size > 10_000
    assert sorted(path.name for path in (out / "curves").glob("*.png")) == ["CartPole-v1.png", "Pendulum-v1.png"]
    # the README's table: final evaluations with their seeds; GPG's normalised means of the final evaluations and of
    # the last fives (each run's last five are a fraction of its final one); wall times in minutes
    last_five = np.linspace(0, 1, 20)[-5:].mean()
    cartpole_last_five = np.mean([(last_five * value - 20) / (last_five * 450 - 20) for value in gpg["CartPole-v1"]])
    assert (
        f"| CartPole-v1 | 450.0 ± 50.0 (2) | 475.0 ± 25.0 (2) | {normalised[:, 0].mean():.2f}; {cartpole_last_five:.2f} | "
        "1.0 / 0.5 |" in (out / "headline.md").read_text()
    )
    summary = "Across 2 tasks (CartPole-v1, Pendulum-v1), with 95% stratified bootstrap intervals: GPG's IQM of"
    assert f"{summary} PPO-normalised final scores {iqm:.2f} [" in (out / "headline.md").read_text()
    # the same runs give the same intervals, and the report leaves NumPy's global generator as it found it
    before = np.random.get_state()[1].copy()
    assert report(suite, out) == text
    np.testing.assert_array_equal(np.random.get_state()[1], before)


SUITE = Suite(["CartPole-v1", "Acrobot-v1"], [Setting("ppo", "ppo"), Setting("gpg", "gpg")], "ppo", 10_000)


def cartpole_runs(out):
    """Two seeds of CartPole-v1 for PPO (400) and GPG (300)."""
    for seed in (0, 1):
        fake_run(out, f"CartPole-v1__ppo__seed{seed}", [400.0] * 10)
        fake_run(out, f"CartPole-v1__gpg__seed{seed}", [300.0] * 10)


def test_zoo_suite_report_leaves_out_tasks_where_ppo_is_not_above_random(tmp_path):
    pytest.importorskip("rliable")
    cartpole_runs(tmp_path)
    for seed in (0, 1):
        fake_run(tmp_path, f"Acrobot-v1__ppo__seed{seed}", [-500.0] * 10)  # never swings up: the random policy's score
        fake_run(tmp_path, f"Acrobot-v1__gpg__seed{seed}", [-100.0] * 10)
    (tmp_path / "random_scores.json").write_text(json.dumps({"CartPole-v1": {"mean": 20.0}}))
    with pytest.raises(KeyError, match="no score for Acrobot-v1: measure it with the 'random' command"):
        report(SUITE, tmp_path)
    (tmp_path / "random_scores.json").write_text(json.dumps({"CartPole-v1": {"mean": 20.0}, "Acrobot-v1": {"mean": -495.0}}))
    text = report(SUITE, tmp_path)
    assert "Left out, where PPO's mean is not above the random policy's: Acrobot-v1." in text
    assert "Across 1 tasks (CartPole-v1)" in text and f"| gpg | 2 | {280 / 380:.2f} [" in text
    assert "| Acrobot-v1 | gpg | 2 | -100.0 ± 0.0 |" in text and "| +400.0 |" in text  # a difference, not a ratio
    # The README's table: Acrobot's final scores are not normalised ("-"), its last fives are (each a fraction of the
    # final one: PPO's is above the random policy's)
    last_five = np.linspace(0, 1, 20)[-5:].mean()
    acrobot = (last_five * -100 + 495) / (last_five * -500 + 495)
    assert (
        f"| Acrobot-v1 | -500.0 ± 0.0 (2) | -100.0 ± 0.0 (2) | -; {acrobot:.2f} | 1.0 / 1.0 |"
        in (tmp_path / "headline.md").read_text()
    )
    # a report of part of the grid leaves the README's table alone
    (tmp_path / "headline.md").unlink()
    report(SUITE, tmp_path, tasks=["CartPole-v1"])
    assert not (tmp_path / "headline.md").exists()


def test_a_task_without_runs_is_named_not_given_an_empty_row(tmp_path):
    pytest.importorskip("rliable")
    cartpole_runs(tmp_path)
    (tmp_path / "random_scores.json").write_text(json.dumps({"CartPole-v1": {"mean": 20.0}}))
    text = report(SUITE, tmp_path)
    assert "No runs here of: Acrobot-v1." in text
    for name in ("table.md", "aggregate.md", "headline.md"):
        written = (tmp_path / name).read_text()
        assert "| CartPole-v1 |" in written and "| Acrobot-v1 |" not in written, name


def row(text, start):
    (line,) = [line for line in text.splitlines() if line.startswith(start)]
    return line


def test_wall_times_are_compared_only_under_the_same_load(tmp_path):
    # CartPole: PPO alone (1 min) and beside one other training (2 min); GPG alone (0.5 min) and unrecorded
    fake_run(tmp_path, "CartPole-v1__ppo__seed0", [400.0] * 10, 60.0, beside=0)
    fake_run(tmp_path, "CartPole-v1__ppo__seed1", [400.0] * 10, 120.0, beside=1)
    fake_run(tmp_path, "CartPole-v1__gpg__seed0", [300.0] * 10, 30.0, beside=0)
    fake_run(tmp_path, "CartPole-v1__gpg__seed1", [300.0] * 10, 12.0, beside=None)
    # and alone, but with a load of 3 after its first minute (a test run beside it): compared with none
    fake_run(tmp_path, "CartPole-v1__gpg__seed2", [300.0] * 10, 600.0, beside=0, loads=(1.0, 3.0))
    # PPO alone, with the load of a run before it in its first minute's average only: compared
    fake_run(tmp_path, "CartPole-v1__ppo__seed2", [400.0] * 10, 60.0, beside=0, loads=(4.0, 1.2))
    # Acrobot: PPO alone, GPG beside one: no condition both have
    fake_run(tmp_path, "Acrobot-v1__ppo__seed0", [-100.0] * 10, 60.0, beside=0)
    fake_run(tmp_path, "Acrobot-v1__gpg__seed0", [-100.0] * 10, 60.0, beside=1)
    report(SUITE, tmp_path)
    text = (tmp_path / "table.md").read_text()
    assert row(text, "| CartPole-v1 | ppo |").endswith("| 1.0 |") and row(text, "| CartPole-v1 | gpg |").endswith("| 0.5 |")
    assert row(text, "| Acrobot-v1 | ppo |").endswith("| - |") and row(text, "| Acrobot-v1 | gpg |").endswith("| - |")
    assert "'-': no condition that every setting has runs under" in text
    # every run's wall time as measured, with its condition and mean load; none without its record
    timing = (tmp_path / "timing.md").read_text()
    assert "| CartPole-v1 | ppo | 1 | 2.0 | 1 beside | 1.50 |" in timing
    assert "| CartPole-v1 | gpg | 1 | 0.2 | not recorded | ? |" in timing
    assert "| CartPole-v1 | gpg | 2 | 10.0 | alone, other load +2.0 | 2.00 |" in timing
    assert "| CartPole-v1 | ppo | 2 | 1.0 | alone | 2.60 |" in timing
    # GPG's first evaluation at 50% of PPO's score, the 14th of 20: 0.35 min into seed 0's run, 7 into seed 2's
    to_score = timing.split("## Time to score")[1]
    assert row(to_score, "| CartPole-v1 | gpg |").startswith("| CartPole-v1 | gpg | 1,400 (3/3) | 0.3 |")


def test_runs_without_the_load_record_get_no_wall_time(tmp_path):
    for name in ("ppo", "gpg"):
        fake_run(tmp_path, f"CartPole-v1__{name}__seed0", [400.0] * 10, 60.0, beside=None)
    report(SUITE, tmp_path, tasks=["CartPole-v1"])
    text = (tmp_path / "table.md").read_text()
    assert row(text, "| CartPole-v1 | gpg |").endswith("| - |")
    assert "Wall time: '-' throughout: these runs were made before each run recorded the machine's load" in text
    timing = (tmp_path / "timing.md").read_text()
    assert "| ? (2/" not in timing and "No run recorded its evaluations' wall times under its task's shared load" in timing
    assert not (tmp_path / "time_to_score.png").exists()


def test_a_resumed_run_is_compared_with_none_whatever_its_load(tmp_path):
    # its parts may have run on different machines: left out even where the load it recorded was quiet
    fake_run(tmp_path, "CartPole-v1__gpg__seed0", [300.0] * 10, beside=0)
    folder = tmp_path / "runs" / "CartPole-v1__gpg__seed0"
    assert condition(folder) == 0
    recorded = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**recorded, "segments": [{"wall_time_s": 30.0}] * 3}))
    assert condition(folder) is None


def test_time_to_score_and_updates_against_wall_time(tmp_path):
    # 2,000 steps: PPO 20 rollouts x 2 minibatches x 10 epochs = 400 updates; GPG 20 x 1 x 5 = 100
    ppo = {"n_envs": 1, "n_steps": 100, "batch_size": 50, "n_epochs": 10, "policy": "MlpPolicy"}
    gpg = {"n_envs": 1, "n_steps": 100, "batch_size": 100, "n_epochs": 5, "policy": "MlpPolicy"}
    for seed in (0, 1):
        fake_run(tmp_path, f"CartPole-v1__ppo__seed{seed}", [400.0] * 10, 100.0, config=ppo)
        fake_run(tmp_path, f"CartPole-v1__gpg__seed{seed}", [400.0] * 10, 40.0, config=gpg)
    report(SUITE, tmp_path, tasks=["CartPole-v1"])
    timing = (tmp_path / "timing.md").read_text()
    # the evaluations rise as np.linspace(0, 1, 20) of 400 (no random policy's score: a floor of 0), each written at
    # np.linspace(wall / 20, wall, 20) seconds
    first = {fraction: int(np.argmax(np.linspace(0, 1, 20) >= fraction)) for fraction in (0.5, 0.9)}
    steps = {fraction: f"{100 * (index + 1):,}" for fraction, index in first.items()}
    minutes = {wall: {f: f"{np.linspace(wall / 20, wall, 20)[i] / 60:.1f}" for f, i in first.items()} for wall in (100, 40)}
    assert (
        f"| CartPole-v1 | ppo | {steps[0.5]} (2/2) | {minutes[100][0.5]} | {steps[0.9]} (2/2) | {minutes[100][0.9]} |"
        in timing
    )
    assert (
        f"| CartPole-v1 | gpg | {steps[0.5]} (2/2) | {minutes[40][0.5]} | {steps[0.9]} (2/2) | {minutes[40][0.9]} |" in timing
    )
    assert "| CartPole-v1 | gpg | 0 | 0.7 | alone | 1.50 | 100 | 4610 |" in timing  # CartPole's 64x64 actor only
    # 0.4x PPO's wall time with 0.25x its updates: 1.6x its time per update
    statement = "- CartPole-v1, gpg: 0.25x PPO's minibatch updates (100 against 400), 4,610 parameters against 9,155; "
    assert (
        statement + "0.40x PPO's wall time, 1.60x its time per update: faster only because it makes fewer updates." in timing
    )
    assert (tmp_path / "time_to_score.png").stat().st_size > 4_000  # drawn (small: sb3_gpg_bench.figures.save_png)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_watched_run_records_the_load_and_when_each_evaluation_was_written(tmp_path, monkeypatch):
    monkeypatch.setattr("sb3_gpg_bench.timing.LOOK_EVERY_S", 0.1)
    # a process whose command line names a training, as another run beside this one would
    beside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "sb3_gpg.train"])
    # a stand-in for a training: writes its evaluations.npz twice, 0.4 s apart (four looks)
    script = (
        "import sys, time; import numpy as np; from pathlib import Path\n"
        "folder = Path(sys.argv[1]); folder.mkdir(parents=True)\n"
        "for count in (1, 2):\n"
        "    time.sleep(0.4); np.savez(folder / 'evaluations.npz', timesteps=np.arange(count), results=np.zeros((count, 2)))\n"
    )
    try:
        # a process just started may show an empty command line for a moment (seen on a sandboxed CI machine)
        deadline = time.monotonic() + 10.0
        while "sb3_gpg.train" not in Path(f"/proc/{beside.pid}/cmdline").read_bytes().decode(errors="replace"):
            assert time.monotonic() < deadline, "the process beside never showed its command line in /proc"
            time.sleep(0.05)
        # counted back to back: other trainings on the machine may start or end around the test
        assert trainings_beside(own=beside.pid) == trainings_beside(own=-1) - 1 >= 0
        result, load, written = run_watched(
            [sys.executable, "-c", script, str(tmp_path / "logs" / "run_1")], tmp_path / "logs"
        )
    finally:
        beside.kill()
    assert result.returncode == 0, result.stderr
    # the files' own times, 0.4 s of sleep apart (and more on a loaded machine), rounded to 0.1 s
    assert len(written) == 2 and 0.2 < written[1] - written[0] < 10.0
    assert load["samples"][0][2] >= 1 and load["runs_beside_max"] >= 1 and len(load["start"]) == len(load["end"]) == 3


def test_an_evaluations_file_caught_half_written_is_read_at_the_next_look(tmp_path):
    # np.savez writes a zip in place: a look in the middle of it finds a file that is not (yet) a zip
    folder = tmp_path / "logs" / "run_1"
    folder.mkdir(parents=True)
    complete = tmp_path / "complete.npz"
    np.savez(complete, timesteps=np.arange(3), results=np.zeros((3, 2)))
    (folder / "evaluations.npz").write_bytes(complete.read_bytes()[:40])
    written: list[float] = []
    _note_evaluations(tmp_path / "logs", time.time(), written)
    assert written == []
    (folder / "evaluations.npz").write_bytes(complete.read_bytes())
    _note_evaluations(tmp_path / "logs", time.time(), written)
    assert len(written) == 3


def test_finals_json_counts_its_seeds_and_discloses_the_earlier_runs(tmp_path):
    pytest.importorskip("rliable")
    out = tmp_path / "out"
    suite = Suite(["CartPole-v1", "Pendulum-v1"], [Setting("ppo", "ppo"), Setting("gpg", "gpg")], "ppo", 10_000)
    for seed in (0, 1, 2):
        fake_run(out, f"CartPole-v1__ppo__seed{seed}", [420.0] * 10)
        fake_run(out, f"Pendulum-v1__ppo__seed{seed}", [-200.0] * 10)
        fake_run(out, f"Pendulum-v1__gpg__seed{seed}", [-300.0] * 10)
    # CartPole's GPG entry changed after its first finals (seeds 0, 1: 120) were seen: rerun on them (220), and its new
    # finals on seeds 10, 11 (320)
    for seed in (0, 1):
        fake_run(out, f"CartPole-v1__gpg__seed{seed}", [120.0] * 10, runs="superseded")
        fake_run(out, f"CartPole-v1__gpg__seed{seed}", [220.0] * 10)
        fake_run(out, f"CartPole-v1__gpg__seed{seed + 10}", [320.0] * 10)
    (out / "random_scores.json").write_text(json.dumps({"CartPole-v1": {"mean": 20.0}, "Pendulum-v1": {"mean": -1200.0}}))
    earlier = [{"folder": "superseded", "seeds": [0, 1], "why": "the first entry"}, {"seeds": [0, 1], "why": "rerun"}]
    finals = {"CartPole-v1": {"gpg": {"seeds": [10, 11], "why": "the new entry", "earlier": earlier}}}
    (out / "finals.json").write_text(json.dumps(finals))
    report(suite, out)
    headline = (out / "headline.md").read_text()
    assert "| CartPole-v1 | 420.0 ± 0.0 (3) | 320.0 ± 0.0 (2) | 0.75; 0.75 |" in headline  # (320 - 20) / (420 - 20)
    assert (
        "- CartPole-v1, GPG, counted in the table: seeds 10, 11, the new entry: 320.0 ± 0.0 (2), PPO-normalised 0.75."
        in headline
    )
    assert "  - Earlier, seeds 0, 1, the first entry: 120.0 ± 0.0 (2), PPO-normalised 0.25." in headline
    assert "  - Earlier, seeds 0, 1, rerun: 220.0 ± 0.0 (2), PPO-normalised 0.50." in headline
    # Both aggregates on as many runs per task as the setting with the fewest (GPG's 2 on CartPole): PPO's third seeds
    # are left out; counting the earliest runs, CartPole's GPG is at 0.25 and Pendulum's at 0.9, so their IQM is 0.575
    assert "on 2 runs per task." in headline
    assert "Counting each task's earliest final runs instead: GPG's IQM of PPO-normalised final scores" in headline
    iqm = scipy.stats.trim_mean([0.25, 0.25, 0.9, 0.9], 0.25)
    assert f"final scores {iqm:.2f} [" in headline.split("earliest final runs instead")[1]
    # A report of chosen seeds reads those seeds, whatever finals.json says
    assert "| CartPole-v1 | gpg | 2 | 220.0 ± 0.0 |" in report(suite, out, seeds=[0, 1])


def test_each_committed_tuning_run_ran_its_settings_pinned_entry_with_its_params():
    # A setting with a base names the entry it was tried against as its runs ran it: each committed run's config.yml
    # (the entry rl_zoo3 trained with) is that base with the run's -params (args.yml), so the base pins what ran
    from sb3_gpg_bench.suites import BEFORE_DEFAULTS_CHANGED, SUITES, pinned_entry

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser, where PyYAML has it
        pass

    Loader.add_constructor(
        "tag:yaml.org,2002:python/object/apply:collections.OrderedDict",
        lambda loader, node: dict(loader.construct_sequence(node.value[0], deep=True)),  # type: ignore[arg-type]
    )
    grids = {"zoo_suite/tuning": "zoo_tuning", "zoo_suite/tuning/memory_screen": "zoo_tuning",
             "mujoco_search/confirm": "zoo_tuning", "default_entry": "defaults", "default_entry/wider": "defaults",
             "state_aware": "state_aware"}  # fmt: skip
    checked = 0
    for folder, suite in grids.items():
        settings = {setting.name: setting for setting in SUITES[suite].settings}
        for run in sorted(Path(__file__).parent.parent.glob(f"benchmarks/{folder}/runs/*")):
            env_id, name, _ = run.name.split("__")
            if settings[name].base is None:
                continue
            ran = yaml.load((run / "args.yml").read_text(), Loader)["hyperparams"] or {}
            config = yaml.load((run / "config.yml").read_text(), Loader)
            expected = pinned_entry(settings[name].base, env_id) | ran
            # runs made since the constructor's defaults changed also name the estimator the base ran with (and since
            # its lambda changed, the lambda)
            filled = {key: value for key, value in BEFORE_DEFAULTS_CHANGED.items() if key not in expected}
            estimator = {key: value for key, value in filled.items() if key != "gae_lambda"}
            assert config in (expected, expected | estimator, expected | filled), run.name
            checked += 1
    assert checked > 200


def test_a_swap_setting_keeps_lambda_one_where_ppos_entry_names_none():
    # the settings on the constructor's estimator ran with its lambda of the time, 1, where PPO's entry names none
    # (Ant-v5); an entry's own lambda (HalfCheetah-v5's) wins
    from sb3_gpg_bench.suite import hyperparams_file, zoo_entry
    from sb3_gpg_bench.suites import SUITES

    settings = {setting.name: setting for setting in SUITES["swap"].settings}
    sound = {
        env_id: hyperparams_file(settings["gpg_swap_sound"], env_id)[0][env_id] for env_id in ("Ant-v5", "HalfCheetah-v5")
    }
    assert sound["Ant-v5"]["gae_lambda"] == 1.0
    assert sound["HalfCheetah-v5"]["gae_lambda"] == zoo_entry("ppo", "HalfCheetah-v5")[0]["gae_lambda"] != 1.0


def test_every_score_is_read_within_the_runs_budget(tmp_path):
    # a run whose last rollout ends past its budget of 2,000 steps is evaluated once more, at 2,100: not counted
    out = tmp_path / "out"
    suite = Suite(["CartPole-v1"], [Setting("ppo", "ppo"), Setting("gpg", "gpg")], "ppo", 10_000)
    fake_run(out, "CartPole-v1__ppo__seed0", [400.0] * 10)
    fake_run(out, "CartPole-v1__gpg__seed0", [300.0] * 10)
    folder = out / "runs" / "CartPole-v1__gpg__seed0"
    data = np.load(folder / "evaluations.npz")
    np.savez(
        folder / "evaluations.npz",
        timesteps=np.append(data["timesteps"], 2100),
        results=np.vstack([data["results"], np.full((1, 10), 500.0)]),
    )
    text = report(suite, out)
    assert "| CartPole-v1 | gpg | 1 | 300.0 | 268.4 | 0.75 |" in text  # 300 / 400, not 500 / 400


def test_the_tuning_effort_table_and_line_are_counted_from_the_committed_files():
    # the suite README's "Tuning effort" table is what tuning_effort counts from the committed studies and runs, and
    # the README's line beside the headline quotes its totals, so that neither goes stale as studies or screens land
    from sb3_gpg_bench.tuning_effort import effort_table, totals, tuning_effort

    root = Path(__file__).parent.parent
    effort = tuning_effort(root)
    suite_readme = (root / "benchmarks/zoo_suite/README.md").read_text()
    shown = suite_readme.split("<!-- tuning effort start -->\n")[1].split("\n<!-- tuning effort end -->")[0]
    assert shown == effort_table(effort), "copy `python -m sb3_gpg_bench.tuning_effort` into the suite's README"
    trials, candidates, runs = totals(effort)
    studied = sum(1 for e in effort.values() if e.studies)
    line = f"{trials} Optuna trials on {studied} tasks and {candidates} candidates screened in {runs} full-budget runs"
    assert line in " ".join((root / "README.md").read_text().split())
    # a few counts checked by hand against the folders and the journals' own summaries (mujoco_search/*.md)
    assert effort["Walker2d-v5"].trials == {"COMPLETE": 95, "PRUNED": 89, "FAIL": 9}
    assert (len(effort["CartPole-v1"].candidates), effort["CartPole-v1"].runs) == (9, 45)
