#!/bin/sh
# bench/sweep-vs-commit.sh ROUNDS BUILD... - the CPU time (user + system, the worker included)
# of bench/sweep-throughput.sh's large formula sweep (16,128 configurations of GPT-3 1.3B on
# the 64-GPU DGX A100 platform, one worker) for each build, the builds alternating, ROUNDS
# times: the minimum and median per build. CPU time, not wall, so that a machine shared with
# other work still compares the builds; the spread between rounds is the noise. A build is a
# folder with app/simpar (or, for builds older than the folder layout, sim/simpar).
#
# Writes bench/results/sweep-vs-commit.txt.
set -eu
[ $# -ge 2 ] || { echo "usage: bench/sweep-vs-commit.sh ROUNDS BUILD..." >&2; exit 2; }
rounds=$1
shift
mkdir -p bench/results
out=bench/results/sweep-vs-commit.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args="--topology topologies/dgx-a100x64.xml --gpus 8..64 --model gpt3-1.3b --jobs 1 -q \
    --global-batch 64..8192 --micro-batch 1..8 --recompute none,selective \
    --schedule 1f1b,gpipe --backend formula"
bin() {
    if [ -x "$1/app/simpar" ]; then echo "$1/app/simpar"; else echo "$1/sim/simpar"; fi
}
for b in "$@"; do
    [ -x "$(bin "$b")" ] || { echo "bench: no simpar in $b" >&2; exit 1; }
done
r=1
while [ "$r" -le "$rounds" ]; do
    for b in "$@"; do
        rm -f "$work/s.csv"
        # shellcheck disable=SC2086
        /usr/bin/time -f '%U %S' -o "$work/t" "$(bin "$b")" sweep $args -o "$work/s.csv" \
            > /dev/null
        ok=$(grep -c ',ok,' "$work/s.csv" || true)
        echo "$b $(awk '{ printf "%.3f", $1 + $2 }' "$work/t") $ok" >> "$work/all"
    done
    r=$((r + 1))
done
{
    printf '# %s, %s, %d cores, %d rounds alternating; load average %s at the end\n' \
        "$(date -u +%Y-%m-%d)" "$(uname -m)" "$(nproc)" "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)"
    for b in "$@"; do
        grep "^$b " "$work/all" | sort -k2 -g | awk -v b="$b" '
            { t[NR] = $2; ok = $3 }
            END { printf "%s: CPU min %.3f s, median %.3f s over %d runs (%d configurations ok)\n",
                      b, t[1], t[int((NR + 1) / 2)], NR, ok }'
    done
} | tee "$out"
