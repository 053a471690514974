#!/usr/bin/env bash
# One worker of the MuJoCo locomotion search: rl_zoo3's --optimize through sb3_gpg, on a tuning seed, one torch thread,
# trials at 300k steps evaluated every 50k (5 episodes) with the median pruner, in a journal storage that a later
# session resumes. Usage: benchmarks/mujoco_search/run_worker.sh ENV SEED [MAX_TOTAL_TRIALS]
set -euo pipefail
cd "$(dirname "$0")/../.."
env_id=$1
seed=$2
max_trials=${3:-100}
name=$(echo "$env_id" | tr 'A-Z-' 'a-z_')
exec python -m sb3_gpg.train --algo gpg --env "$env_id" -optimize --sampler tpe --pruner median \
    -n 300000 --n-evaluations 6 --eval-episodes 5 --n-startup-trials 10 \
    --max-total-trials "$max_trials" --storage "benchmarks/mujoco_search/${name}.log" --study-name "${name}_300k" \
    --seed "$seed" --num-threads 1 -f "logs/mujoco_search/${name}_${seed}" --no-optim-plots --verbose 0
