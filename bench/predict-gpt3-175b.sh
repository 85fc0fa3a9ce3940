#!/bin/sh
# bench/predict-gpt3-175b.sh - one GPT-3 175B optimizer step on a generated 1024-GPU DGX A100
# platform: TP 8 (1-D, sequence parallel) x PP 8 (interleaved, v = 2) x DP 16, micro-batch 1,
# global batch 1536, selective recomputation. Wall time and peak RSS of the prediction.
#
#   bench/predict-gpt3-175b.sh [BUILD_DIR]     (default build)
#
# The prediction goes to bench/results/predict-gpt3-175b.txt, the timing line to
# bench/results/predict-gpt3-175b.timing.
set -eu
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
platform=$(mktemp -d)/dgx-a100x1024.xml
"$bin" topology --preset dgx-a100 --nodes 128 -o "$platform"
set -- --topology "$platform" --model gpt3-175b --tp-mode 1d --tp 8 --sp --pp 8 --dp 16 \
    --schedule interleaved --virtual-stages 2 --micro-batch 1 --global-batch 1536 \
    --recompute selective
start=$(date +%s.%N)
if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$platform.rss" "$bin" "$@" > bench/results/predict-gpt3-175b.txt
    rss=", peak RSS $(($(tail -n 1 "$platform.rss") / 1024)) MiB"
else
    "$bin" "$@" > bench/results/predict-gpt3-175b.txt
    rss=""
fi
end=$(date +%s.%N)
rm -rf "$(dirname "$platform")"
printf 'predict gpt3-175b on dgx-a100 x1024: %.2f s wall%s (%s, %d cores)\n' \
    "$(echo "$end - $start" | bc -l)" "$rss" "$(uname -m)" "$(nproc)" |
    tee bench/results/predict-gpt3-175b.timing
