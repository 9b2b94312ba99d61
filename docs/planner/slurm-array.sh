#!/usr/bin/env bash
# A planner sweep as a Slurm job array: configurations (job size × rates file) × shards.
# Array task k runs configuration k / SHARDS, shard k % SHARDS; every task writes one JSON
# file, and one dependent job merges each configuration's shards.
#
#   sbatch --array=0-47 docs/planner/slurm-array.sh            # 3 job sizes × 2 rates × 8 shards
#   # after it: one merge per configuration (submitted by the last lines below, or by hand)
#   fabric plan merge results/jobs4096-default/shard-*.json --json merged.json --plot plots/
#
# Environment (all optional): FABRIC (the binary), DESIGNS, JOB_SIZES, RATES_FILES, TRIALS,
# DAYS, SEED, SHARDS, OUT. Outside Slurm it runs one task: SLURM_ARRAY_TASK_ID=5 bash slurm-array.sh
#SBATCH --job-name=fabric-plan
#SBATCH --cpus-per-task=16
#SBATCH --mem=8G
#SBATCH --time=04:00:00
#SBATCH --output=fabric-plan-%A_%a.out
set -euo pipefail

FABRIC=${FABRIC:-fabric}
DESIGNS=${DESIGNS:-"deepseek-mpft alibaba-hpn fat-tree-k32 dragonfly-plus"}
read -r -a JOBS <<<"${JOB_SIZES:-1024 4096 8192}"
read -r -a RATES <<<"${RATES_FILES:-default docs/planner/rates-pessimistic.toml}"
TRIALS=${TRIALS:-800}
DAYS=${DAYS:-30}
SEED=${SEED:-1}
SHARDS=${SHARDS:-8}
OUT=${OUT:-results}

task=${SLURM_ARRAY_TASK_ID:?set by sbatch --array (or by hand)}
configs=$(( ${#JOBS[@]} * ${#RATES[@]} ))
if (( task >= configs * SHARDS )); then
  echo "task $task is outside the sweep (${configs} configurations × ${SHARDS} shards)" >&2
  exit 2
fi
cfg=$(( task / SHARDS ))
shard=$(( task % SHARDS ))
job=${JOBS[$(( cfg / ${#RATES[@]} ))]}
rates=${RATES[$(( cfg % ${#RATES[@]} ))]}
name="jobs${job}-$(basename "${rates%.toml}")"
mkdir -p "$OUT/$name"

rate_args=()
[[ $rates != default ]] && rate_args=(--rates "$rates")
# Trials use every CPU Slurm gave the task (rayon reads RAYON_NUM_THREADS).
export RAYON_NUM_THREADS=${SLURM_CPUS_PER_TASK:-$(nproc)}
# shellcheck disable=SC2086 # DESIGNS is a list
"$FABRIC" plan resilience $DESIGNS --job-gpus "$job" --days "$DAYS" --trials "$TRIALS" \
  --seed "$SEED" "${rate_args[@]}" --shard "$shard/$SHARDS" --quiet \
  --json "$OUT/$name/shard-$shard.json" > "$OUT/$name/shard-$shard.txt"

# The last task of the array submits the merges once the whole array has finished.
if [[ -n ${SLURM_ARRAY_JOB_ID:-} && $task -eq $(( configs * SHARDS - 1 )) ]]; then
  for dir in "$OUT"/*/; do
    sbatch --dependency="afterany:${SLURM_ARRAY_JOB_ID}" --job-name=fabric-plan-merge \
      --wrap "$FABRIC plan merge ${dir}shard-*.json --json ${dir}merged.json --plot ${dir}plots > ${dir}merged.txt"
  done
fi
