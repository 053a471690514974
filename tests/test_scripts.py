"""Smoke configurations of the benchmark scripts: they run end to end, write their outputs and resume."""

import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def run(*args, cwd):
    result = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_paper_benchmark_smoke_and_resume(tmp_path):
    args = [str(SCRIPTS / "benchmark_paper.py"), "--envs", "CartPole-v1", "--n-envs", "1", "2", "--seeds", "0",
            "--iterations", "2", "--eval-every", "1", "--eval-episodes", "2", "--n-steps", "16", "--jobs", "2",
            "--out", "out"]  # fmt: skip
    output = run(*args, cwd=tmp_path)
    assert "4 runs, 0 already done" in output
    out = tmp_path / "out"
    assert len(list((out / "runs").glob("*.csv"))) == 4
    curves = (out / "curves.csv").read_text().splitlines()
    assert curves[0] == "env,algo,n_envs,seed,iteration,env_steps,wall_time,eval_mean"
    assert len(curves) == 1 + 4 * 2  # 4 runs x 2 evaluations
    assert "| 2 | gpg |" in (out / "table.md").read_text()
    assert (out / "CartPole-v1_iterations.png").stat().st_size > 10_000
    assert "4 runs, 4 already done, 0 to run" in run(*args, cwd=tmp_path)


def test_speed_benchmark_smoke(tmp_path):
    output = run(str(SCRIPTS / "benchmark_speed.py"), "--configs", "CartPole-v1:2:time", "--n-steps", "16", "--repeats", "1",
                 "--peak-iterations", "1", "--output", "speed.md", cwd=tmp_path)  # fmt: skip
    table = (tmp_path / "speed.md").read_text()
    assert "| CartPole-v1 | 2 | time | 16 |" in table and "MiB" in table
    assert (tmp_path / "speed.json").exists()
    assert "iter ratio" in output
