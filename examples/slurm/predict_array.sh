#!/bin/bash
# Predict every video under /data/videos with one SLURM array task per shard.
#
#   mkdir -p logs && sbatch --array=0-7 examples/slurm/predict_array.sh
#
# Each task expands the same inputs (sorted), keeps every 8th video starting at
# its own index (--shard i/8), and writes next to a shared output folder. A task
# that is preempted or killed leaves <output>.partial journals; resubmitting the
# same array (or `scontrol requeue`) with --resume skips finished videos and
# continues the interrupted ones from their last written batch.
#
# The paths below are this example's layout; change them here, or set INFER_* in
# the shell that calls sbatch (which hands its environment to the job):
#   INFER_CMD         the CLI (default: `infer` on PATH; e.g. "/opt/venv/bin/python -m sleap_infer")
#   INFER_VIDEOS      input folder, file, glob or list file (default /data/videos)
#   INFER_MODELS      model folders, separated by spaces (default: a top-down pair)
#   INFER_OUTPUT      output folder, also holds summary_<shard>.json (default /data/predictions)
#   INFER_DEVICE      default cuda; INFER_BATCH_SIZE default 16
#   INFER_SHARDS      the number of shards; default: the array's size. Set it when
#                     resubmitting only some elements (--array=3 alone has size 1).
#
#SBATCH --job-name=sleap-infer
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --mem=16G
#SBATCH --time=04:00:00
#SBATCH --output=logs/%x_%A_%a.log
#SBATCH --requeue

set -euo pipefail

N_SHARDS=${INFER_SHARDS:-${SLURM_ARRAY_TASK_COUNT:?submit with --array=0-N}}
SHARD=${SLURM_ARRAY_TASK_ID:?submit with --array=0-N}
read -r -a INFER <<<"${INFER_CMD:-infer}"
read -r -a MODELS <<<"${INFER_MODELS:-/models/centroid /models/centered_instance}"
OUTPUT=${INFER_OUTPUT:-/data/predictions}

MODEL_ARGS=()
for model in "${MODELS[@]}"; do
    MODEL_ARGS+=(--model "$model")
done

# exec: infer itself gets scancel's SIGTERM, keeps its journals, writes the summary
# with status "interrupted", and its exit code is the job's.
exec "${INFER[@]}" predict "${INFER_VIDEOS:-/data/videos}" --recursive \
    "${MODEL_ARGS[@]}" \
    --device "${INFER_DEVICE:-cuda}" \
    --batch-size "${INFER_BATCH_SIZE:-16}" \
    --shard "${SHARD}/${N_SHARDS}" \
    --output "$OUTPUT" \
    --resume \
    --summary-json "$OUTPUT/summary_${SHARD}.json"
# Off a terminal the progress display is plain lines (frames, FPS, ETA every 10 s) in the
# job's .out file; the summary JSON lists every video's status, counts and output.
