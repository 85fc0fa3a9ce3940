#!/bin/sh
# bench/speed-vs-commit.sh OLD_BUILD NEW_BUILD [ROUNDS] - W1 to W4 of two builds of simpar (say
# the previous commit's and this one's) in one run on one machine, alternating, ROUNDS times
# (default 2): W1 the main job (median of 5), W2 GPT-3 175B on 4096 DGX A100 GPUs (1-D TP 8 +
# SP, PP 8 interleaved, DP 64), W3 the same model in 3-D (micro-batch 256), W4 one 64 MiB ring
# all-reduce over the 4096 GPUs. Wall seconds per workload and build, one line per round and
# build, on stdout. Compare the builds as ratios; the spread between rounds is the noise.
set -eu
[ $# -ge 2 ] || { echo "usage: bench/speed-vs-commit.sh OLD_BUILD NEW_BUILD [ROUNDS]" >&2; exit 2; }
old=$1/app/simpar new=$2/app/simpar rounds=${3:-2}
for b in "$old" "$new"; do
    [ -x "$b" ] || { echo "bench: $b not found" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$new" topology --preset dgx-a100 --nodes 512 -o "$dir/a4096.xml"
gpt3="--model gpt3-175b --global-batch 1536"
w2="$gpt3 --tp-mode 1d --tp 8 --sp --pp 8 --dp 64 --schedule interleaved --virtual-stages 2 \
    --micro-batch 1 --recompute selective"
w3="$gpt3 --tp-mode 3d --micro-batch 256"
wall() {
    s=$(date +%s.%N)
    "$@" > /dev/null
    e=$(date +%s.%N)
    echo "$e - $s" | bc -l
}
printf '# %s, %s, %d cores: %s against %s\n' "$(date -u +%Y-%m-%d)" "$(uname -m)" "$(nproc)" \
    "$2" "$1"
r=1
while [ "$r" -le "$rounds" ]; do
    for which in old new; do
        bin=$old
        [ "$which" = new ] && bin=$new
        w1=""
        for i in 1 2 3 4 5; do
            w1="$w1 $(wall "$bin" --topology topologies/v100x64.xml)"
        done
        w1=$(echo "$w1" | tr ' ' '\n' | sed '/^$/d' | sort -n | sed -n 3p)
        # shellcheck disable=SC2086 # the option lists are lists of words
        t2=$(wall "$bin" predict --topology "$dir/a4096.xml" $w2)
        # shellcheck disable=SC2086
        t3=$(wall "$bin" predict --topology "$dir/a4096.xml" $w3)
        t4=$(wall "$bin" collective --topology "$dir/a4096.xml" --op allreduce --gpus 4096 \
            --algo ring --bytes 64M)
        printf '%s round %d: W1 median %.3f s, W2 %.2f s, W3 %.2f s, W4 %.2f s\n' "$which" "$r" \
            "$w1" "$t2" "$t3" "$t4"
    done
    r=$((r + 1))
done
