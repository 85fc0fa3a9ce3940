#!/bin/sh
# bench/w4-allreduce-4096.sh - one 64 MiB ring all-reduce over the 4096 GPUs of a generated
# 512-node DGX A100 platform, in each mode of `simpar collective`: SimGrid exact (the default:
# a lone ring on links it cannot saturate is evaluated, not played), SimGrid fused, analytic
# exact and fused. Then the error of the exact shortcut against SimGrid playing every round,
# on 256 GPUs where that is affordable. Last, the same all-reduce over 16,384 GPUs of a 2,048-node
# DGX H100 platform (every member's slowest hop alike: the rounds in step are one sum each) and
# of clos-h100 (hops across racks and pods slower: every round evaluated). Wall time, peak RSS
# and the prediction of each.
#
#   bench/w4-allreduce-4096.sh [BUILD_DIR]     (default build)
#
# Output in bench/results/w4-allreduce-4096.txt.
set -eu
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
dir=$(mktemp -d)
"$bin" topology --preset dgx-a100 --nodes 512 -o "$dir/a4096.xml"
"$bin" topology --preset dgx-a100 --nodes 32 -o "$dir/a256.xml"
out=bench/results/w4-allreduce-4096.txt
: > "$out"
# run LABEL PLATFORM GPUS ARGS...: one line with wall, RSS and time_s
run() {
    label=$1 platform=$2 gpus=$3
    shift 3
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$dir/rss" "$bin" collective --topology "$platform" --op allreduce \
        --gpus "$gpus" --algo ring --bytes 64M --json "$@" > "$dir/json"
    end=$(date +%s.%N)
    t=$(sed -n 's/.*"time_s" : \([0-9.e-]*\).*/\1/p' "$dir/json")
    printf '%-28s %5d GPUs: %6.2f s wall, peak RSS %4d MiB, all-reduce %s s\n' "$label" "$gpus" \
        "$(echo "$end - $start" | bc -l)" $(($(tail -n 1 "$dir/rss") / 1024)) "$t" | tee -a "$out"
    last=$t
}
run "simgrid exact (default)" "$dir/a4096.xml" 4096
run "simgrid fused" "$dir/a4096.xml" 4096 --collectives fused
run "analytic exact" "$dir/a4096.xml" 4096 --backend analytic
run "analytic fused" "$dir/a4096.xml" 4096 --backend analytic --collectives fused
run "simgrid exact (default)" "$dir/a256.xml" 256
exact=$last
run "simgrid played (reference)" "$dir/a256.xml" 256 --collectives played
printf 'exact against played at 256 GPUs: relative error %.2g (%s, %d cores)\n' \
    "$(echo "e = ($exact - $last) / $last; if (e < 0) e = -e; e" | bc -l)" "$(uname -m)" \
    "$(nproc)" | tee -a "$out"
rm -f "$dir/a4096.xml" "$dir/a256.xml"
"$bin" topology --preset dgx-h100 --nodes 2048 -o "$dir/h16k.xml"
run "analytic exact, dgx-h100" "$dir/h16k.xml" 16384 --backend analytic
"$bin" topology --preset clos-h100 --nodes 2048 -o "$dir/c16k.xml"
run "analytic exact, clos-h100" "$dir/c16k.xml" 16384 --backend analytic
rm -rf "$dir"
