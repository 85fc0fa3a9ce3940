#!/bin/sh
# bench/sweep-throughput.sh - configurations per second per core of `simpar sweep`, one worker
# process (--jobs 1), on the 64-GPU DGX A100 platform with GPT-3 1.3B (global batch 512):
#
#   analytic  every split of 8, 16, 32, 64 GPUs x micro-batch 1..8 x recompute none,selective
#             (1008 rows, 666 that fit)
#   simgrid   every split of 8, 16, 32, 64 GPUs at micro-batch 4 (126 rows, 99 that fit)
#
#   bench/sweep-throughput.sh [BUILD_DIR]     (default build)
#
# Wall time is measured here (date), around the whole command: platform loads, forks, journal
# and output included. Writes bench/results/sweep-throughput.txt.
set -eu
build=${1:-build}
bin="$build/sim/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common="--topology topologies/dgx-a100x64.xml --gpus 8..64 --model gpt3-1.3b --global-batch 512 --jobs 1 -q"
out=bench/results/sweep-throughput.txt
: > "$out"

# bench NAME ARGS...: one sweep, timed; prints rows, ok rows, wall and rows per second per core
bench() {
    name=$1
    shift
    start=$(date +%s.%N)
    "$bin" sweep $common "$@" -o "$work/$name.csv" > "$work/$name.txt"
    end=$(date +%s.%N)
    wall=$(echo "$end - $start" | bc -l)
    rows=$(grep -vc '^#' "$work/$name.csv")
    rows=$((rows - 1))
    ok=$(grep -c ',ok,' "$work/$name.csv" || true)
    printf 'sweep %-8s %4d configurations (%d ok) in %6.2f s wall: %6.1f configurations/s per core\n' \
        "$name" "$rows" "$ok" "$wall" "$(echo "$rows / $wall" | bc -l)" | tee -a "$out"
}

bench analytic --micro-batch 1..8 --recompute none,selective
bench simgrid --micro-batch 4 --backend simgrid
printf '(%s, %d cores, --jobs 1)\n' "$(uname -m)" "$(nproc)" | tee -a "$out"
