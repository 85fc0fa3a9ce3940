#!/bin/sh
# bench/readme-sweep.sh - the README's capacity-planning sweep: every split of GPT-3 175B from 64
# to 4096 DGX A100 GPUs in all four tensor-parallel modes at a global batch of 1536, into a
# ranked CSV. Wall time, peak RSS, the rows, and the machine's load (/proc/loadavg: 1, 5 and
# 15 minutes) before the run; bench/readme-figures.py puts them in the README.
#
#   bench/readme-sweep.sh [BUILD_DIR]     (default build)
#
# Output in bench/results/readme-sweep.txt.
set -eu
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time (Debian package time) is needed" >&2; exit 1; }
mkdir -p bench/results
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
load=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/time -f '%e %M' -o "$dir/time" "$bin" sweep --preset dgx-a100 --gpus 64..4096 \
    --tp-mode all --model gpt3-175b --global-batch 1536 -o "$dir/sweep.csv" --quiet > /dev/null
read -r wall rss < "$dir/time"
rows=$(($(wc -l < "$dir/sweep.csv") - 1))
printf 'readme sweep: %.0f s wall, peak RSS %d MiB, %d rows, load %s (%s, %d cores)\n' "$wall" \
    "$((rss / 1024))" "$rows" "$load" "$(uname -m)" "$(nproc)" | tee bench/results/readme-sweep.txt
