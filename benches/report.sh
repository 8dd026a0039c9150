#!/usr/bin/env bash
# The benchmark recipe, one command: installs what it needs (.ci/setup),
# builds the release binaries, runs every stress-test scenario against
# Trellis, the rusty-bacnet and bacpypes3 servers and a bare UDP echo in one
# run, and regenerates docs/benchmarks/ (results.json, README.md, SVG charts).
#
#   benches/report.sh              # the full recipe (see benches/README.md for how long it takes)
#   benches/report.sh --quick      # one round, short steps: a smoke run of the recipe
#   OUT=/tmp/report benches/report.sh   # write the report elsewhere
#
# The raw lines and the commands that produced them stay in $RAW (printed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

# Step lengths are chosen so the runs take about 5 minutes in all.
ROUNDS=2
STEP_SECS=1.2
SHORT_SECS=1
WARMUP_MS=300
MSTP_EXCHANGES=20
SWAPS=100
# The objects target: p50 flat within ±10 % over 3 rounds of 3-second steps.
OBJECT_ROUNDS=3
OBJECT_SECS=3
if [ "${1:-}" = "--quick" ]; then
    OBJECT_ROUNDS=1
    OBJECT_SECS=0.5
    ROUNDS=1
    STEP_SECS=0.5
    SHORT_SECS=0.5
    MSTP_EXCHANGES=5
    SWAPS=10
fi
OUT=${OUT:-docs/benchmarks}
RAW=${RAW:-$(mktemp -d -t trellis-bench-XXXXXX)}
mkdir -p "$RAW" "$OUT"

# --bench: also cmake and libclang, which the opcua scenario's build of the
# C reference stack (open62541) needs.
bash .ci/setup --bench

echo "==> the trellis Python package: the release wheel, into the peers' venv (the python scenario)"
rm -rf target/wheels-release
.venv-peers/bin/pip wheel -q --disable-pip-version-check --no-deps -w target/wheels-release ./python
WHEEL=$(ls target/wheels-release/trellis-*.whl)
.venv-peers/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"

echo "==> cargo build --release (trellis, stress-test with open62541)"
BUILD_START=$(date +%s)
cargo build --release --locked -p trellis -p trellis-benches --features trellis-benches/open62541
echo "==> the build took $(( $(date +%s) - BUILD_START )) s"
STRESS=target/release/stress-test

# Run one scenario: its JSON lines into $RAW/NAME.jsonl and the command line,
# as typed, into $RAW/NAME.cmd (the report names it beside every figure).
run() {
    local name=$1
    shift
    echo "==> $*"
    echo "$*" > "$RAW/$name.cmd"
    local t0
    t0=$(date +%s)
    "$@" > "$RAW/$name.jsonl"
    echo "==> $name took $(( $(date +%s) - t0 )) s"
}

START=$(date +%s)
# A 1-second timeout: bacpypes3 drops requests at the high steps, and every
# step waits out its last timeouts before the next.
run clients $STRESS clients --target all --rounds $ROUNDS --step-secs 1 --warmup-ms $WARMUP_MS --timeout-ms 1000
run objects $STRESS objects --target all --rounds $OBJECT_ROUNDS --step-secs $OBJECT_SECS --warmup-ms $WARMUP_MS
run segmentation $STRESS segmentation --target all --step-secs $SHORT_SECS --warmup-ms $WARMUP_MS
run mixed $STRESS mixed --target all --journal --step-secs $STEP_SECS --warmup-ms $WARMUP_MS
run cov $STRESS cov --target all --step-secs $STEP_SECS
run cost $STRESS cost --callgrind --cache-dir "$RAW/cache"
run idle-memory $STRESS idle-memory --instances 32 --cache-dir "$RAW/cache"
run swap $STRESS swap --swaps $SWAPS --rounds $ROUNDS --step-secs 2 --warmup-ms $WARMUP_MS
run amplification $STRESS amplification --target all
run mqtt $STRESS mqtt --messages 20000 --rounds $ROUNDS --callgrind
run opcua $STRESS opcua --seconds $OBJECT_SECS --latency-secs 5
# Unpinned: the gateway's threads may use every core the machine has.
run router $STRESS router --rounds $ROUNDS --step-secs $SHORT_SECS --warmup-ms $WARMUP_MS
run devices $STRESS devices --devices 1,8 --clients-per-device 8 --rounds $ROUNDS --step-secs $SHORT_SECS --warmup-ms $WARMUP_MS --pin off
run python $STRESS python --rounds $ROUNDS --step-secs $STEP_SECS --warmup-ms $WARMUP_MS --wheel "$WHEEL"
run mstp $STRESS mstp --exchanges $MSTP_EXCHANGES --step-secs 1 --warmup-ms 1000
run mstp-routed $STRESS mstp --routed --reply small --exchanges $MSTP_EXCHANGES --step-secs 1 --warmup-ms 1000
echo "==> runs took $(( $(date +%s) - START )) s"

PEERS=$(.venv-peers/bin/pip freeze 2>/dev/null | grep -i -E '^(bacpypes3|rusty-bacnet|rusty_bacnet)==' | paste -sd ' ' - || true)
# The commit the runs were made at (the report may be generated later).
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then COMMIT="$COMMIT (with local changes)"; fi
printf '{"peers": "%s", "commit": "%s"}\n' "${PEERS:-unknown}" "$COMMIT" > "$RAW/machine.json"

echo "==> report into $OUT"
$STRESS report --input "$RAW" --out "$OUT"
echo "raw results: $RAW"
