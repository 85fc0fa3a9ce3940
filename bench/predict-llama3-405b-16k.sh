#!/bin/sh
# bench/predict-llama3-405b-16k.sh - one Llama 3 405B optimizer step on 16,384 GPUs (2,048 nodes)
# of two generated fabrics: dgx-h100 (rail-optimized, non-blocking) and clos-h100 (three tiers:
# 2 nodes per rack, pods of 3,072 GPUs, the aggregation tier oversubscribed 7:1). The split
# "cp16": TP 8 (1-D, sequence parallel) x CP 16 x PP 16 (interleaved, v = 2, the 126 layers
# spread 7/8 per stage) x DP 8, sequence 131,072, global batch 128, ZeRO-3 (FSDP with
# pipelining), flash attention, on both fabrics. On clos-h100 also "cp1-dp128": no context
# parallelism, DP 128, sequence 8,192, global batch 2,048, FSDP without resharding (Llama 3's
# 8K pre-training split as its paper gives it, arXiv 2407.21783 Table 4); and "3d-cp16": the
# cp16 split with 3-D tensor parallelism (q = 2), micro-batch 4, global batch 512, full
# recomputation (what fits in 80 GB). Wall time and peak RSS with the analytic backend and with SimGrid (the
# default), and the machine's load (/proc/loadavg: 1, 5 and 15 minutes) before each run.
#
#   bench/predict-llama3-405b-16k.sh [BUILD_DIR]     (default build)
#
# The predictions go to bench/results/predict-llama3-405b-16k-<preset>[-<split>]-<backend>.txt,
# the timing lines to bench/results/predict-llama3-405b-16k.timing.
set -eu
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
dir=$(mktemp -d)
timing=bench/results/predict-llama3-405b-16k.timing
: > "$timing"

# run PRESET SPLIT NAME ARGS...: the prediction with each backend
run() {
    preset=$1 split=$2 name=$3
    shift 3
    for backend in analytic simgrid; do
        out=bench/results/predict-llama3-405b-16k-$name-$backend.txt
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        start=$(date +%s.%N)
        if [ -x /usr/bin/time ]; then
            /usr/bin/time -f '%M' -o "$dir/rss" "$bin" predict --topology "$dir/$preset.xml" \
                --model llama3-405b --dtype bf16 --attention flash --zero 3 \
                --schedule interleaved --virtual-stages 2 --micro-batch 1 "$@" \
                --backend "$backend" > "$out"
            rss=", peak RSS $(($(tail -n 1 "$dir/rss") / 1024)) MiB"
        else
            "$bin" predict --topology "$dir/$preset.xml" --model llama3-405b --dtype bf16 \
                --attention flash --zero 3 --schedule interleaved --virtual-stages 2 \
                --micro-batch 1 "$@" --backend "$backend" > "$out"
            rss=""
        fi
        end=$(date +%s.%N)
        printf 'predict llama3-405b %s on %s x16384, %s: %.2f s wall%s, load %s (%s, %d cores)\n' \
            "$split" "$preset" "$backend" "$(echo "$end - $start" | bc -l)" "$rss" "$load" \
            "$(uname -m)" "$(nproc)" | tee -a "$timing"
    done
}

for preset in dgx-h100 clos-h100; do
    start=$(date +%s.%N)
    "$bin" topology --preset "$preset" --nodes 2048 -o "$dir/$preset.xml"
    end=$(date +%s.%N)
    printf 'topology --preset %s --nodes 2048: %.2f s wall, %d MiB\n' "$preset" \
        "$(echo "$end - $start" | bc -l)" "$(($(wc -c < "$dir/$preset.xml") / 1048576))" |
        tee -a "$timing"
    run "$preset" cp16 "$preset" --tp-mode 1d --tp 8 --sp --cp 16 --pp 16 --dp 8 --seq 131072 \
        --global-batch 128
done
run clos-h100 cp1-dp128 clos-h100-cp1-dp128 --tp-mode 1d --tp 8 --sp --pp 16 --dp 128 \
    --seq 8192 --global-batch 2048 --no-reshard
run clos-h100 3d-cp16 clos-h100-3d-cp16 --tp-mode 3d --tp 8 --cp 16 --pp 16 --dp 8 \
    --seq 131072 --global-batch 512 --micro-batch 4 --recompute full
rm -rf "$dir"
