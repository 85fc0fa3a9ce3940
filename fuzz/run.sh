#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] [BUILD_DIR]: runs every libFuzzer target (fuzz/meson.build) for SECONDS
# (default 60) on a copy of its corpus and regressions (the committed corpus does not grow),
# printing per target the executions, the time and whether it crashed; exits 1 on any crash,
# leak, sanitizer report or hang (an input running over 5 s). BUILD_DIR (default build-fuzz) is
# configured with clang, ASan and UBSan when it does not exist. FUZZ_TARGETS="csv model" runs
# some targets only; FUZZ_PARALLEL=2 runs two at a time. A crashing input is kept in
# BUILD_DIR/fuzz-crashes/<target>/: add it to fuzz/regressions/<target>/ with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
build=${2:-build-fuzz}
targets=${FUZZ_TARGETS:-calibration cli csv measured megatron model nccl-tests platform sweep-spec trace}
parallel=${FUZZ_PARALLEL:-1}

if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false \
    -Dtests=false
fi
meson compile -C "$build" $(for t in $targets; do echo "fuzz-$t"; done)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if [ -z "${TMPDIR:-}" ] && [ -w /dev/shm ]; then
  export TMPDIR=/dev/shm # the targets' input file: 4x the executions of a disk's /tmp
fi

# One target: its line of figures on stdout, the log's end on a crash; status 1 on a crash.
fuzz_one() {
  local t=$1 corpus="$work/$t" crashes="$build/fuzz-crashes/$t" log="$work/$t.log" rc=0
  mkdir -p "$corpus" "$crashes"
  cp fuzz/corpus/"$t"/* "$corpus"/
  if [ -d fuzz/regressions/"$t" ]; then cp fuzz/regressions/"$t"/* "$corpus"/; fi
  local start=$SECONDS
  "$build/fuzz/fuzz-$t" "$corpus" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1 || rc=$?
  local execs rate
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
  if [ "$rc" -eq 0 ]; then
    printf '%-12s %5d s %12s executions %8s/s  no crash\n' "$t" $((SECONDS - start)) \
      "${execs:-?}" "${rate:-?}"
    return 0
  fi
  printf '%-12s %5d s %12s executions  CRASH (status %d; inputs in %s)\n' "$t" \
    $((SECONDS - start)) "${execs:-?}" "$rc" "$crashes"
  grep -E -A25 'ERROR: |runtime error|ERROR \*\*|CRITICAL \*\*' "$log" | head -60 || tail -40 "$log"
  return 1
}

echo "target        time      executions      rate  result (fuzz/run.sh $secs, $(nproc) cores)"
failed=0
running=0
for t in $targets; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
