#!/usr/bin/env bash
# The GPU check's scripts on the host executor (meson test gpu-scripts): bench/gpu-measure.sh
# runs end to end with --executor host on the tiny model (every correctness check passes, the
# bench says "inputs": "random", three timed steps), then bench/gpu-judge.sh calibrates and
# validates what it measured; every script passes bash -n and, where installed, shellcheck.
# SIMPAR_BIN and SIMPAR_EXEC_BIN name the binaries (tests/meson.build); run from the source root.
set -uo pipefail
fail=0
check() { # check DESCRIPTION COMMAND...
  if ! "${@:2}"; then
    echo "FAIL: $1"
    fail=$((fail + 1))
  fi
}
for f in bench/gpu-measure.sh bench/gpu-judge.sh bench/gpu-validate.sh; do
  check "bash -n $f" bash -n "$f"
  if command -v shellcheck >/dev/null; then
    check "shellcheck $f" shellcheck -x "$f"
  fi
done

out=$(mktemp -d /tmp/simpar-gpu-scripts-XXXXXX)
trap 'rm -rf "$out"' EXIT
check "gpu-measure.sh --executor host" \
  bench/gpu-measure.sh --executor host --exec "$SIMPAR_EXEC_BIN" --out "$out"
checks=$(find "$out/checks" -name '*.json' | wc -l)
check "14 correctness checks, not $checks" [ "$checks" -eq 14 ]
passed=$(grep -l '"passed" : true' "$out"/checks/*.json | wc -l)
check "every check passed, not $passed" [ "$passed" -eq 14 ]
check "the bench says its inputs were random" grep -q '"inputs" : "random"' "$out/bench.json"
for b in 1 2 4; do
  check "run-b$b.json" grep -q '"format" : "simpar-run"' "$out/run-b$b.json"
done
check "device.txt says host" grep -qx host "$out/device.txt"

check "gpu-judge.sh" bench/gpu-judge.sh --simpar "$SIMPAR_BIN" --out "$out" >/dev/null
check "a calibration" grep -q '"gemm' "$out/calib.json"
steps=$(grep -c -E '^  b[124], (preset|calibrated): step' "$out/judge.txt")
check "six validated steps in judge.txt, not $steps" [ "$steps" -eq 6 ]
check "judge.txt lists the 14 checks" [ "$(grep -c -E '^  (layer|step)-' "$out/judge.txt")" -eq 14 ]
if [ "$fail" -gt 0 ]; then
  cat "$out/measure.log" "$out/judge.txt" 2>/dev/null | tail -40
fi
echo "gpu-scripts: $fail failure(s)"
exit "$fail"
