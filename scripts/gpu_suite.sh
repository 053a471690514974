#!/usr/bin/env bash
# The whole test suite on a CUDA GPU, in one go, on the workplace's GPU machine (the device tool's nvidia-h200: Python
# 3.12 with torch's CUDA build, numpy, pytest, pytest-xdist, matplotlib, pandas, ... installed; nothing can be
# downloaded there). What the suite needs beyond that image travels as wheels in .whl/ (git-ignored through
# .git/info/exclude), which scripts/gpu_wheels.sh makes from scripts/gpu_wheels.txt; this script:
#   1. installs them into /tmp/site (pip --no-index --no-deps --target) and puts /tmp/site and the checkout on
#      PYTHONPATH (no pip install of the checkout; the `sb3-gpg` console script, which three tests run from beside
#      sys.executable, is written there as pip would write it);
#   2. prints nvidia-smi -L, the versions of what the suite uses, and a smoke check (CUDA, a MuJoCo and a Box2D env);
#   3. runs `python3 -m pytest tests -n 12 --device cuda` (docs/misc/development.rst, "On a GPU machine") within a
#      budget of 520 s counted from the script's start, inside the device tool's 600-s limit: no test starts in its
#      last 90 s (they skip, said so; a plugin written to /tmp), so pytest ends by itself with its summary and JUnit
#      XML, and `timeout` stops it at the budget's end regardless; everything goes to $OUT/gpu_suite.log as it runs (tee), so the log comes back even if killed;
#   4. writes one summary line (also $OUT/gpu_suite_summary.txt): passed, failed, errors, skipped (for the budget), and
#      the failures' names. A test that needs a package the wheels leave out skips and names it.
# Exit status: pytest's (124: the hard end came first). Its runs on an H200: benchmarks/gpu/README.md.
#
# A session lent the GPU machine calls it once, through the device tool, after making .whl here:
#   scripts/gpu_wheels.sh                               # here: 9.0 MB in .whl/wheels.tar.xz, about 45 s
#   run  command: "bash scripts/gpu_suite.sh"  carry: [".whl"]  timeout_s: 600
# then reads gpu_suite_summary.txt, gpu_suite.log and gpu_suite.xml among the returned files.
#
# Settings (environment): GPU_SUITE_BUDGET (seconds for pytest, 520), GPU_SUITE_MARGIN (90), GPU_SUITE_WORKERS (12),
# PYTHON (python3), GPU_SUITE_SITE (/tmp/site), GPU_SUITE_CHECK=1 (steps 1 and 2 only, no GPU needed: a check of the
# wheels with any Linux x86-64 Python 3.12 that has numpy; without torch, what needs it is reported not importable),
# GPU_SUITE_SPEED (0: seconds for scripts/benchmark_gpu.py between steps 2 and 3, out of the budget; its rows go to
# $OUT/speed_gpu.jsonl, which `benchmark_gpu.py --report` makes the table of).
set -uo pipefail
SCRIPT_START=$(date +%s)
cd "$(dirname "$0")/.." || exit
ROOT=$PWD
OUT=${OUT:-/tmp/gpu_suite_out}
PY=${PYTHON:-python3}
BUDGET=${GPU_SUITE_BUDGET:-520}
WORKERS=${GPU_SUITE_WORKERS:-12}
MARGIN=${GPU_SUITE_MARGIN:-90}
CHECK=${GPU_SUITE_CHECK:-0}
SPEED=${GPU_SUITE_SPEED:-0}
if [ "$SPEED" -ge $((BUDGET - MARGIN)) ]; then
    echo "gpu_suite: GPU_SUITE_SPEED=$SPEED leaves the suite no time: give it under GPU_SUITE_BUDGET - GPU_SUITE_MARGIN" \
        "($((BUDGET - MARGIN)) s)" >&2
    exit 2
fi
SITE=${GPU_SUITE_SITE:-/tmp/site}
mkdir -p "$OUT"

install() {
    local wheels=/tmp/gpu_suite_wheels archive
    rm -rf "$wheels" "$SITE"
    mkdir -p "$wheels"
    for archive in .whl/*.tar.xz; do  # read with Python's tarfile: the image may have no xz program
        [ -e "$archive" ] || continue
        "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
            "$archive" "$wheels" || return 1
    done
    cp .whl/*.whl "$wheels"/ 2>/dev/null  # a wheel added by hand beside the archive
    local count
    count=$(find "$wheels" -name '*.whl' | wc -l)
    if [ "$count" -eq 0 ]; then
        echo "gpu_suite: no wheels in .whl/ (run scripts/gpu_wheels.sh here and carry .whl)"
        return 1
    fi
    echo "gpu_suite: installing $count wheels into $SITE"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$wheels"/*.whl
}

console_script() {
    # What pip install -e . would write for setup.cfg's console_scripts entry sb3-gpg = sb3_gpg.zoo:main
    local bin script
    bin=$("$PY" -c 'import os, sys; print(os.path.dirname(sys.executable))')
    script="$bin/sb3-gpg"
    [ -e "$script" ] && return 0
    if printf '#!%s\n%s\n' "$("$PY" -c 'import sys; print(sys.executable)')" \
        'import re, sys
from sb3_gpg.zoo import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\.pyw|\.exe)?$", "", sys.argv[0])
    sys.exit(main())' >"$script" 2>/dev/null && chmod +x "$script"; then
        echo "gpu_suite: wrote $script"
    else
        echo "gpu_suite: cannot write $script: test_zoo.py's test_console_script_trains and" \
            "test_console_script_help_imports_neither_torch_nor_rl_zoo3 will fail"
    fi
}

versions() {
    command -v nvidia-smi >/dev/null && nvidia-smi -L
    "$PY" - "$CHECK" <<'EOF'
import importlib
import importlib.metadata
import platform
import sys
import time

check = sys.argv[1] == "1"
print("python", platform.python_version(), sys.executable)
names = ["torch", "numpy", "gymnasium", "stable_baselines3", "sb3_contrib", "rl_zoo3", "optuna", "sqlalchemy",
         "alembic", "huggingface_sb3", "huggingface_hub", "pytablewriter", "mujoco", "glfw", "Box2D", "pygame",
         "matplotlib", "PIL", "pandas", "scipy", "seaborn", "yaml", "tqdm", "rich", "tensorboard", "threadpoolctl",
         "pytest", "xdist"]
versions = []
for name in names:
    try:
        module = importlib.import_module(name)
        version = getattr(module, "__version__", None) or getattr(module, "version", None)
        where = (module.__file__ or "").split("/site-packages/")[-1]
        versions.append(f"{name} {version if isinstance(version, str) else '?'} ({where})")
    except Exception as error:
        versions.append(f"{name} NOT IMPORTABLE: {type(error).__name__}: {error}")
print("\n".join(versions))

import gymnasium as gym

for env_id in ("CartPole-v1", "HalfCheetah-v5", "InvertedPendulum-v5", "LunarLander-v3"):
    try:
        env = gym.make(env_id)
        env.reset(seed=0)
        for _ in range(10):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        env.close()
        print(f"smoke: {env_id} steps")
    except Exception as error:
        print(f"smoke: {env_id} FAILED: {type(error).__name__}: {error}")

if not check:
    import torch

    if not torch.cuda.is_available():
        sys.exit("smoke: torch sees no CUDA device: --device cuda would be a usage error")
    start = time.perf_counter()
    x = torch.randn(1024, 1024, device="cuda")
    (x @ x).sum().item()
    seconds = time.perf_counter() - start
    print(f"smoke: {torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}, first matmul {seconds:.2f} s")
EOF
}

summary() {
    local status=$1 seconds=$2 line=$OUT/gpu_suite_summary.txt
    "$PY" - "$OUT/gpu_suite.xml" "$status" "$seconds" <<'EOF' | tee "$line"
import os
import sys
import xml.etree.ElementTree as ET

path, status, seconds = sys.argv[1:]
if not os.path.exists(path):
    print(f"gpu_suite: exit {status} after {seconds} s; no JUnit XML (pytest killed?): read gpu_suite.log")
    sys.exit()
counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
failed, late = [], 0
for case in ET.parse(path).getroot().iter("testcase"):
    parts = case.get("classname", "").split(".")  # tests.test_zoo(.Class): the file, then any class
    cut = next((i for i in range(len(parts), 0, -1) if os.path.exists("/".join(parts[:i]) + ".py")), 1)
    node = "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], case.get("name", "")])
    outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
    outcome = {"failure": "failed"}.get(outcome, outcome)
    counts[outcome] += 1
    late += any("budget spent" in (child.get("message") or "") for child in case if child.tag == "skipped")
    if outcome in ("failed", "error"):
        failed.append(node)
print(f"gpu_suite: exit {status} after {seconds} s; {counts['passed']} passed, {counts['failed']} failed, "
      f"{counts['error']} errors, {counts['skipped']} skipped ({late} for the time budget)"
      f"{': ' + ' '.join(failed) if failed else ''}")
EOF
}

main() {
    echo "gpu_suite: $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs; budget ${BUDGET} s (no test starts in the" \
        "last ${MARGIN} s), ${WORKERS} workers"
    install || return 1
    export PYTHONPATH="$ROOT:$SITE${PYTHONPATH:+:$PYTHONPATH}"
    # MuJoCo without MUJOCO_GL imports glfw (carried) rather than PyOpenGL (not carried); nothing renders MuJoCo
    unset MUJOCO_GL PYOPENGL_PLATFORM
    export PYGAME_HIDE_SUPPORT_PROMPT=1 SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy MPLBACKEND=Agg PYTHONUNBUFFERED=1
    export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
    console_script
    versions || return 1
    [ "$CHECK" = 1 ] && return 0
    if [ "$SPEED" -gt 0 ]; then
        # before the suite, on a quiet machine; what it measured is kept row by row, should the limit stop it
        echo "gpu_suite: scripts/benchmark_gpu.py, at most $SPEED s"
        timeout --kill-after=5 "$SPEED" "$PY" scripts/benchmark_gpu.py --jsonl "$OUT/speed_gpu.jsonl"
        echo "gpu_suite: benchmark_gpu.py exit $?"
    fi

    local timeout_option=() start status plugins=/tmp/gpu_suite_plugins
    "$PY" -c "import pytest_timeout" 2>/dev/null && timeout_option=(--timeout 0)
    # The soft end: a test that has not started MARGIN s before the budget's end is skipped (a plugin of this run's,
    # on every xdist worker), so pytest ends by itself with its summary and XML; timeout is the hard end
    mkdir -p "$plugins"
    cat >"$plugins/gpu_suite_deadline.py" <<'PLUGIN'
import os
import time

import pytest

DEADLINE = float(os.environ["GPU_SUITE_DEADLINE"])


def pytest_runtest_setup(item):
    if time.time() > DEADLINE:
        pytest.skip("gpu_suite: budget spent before this test started")
PLUGIN
    start=$(date +%s)
    # the budget counts from the script's start: the installs, imports and checks before pytest spend it too
    local left=$((BUDGET - (start - SCRIPT_START)))
    export GPU_SUITE_DEADLINE=$((start + left - MARGIN))
    PYTHONPATH="$plugins:$PYTHONPATH" timeout --kill-after=10 "$left" \
        "$PY" -m pytest tests -n "$WORKERS" --device cuda -q -rfEs -p no:cacheprovider -p gpu_suite_deadline \
        --durations=20 "${timeout_option[@]}" --junitxml "$OUT/gpu_suite.xml"
    status=$?
    summary "$status" "$(($(date +%s) - start))"
    return "$status"
}

main 2>&1 | tee "$OUT/gpu_suite.log"
exit "${PIPESTATUS[0]}"
