#!/usr/bin/env bash
# One worker of the MuJoCo locomotion search: rl_zoo3's --optimize through sb3_gpg, on a tuning seed, one torch thread,
# trials of BUDGET steps (300k by default) with 6 evaluations of EPISODES episodes (5 by default) and the median pruner,
# in a journal storage that a later session resumes (one study per budget and window: <env>_<budget/1000>k, with _w<N>
# where each trial is scored by the mean of its last N evaluations; WINDOW 1, the default, scores the last one).
# Usage: benchmarks/mujoco_search/run_worker.sh ENV SEED [MAX_TOTAL_TRIALS] [BUDGET] [EPISODES] [WINDOW]
set -euo pipefail
cd "$(dirname "$0")/../.."
env_id=$1
seed=$2
max_trials=${3:-100}
budget=${4:-300000}
episodes=${5:-5}
window=${6:-1}
name=$(echo "$env_id" | tr 'A-Z-' 'a-z_')
study="${name}_$((budget / 1000))k"
if [ "$window" -gt 1 ]; then study="${study}_w${window}"; fi
exec python -m sb3_gpg.train --algo gpg --env "$env_id" -optimize --sampler tpe --pruner median \
    -n "$budget" --n-evaluations 6 --eval-episodes "$episodes" --trial-score-window "$window" --n-startup-trials 10 \
    --max-total-trials "$max_trials" --storage "benchmarks/mujoco_search/${name}.log" \
    --study-name "$study" \
    --seed "$seed" --num-threads 1 -f "logs/mujoco_search/${name}_${seed}" --no-optim-plots --verbose 0
