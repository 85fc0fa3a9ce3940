#!/bin/sh
# bench/report-gpt3.sh - `simpar predict --report` on GPT-3 175B over 1024 DGX A100 GPUs
# (128 nodes): TP 8 + SP x PP 8 interleaved (v = 2) x DP 16, micro-batch 1, global batch 1536,
# selective recomputation, the README's example. Wall time and peak RSS of the prediction alone,
# of the same with --trace (one rank per role), and of --report (table, JSON, trace, the
# breakdown and timeline pictures, README); the size of every file the report wrote (each PNG
# must be non-empty: exit 1 otherwise). The timeline picture is copied to
# docs/timeline-gpt3-175b.png.
#
#   bench/report-gpt3.sh [BUILD_DIR]     (default build)
#
# Output in bench/results/report-gpt3.txt.
set -eu
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time (Debian package time) is needed" >&2; exit 1; }
mkdir -p bench/results
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=bench/results/report-gpt3.txt
: > "$out"
"$bin" topology --preset dgx-a100 --nodes 128 -o "$dir/a100x1024.xml"
gpt="--model gpt3-175b --tp-mode 1d --tp 8 --sp --pp 8 --dp 16 --schedule interleaved \
    --virtual-stages 2 --micro-batch 1 --global-batch 1536 --recompute selective"
# run NAME ARGS...: one timed run, its wall time and peak RSS on one line
run() {
    name=$1
    shift
    # shellcheck disable=SC2086 # gpt is a list of words
    /usr/bin/time -f '%e %M' -o "$dir/time" "$bin" --topology "$dir/a100x1024.xml" $gpt "$@" \
        > /dev/null
    read -r wall rss < "$dir/time"
    printf '%-22s %6.2f s wall, peak RSS %d MiB (%s, %d cores)\n' "$name" "$wall" \
        "$((rss / 1024))" "$(uname -m)" "$(nproc)" | tee -a "$out"
}
run "prediction" 
run "with --trace" --trace "$dir/trace.json"
printf '%-22s %d MiB\n' "trace file" "$(($(wc -c < "$dir/trace.json") / 1048576))" | tee -a "$out"
run "--report" --report "$dir/report"
for f in "$dir"/report/*; do
    size=$(wc -c < "$f")
    printf '  %-20s %d bytes\n' "$(basename "$f")" "$size" | tee -a "$out"
    case $f in
    *.png) [ "$size" -gt 0 ] || { echo "bench: $(basename "$f") is empty" >&2; exit 1; } ;;
    esac
done
cp "$dir/report/timeline-1d.png" docs/timeline-gpt3-175b.png
