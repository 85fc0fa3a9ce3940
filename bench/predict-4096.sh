#!/bin/sh
# bench/predict-4096.sh - GPT-3 175B (96 layers, h 12288, 96 heads, s 2048, global batch 1536)
# one optimizer step on a generated 512-node DGX A100 platform (4096 GPUs):
#
#   W2  TP 8 (1-D, sequence parallel) x PP 8 (interleaved, v = 2) x DP 64, micro-batch 1,
#       selective recomputation
#   W3  3-D tensor parallelism q = 16 (T = 4096), micro-batch 256 (3-D splits the batch over
#       q^2 = 256 GPUs), so 6 micro-batches
#
# each in the default mode (SimGrid, fused collectives, one tensor-parallel slice of the step
# where it provably stands for all, the layer on the ranks of alike nodes that stand for the
# rest: sim/replay-quotient.c) and with every rank (--tp-slices all), W3 also with its blocks
# timed on the analytic backend
# (--block-backend analytic), against the exact mode (every round of every collective, every
# rank: --collectives exact --tp-slices all) where that is affordable: the same shapes on 512
# GPUs (W2: DP 8; W3: q = 8). With --exact also W2's and W3's exact modes at 4096 GPUs (6 and 48
# minutes on 2 cores). Wall time, peak RSS and the predicted step of each run.
#
#   bench/predict-4096.sh [BUILD_DIR] [--exact]     (default build)
#
# Output in bench/results/predict-4096.txt (appended to, one line per run).
set -eu
build=${1:-build}
exact=${2:-}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" topology --preset dgx-a100 --nodes 512 -o "$dir/a4096.xml"
"$bin" topology --preset dgx-a100 --nodes 64 -o "$dir/a512.xml"
out=bench/results/predict-4096.txt
printf '# %s, %s, %d cores\n' "$(date -u +%Y-%m-%d)" "$(uname -m)" "$(nproc)" | tee -a "$out"
gpt3="--model gpt3-175b --global-batch 1536"
w2="$gpt3 --tp-mode 1d --tp 8 --sp --pp 8 --schedule interleaved --virtual-stages 2 \
    --micro-batch 1 --recompute selective"
w3="$gpt3 --tp-mode 3d --micro-batch 256"
exact_mode="--collectives exact --tp-slices all"

# run LABEL PLATFORM ARGS...: one line with wall, peak RSS and the step; the step in $step
run() {
    label=$1 platform=$2
    shift 2
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$dir/rss" "$bin" predict --topology "$platform" --json "$@" \
        > "$dir/json"
    end=$(date +%s.%N)
    step=$(sed -n 's/.*"step_time_s" : \([0-9.e+-]*\).*/\1/p' "$dir/json" | head -n 1)
    slices=$(sed -n 's/.*"step_slices" : \([0-9.e+-]*\).*/\1/p' "$dir/json" | head -n 1)
    ranks=$(sed -n 's/.*"layer_ranks" : \([0-9]*\).*/\1/p' "$dir/json" | head -n 1)
    printf '%-48s %7.2f s wall, peak RSS %5d MiB, step %.6f s (slices %s, layer on %s ranks)\n' \
        "$label" "$(echo "$end - $start" | bc -l)" $(($(tail -n 1 "$dir/rss") / 1024)) "$step" \
        "${slices%.0}" "$ranks" |
        tee -a "$out"
}

# compare LABEL DEFAULT EXACT: the default mode's relative error against the exact mode
compare() {
    printf '%-48s relative error %.2g\n' "$1" \
        "$(echo "e = ($2 - $3) / $3; if (e < 0) e = -e; e" | bc -l)" | tee -a "$out"
}

run "W2 4096 GPUs, default" "$dir/a4096.xml" $w2 --dp 64
w2_default=$step
run "W2 4096 GPUs, every rank (fused)" "$dir/a4096.xml" $w2 --dp 64 --tp-slices all
compare "W2 4096 GPUs: one slice against every rank" "$w2_default" "$step"
run "W3 4096 GPUs (q=16), default" "$dir/a4096.xml" $w3 --tp 4096
w3_default=$step
run "W3 4096 GPUs (q=16), every rank (fused)" "$dir/a4096.xml" $w3 --tp 4096 --tp-slices all
compare "W3 4096 GPUs: default against every rank" "$w3_default" "$step"
run "W3 4096 GPUs (q=16), analytic blocks" "$dir/a4096.xml" $w3 --tp 4096 --block-backend analytic
w3_fast=$step
compare "W3 4096 GPUs: analytic blocks against default" "$step" "$w3_default"

run "W2 shape on 512 GPUs (DP 8), default" "$dir/a512.xml" $w2 --dp 8
small=$step
run "W2 shape on 512 GPUs (DP 8), exact" "$dir/a512.xml" $w2 --dp 8 $exact_mode
compare "W2 shape on 512 GPUs: default against exact" "$small" "$step"
run "W3 shape on 512 GPUs (q=8), default" "$dir/a512.xml" $gpt3 --tp-mode 3d --tp 512 \
    --micro-batch 64
small=$step
run "W3 shape on 512 GPUs (q=8), every rank (fused)" "$dir/a512.xml" $gpt3 --tp-mode 3d \
    --tp 512 --micro-batch 64 --tp-slices all
every=$step
run "W3 shape on 512 GPUs (q=8), analytic blocks" "$dir/a512.xml" $gpt3 --tp-mode 3d \
    --tp 512 --micro-batch 64 --block-backend analytic
fast=$step
run "W3 shape on 512 GPUs (q=8), exact" "$dir/a512.xml" $gpt3 --tp-mode 3d --tp 512 \
    --micro-batch 64 $exact_mode
compare "W3 shape on 512 GPUs: default against exact" "$small" "$step"
compare "W3 shape on 512 GPUs: every rank (fused) against exact" "$every" "$step"
compare "W3 shape on 512 GPUs: analytic blocks against exact" "$fast" "$step"

if [ "$exact" = "--exact" ]; then
    run "W2 4096 GPUs, exact" "$dir/a4096.xml" $w2 --dp 64 $exact_mode
    compare "W2 4096 GPUs: default against exact" "$w2_default" "$step"
    run "W3 4096 GPUs (q=16), exact" "$dir/a4096.xml" $w3 --tp 4096 $exact_mode \
        --time-budget 240
    compare "W3 4096 GPUs: default against exact" "$w3_default" "$step"
    compare "W3 4096 GPUs: analytic blocks against exact" "$w3_fast" "$step"
fi
