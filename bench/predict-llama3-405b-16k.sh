#!/bin/sh
# bench/predict-llama3-405b-16k.sh - one Llama 3 405B optimizer step on 16,384 GPUs (2,048 nodes)
# of two generated fabrics: dgx-h100 (rail-optimized, non-blocking) and clos-h100 (three tiers:
# 2 nodes per rack, pods of 3,072 GPUs, the aggregation tier oversubscribed 7:1). TP 8 (1-D,
# sequence parallel) x CP 16 x PP 16 (interleaved, v = 2, the 126 layers spread 7/8 per stage) x
# DP 8, sequence 131,072, global batch 128, ZeRO-3 (FSDP with pipelining), flash attention. Wall
# time and peak RSS of the prediction with the analytic backend and with SimGrid (the default).
#
#   bench/predict-llama3-405b-16k.sh [BUILD_DIR]     (default build)
#
# The predictions go to bench/results/predict-llama3-405b-16k-<preset>-<backend>.txt, the timing
# lines to bench/results/predict-llama3-405b-16k.timing.
set -eu
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
dir=$(mktemp -d)
: > bench/results/predict-llama3-405b-16k.timing
for preset in dgx-h100 clos-h100; do
    platform=$dir/$preset-x16384.xml
    start=$(date +%s.%N)
    "$bin" topology --preset "$preset" --nodes 2048 -o "$platform"
    end=$(date +%s.%N)
    printf 'topology --preset %s --nodes 2048: %.2f s wall, %d MiB\n' "$preset" \
        "$(echo "$end - $start" | bc -l)" "$(($(wc -c < "$platform") / 1048576))" |
        tee -a bench/results/predict-llama3-405b-16k.timing
    for backend in analytic simgrid; do
        set -- --topology "$platform" --model llama3-405b --tp-mode 1d --tp 8 --sp --cp 16 \
            --pp 16 --dp 8 --seq 131072 --global-batch 128 --micro-batch 1 --zero 3 \
            --dtype bf16 --attention flash --schedule interleaved --virtual-stages 2 \
            --backend "$backend"
        out=bench/results/predict-llama3-405b-16k-$preset-$backend.txt
        start=$(date +%s.%N)
        if [ -x /usr/bin/time ]; then
            /usr/bin/time -f '%M' -o "$dir/rss" "$bin" predict "$@" > "$out"
            rss=", peak RSS $(($(tail -n 1 "$dir/rss") / 1024)) MiB"
        else
            "$bin" predict "$@" > "$out"
            rss=""
        fi
        end=$(date +%s.%N)
        printf 'predict llama3-405b on %s x16384, %s: %.2f s wall%s (%s, %d cores)\n' \
            "$preset" "$backend" "$(echo "$end - $start" | bc -l)" "$rss" "$(uname -m)" \
            "$(nproc)" | tee -a bench/results/predict-llama3-405b-16k.timing
    done
    rm -f "$platform"
done
rm -rf "$dir"
