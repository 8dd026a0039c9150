#!/usr/bin/env bash
# The benchmark recipe, one command: installs what it needs (.ci/setup),
# builds the release binaries, runs the stress-test scenarios against Trellis,
# the rusty-bacnet and bacpypes3 servers and a bare UDP echo in one run, and
# regenerates docs/benchmarks/ (results.json, README.md, SVG charts).
#
#   benches/report.sh              # the full recipe, about 12 minutes on a fresh 2-vCPU machine
#   benches/report.sh --quick      # one round, short steps: a smoke run of the recipe (about 4 minutes)
#   OUT=/tmp/report benches/report.sh   # write the report elsewhere
#
# The raw lines and the commands that produced them stay in $RAW (printed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=2
STEP_SECS=2
MSTP_EXCHANGES=40
if [ "${1:-}" = "--quick" ]; then
    ROUNDS=1
    STEP_SECS=1
    MSTP_EXCHANGES=10
fi
OUT=${OUT:-docs/benchmarks}
RAW=${RAW:-$(mktemp -d -t trellis-bench-XXXXXX)}
mkdir -p "$RAW" "$OUT"

bash .ci/setup

echo "==> cargo build --release (trellis, stress-test)"
cargo build --release --locked -p trellis -p trellis-benches
STRESS=target/release/stress-test

# Run one scenario: its JSON lines into $RAW/NAME.jsonl and the command line,
# as typed, into $RAW/NAME.cmd (the report names it beside every figure).
run() {
    local name=$1
    shift
    echo "==> $*"
    echo "$*" > "$RAW/$name.cmd"
    "$@" > "$RAW/$name.jsonl"
}

run clients $STRESS clients --target all --rounds $ROUNDS --step-secs $STEP_SECS
run mstp $STRESS mstp --exchanges $MSTP_EXCHANGES --step-secs $STEP_SECS

PEERS=$(.venv-peers/bin/pip freeze 2>/dev/null | grep -i -E '^(bacpypes3|rusty-bacnet|rusty_bacnet)==' | paste -sd ' ' - || true)
printf '{"peers": "%s"}\n' "${PEERS:-unknown}" > "$RAW/machine.json"

echo "==> report into $OUT"
$STRESS report --input "$RAW" --out "$OUT"
echo "raw results: $RAW"
