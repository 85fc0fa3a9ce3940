#!/bin/sh
# bench/sweep-moe.sh ROUNDS BUILD... - an MoE capacity-planning sweep with --backend formula:
# Mixtral 8x7B on the dgx-h100 preset, 64..512 GPUs x --ep 1,2,4,8, global batch 512 (1,392
# configurations; every split simpar sweep enumerates, its default workers). The builds
# alternate, ROUNDS times; per build the minimum and median of the wall time and of the CPU
# time (user + system, the workers included: /usr/bin/time), rows per second of each, and the
# load average before and after. The first build's CSV is the reference: every other build's
# must be the same bytes (cmp), else the script fails. A build is a folder with app/simpar.
#
#   bench/sweep-moe.sh 5 /tmp/main/build build
#
# Writes bench/results/sweep-moe.txt.
set -eu
[ $# -ge 2 ] || { echo "usage: bench/sweep-moe.sh ROUNDS BUILD..." >&2; exit 2; }
rounds=$1
shift
for b in "$@"; do
    [ -x "$b/app/simpar" ] || { echo "bench: no simpar in $b/app" >&2; exit 1; }
done
mkdir -p bench/results
out=bench/results/sweep-moe.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args="--preset dgx-h100 --gpus 64..512 --model mixtral-8x7b --global-batch 512 --ep 1,2,4,8 \
    --backend formula -q"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
r=1
while [ "$r" -le "$rounds" ]; do
    i=0
    for b in "$@"; do
        rm -f "$work/s.csv"
        # shellcheck disable=SC2086
        /usr/bin/time -f '%e %U %S' -o "$work/t" "$b/app/simpar" sweep $args -o "$work/s.csv" \
            > /dev/null
        if [ "$i" -eq 0 ] && [ "$r" -eq 1 ]; then
            cp "$work/s.csv" "$work/ref.csv"
        elif ! cmp -s "$work/ref.csv" "$work/s.csv"; then
            echo "bench: $b's CSV differs from $1's" >&2
            exit 1
        fi
        rows=$(($(grep -vc '^#' "$work/s.csv") - 1))
        ok=$(grep -c ',ok,' "$work/s.csv" || true)
        echo "$b $(awk '{ printf "%.3f %.3f %.3f %.3f", $1, $2 + $3, $2, $3 }' "$work/t") $rows $ok" \
            >> "$work/all"
        i=$((i + 1))
    done
    r=$((r + 1))
done
{
    printf '# %s, %s, %d cores, %d rounds alternating; load average %s before, %s after\n' \
        "$(date -u +%Y-%m-%d)" "$(uname -m)" "$(nproc)" "$rounds" "$load_before" \
        "$(cut -d' ' -f1-3 /proc/loadavg)"
    for b in "$@"; do
        grep "^$b " "$work/all" | cut -d' ' -f2 | sort -g > "$work/w"
        grep "^$b " "$work/all" | cut -d' ' -f3 | sort -g > "$work/c"
        grep "^$b " "$work/all" | sort -k3 -g | cut -d' ' -f4-5 > "$work/us"
        grep "^$b " "$work/all" | head -1 | cut -d' ' -f6-7 > "$work/n"
        paste -d' ' "$work/w" "$work/c" "$work/us" | awk -v b="$b" -v n="$(cat "$work/n")" '
            { w[NR] = $1; c[NR] = $2; u[NR] = $3; s[NR] = $4 }
            END { split(n, x, " "); m = int((NR + 1) / 2)
                  printf "%s: %d configurations (%d ok); wall min %.2f s, median %.2f s " \
                         "(%.0f rows/s at the median); CPU (user + system) min %.2f s, " \
                         "median %.2f s (user %.2f, system %.2f: %.0f rows per CPU second) " \
                         "over %d runs\n",
                         b, x[1], x[2], w[1], w[m], x[1] / w[m], c[1], c[m], u[m], s[m],
                         x[1] / c[m], NR }'
    done
    echo "every build's CSV the same bytes as the first's (cmp)"
} | tee "$out"
