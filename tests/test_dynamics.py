"""The training dynamics' comparison (sb3_gpg_bench.dynamics) from run folders with training logs."""

import gzip
import json

import numpy as np
import pytest

from sb3_gpg_bench.dynamics import report


def write_run(runs, name, logged):
    folder = runs / name
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"n_timesteps": 400}))
    (folder / "training_log.json.gz").write_bytes(gzip.compress(json.dumps(logged).encode()))


def test_the_quarters_of_each_quantity_per_setting(tmp_path):
    pytest.importorskip("matplotlib")
    runs = tmp_path / "runs"
    steps = [100.0, 200.0, 300.0, 400.0]
    for seed, offset in ((100, 0.0), (101, 2.0)):
        write_run(runs, f"Ant-v5__gpg_swap_sound__seed{seed}", {
            "rollout/ep_len_mean": [[step, 10.0 * (i + 1) + offset] for i, step in enumerate(steps)],
            "train/baseline_explained_variance": [[step, 0.5] for step in steps],
        })  # fmt: skip
    # PPO's runs in a folder of their own, as the diagnosis keeps them beside the swap's
    write_run(tmp_path / "ppo_runs", "Ant-v5__ppo_diagnosis__seed100", {
        "rollout/ep_len_mean": [[step, 100.0] for step in steps],
        "diagnosis/returns_explained_variance": [[step, 0.9] for step in steps],
    })  # fmt: skip
    write_run(runs, "Ant-v5__other__seed100", {"rollout/ep_len_mean": [[100.0, 1.0]]})  # not compared
    write_run(runs, "Hopper-v5__gpg_swap_sound__seed100", {"rollout/ep_len_mean": [[100.0, 1.0]]})  # PPO did not run it
    table = report([runs, tmp_path / "ppo_runs"], ["ppo_diagnosis", "gpg_swap_sound"], tmp_path / "out")
    # the mean over the seeds of each quarter: (10 + 12) / 2, ...; PPO's critic and GPG's baseline on one row label
    assert "| Ant-v5 | episode length | gpg_swap_sound | 2 | 11 | 21 | 31 | 41 |" in table
    assert "| Ant-v5 | episode length | ppo_diagnosis | 1 | 100 | 100 | 100 | 100 |" in table
    assert "| Ant-v5 | returns explained (held out / critic) | ppo_diagnosis | 1 | 0.9 | 0.9 | 0.9 | 0.9 |" in table
    assert "| Ant-v5 | returns explained (held out / critic) | gpg_swap_sound | 2 | 0.5 | 0.5 | 0.5 | 0.5 |" in table
    assert "other" not in table and "Hopper" not in table and (tmp_path / "out" / "dynamics_Ant-v5.png").stat().st_size > 4_000
    assert (tmp_path / "out" / "dynamics.md").read_text() == table
    assert not np.isnan([float(cell) for line in table.splitlines()[4:] for cell in line.split("|")[5:-1]]).any()
    # one seed compared: the other's runs left out
    seed_100 = report([runs, tmp_path / "ppo_runs"], ["ppo_diagnosis", "gpg_swap_sound"], tmp_path / "out100", seeds=[100])
    assert "| Ant-v5 | episode length | gpg_swap_sound | 1 | 10 | 20 | 30 | 40 |" in seed_100
