#!/bin/sh
# bench/clos-modes.sh - the cheaper modes against every-rank SimGrid on a small Clos fabric: 32
# clos-h100 nodes (256 GPUs) in pods of 64 GPUs, so data-parallel and context-parallel groups
# cross the 7:1 oversubscribed aggregation tier. Llama 3 70B cut to 16 layers, TP 8 + SP x CP 2 x
# PP 4 interleaved x DP 4, sequence 16,384, ZeRO-3, and the same split with DP 8 and CP 1. For
# each: the step of SimGrid with every rank (--tp-slices all), SimGrid on one slice (the
# default), the analytic backend and the formula mode, each one's relative difference from the
# first, and the wall time.
#
#   bench/clos-modes.sh [BUILD_DIR]     (default build)
#
# Output in bench/results/clos-modes.txt.
set -eu
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
dir=$(mktemp -d)
out=bench/results/clos-modes.txt
: > "$out"
"$bin" topology --preset clos-h100 --nodes 32 --pod-gpus 64 -o "$dir/clos256.xml"
step() {
    sed -n 's/.*"step_time_s" : \([0-9.e+-]*\).*/\1/p' "$1" | head -n 1
}
for split in "--cp 2 --dp 4" "--cp 1 --dp 8"; do
    ref=""
    for mode in "--tp-slices all" "" "--backend analytic" "--backend formula"; do
        start=$(date +%s.%N)
        # shellcheck disable=SC2086 # the split and the mode are lists of words
        "$bin" predict --topology "$dir/clos256.xml" --model llama3-70b --layers 16 \
            --tp-mode 1d --tp 8 --sp --pp 4 --seq 16384 --global-batch 32 --micro-batch 1 \
            --zero 3 --dtype bf16 --attention flash --schedule interleaved --virtual-stages 2 \
            $split $mode --json > "$dir/json"
        end=$(date +%s.%N)
        t=$(step "$dir/json")
        [ -n "$ref" ] || ref=$t
        printf '%-14s %-18s step %.6f s, %+.2e from every rank, %.2f s wall\n' "$split" \
            "${mode:-(default)}" "$t" "$(echo "($t - $ref) / $ref" | bc -l)" \
            "$(echo "$end - $start" | bc -l)" | tee -a "$out"
    done
done
rm -rf "$dir"
