#!/bin/sh
# bench/clos-modes.sh - the cheaper modes against every-rank SimGrid on small Clos fabrics: 32
# clos-h100 nodes (256 GPUs) in pods of 64 GPUs, so data-parallel and context-parallel groups
# cross the 7:1 oversubscribed aggregation tier (Llama 3 70B cut to 16 layers, TP 8 + SP x CP 2
# x PP 4 interleaved x DP 4, sequence 16,384, ZeRO-3, and the same split with DP 8 and CP 1);
# and 64 nodes (512 GPUs) in pods of 128 GPUs, not oversubscribed, where the default folds the
# step onto alike ranks (replay-quotient.c): 1-D with CP 2 interleaved, 3-D with CP 2, 3-D
# interleaved. For each: the step and the data-parallel exposed time of SimGrid with every rank
# (--tp-slices all), SimGrid's default (one slice, folded where it proves alike ranks), the
# analytic backend and the formula mode, each one's relative difference from the first, the
# ranks the step simulated, and the wall time.
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
"$bin" topology --preset clos-h100 --nodes 64 --pod-gpus 128 --oversubscription 1 \
    -o "$dir/clos512.xml"
field() {
    sed -n "s/.*\"$2\" : \([0-9.e+-]*\).*/\1/p" "$1" | head -n 1
}
# case FILE SPLIT: the split on the fabric in every mode
case_modes() {
    ref="" dpref=""
    for mode in "--tp-slices all" "" "--backend analytic" "--backend formula"; do
        start=$(date +%s.%N)
        # shellcheck disable=SC2086 # the split and the mode are lists of words
        "$bin" predict --topology "$dir/$1" --model llama3-70b --dtype bf16 --attention flash \
            --zero 3 $2 $mode --json > "$dir/json"
        end=$(date +%s.%N)
        t=$(field "$dir/json" step_time_s) dp=$(field "$dir/json" dp_exposed_s)
        [ -n "$ref" ] || ref=$t dpref=$dp
        printf '%-12s %-58s %-18s step %.6f s (%+.2e), dp exposed %.4f s (%+.2e), step ranks %s of %s, %.2f s wall\n' \
            "$1" "$2" "${mode:-(default)}" "$t" "$(echo "($t - $ref) / $ref" | bc -l)" "$dp" \
            "$(echo "($dp - $dpref) / $dpref" | bc -l)" "$(field "$dir/json" step_ranks)" \
            "$(field "$dir/json" slice_ranks)" "$(echo "$end - $start" | bc -l)" | tee -a "$out"
    done
}
l16="--layers 16 --tp 8 --pp 4 --seq 16384 --global-batch 32 --micro-batch 1 --schedule interleaved --virtual-stages 2"
case_modes clos256.xml "--tp-mode 1d --sp $l16 --cp 2 --dp 4"
case_modes clos256.xml "--tp-mode 1d --sp $l16 --cp 1 --dp 8"
l8="--layers 8 --tp 8 --pp 4 --seq 8192 --global-batch 256"
case_modes clos512.xml "--tp-mode 1d --sp $l8 --cp 2 --dp 8 --micro-batch 1 --schedule interleaved --virtual-stages 2"
case_modes clos512.xml "--tp-mode 3d $l8 --cp 2 --dp 8 --micro-batch 4"
case_modes clos512.xml "--tp-mode 3d $l8 --dp 16 --micro-batch 4 --schedule interleaved --virtual-stages 2"
rm -rf "$dir"
