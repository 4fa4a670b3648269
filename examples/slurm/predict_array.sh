#!/bin/bash
# Predict every video under /data/videos with one SLURM array task per shard.
#
#   sbatch --array=0-7 examples/slurm/predict_array.sh
#
# Each task expands the same inputs (sorted), keeps every 8th video starting at
# its own index (--shard i/8), and writes next to a shared output folder. A task
# that is preempted or killed leaves <output>.partial journals; resubmitting the
# same array (or `scontrol requeue`) with --resume skips finished videos and
# continues the interrupted ones from their last written batch.
#
#SBATCH --job-name=sleap-infer
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --mem=16G
#SBATCH --time=04:00:00
#SBATCH --output=logs/%x_%A_%a.log
#SBATCH --requeue

set -euo pipefail

N_SHARDS=${SLURM_ARRAY_TASK_COUNT:?submit with --array=0-N}
SHARD=${SLURM_ARRAY_TASK_ID}

infer predict /data/videos --recursive \
    --model /models/centroid --model /models/centered_instance \
    --device cuda \
    --batch-size 16 \
    --shard "${SHARD}/${N_SHARDS}" \
    --output /data/predictions \
    --resume \
    --summary-json "/data/predictions/summary_${SHARD}.json"
# Off a terminal the progress display is plain lines (frames, FPS, ETA every 10 s) in the
# job's .out file; the summary JSON lists every video's status, counts and output.
