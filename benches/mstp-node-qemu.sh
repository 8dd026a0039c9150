#!/usr/bin/env bash
# The MS/TP node image on QEMU's mps2-an386 beside a gateway, in real time:
# `trellis sim-line` (2 stations, 38,400 baud, a capture), the gateway of
# examples/mstp-node.toml on station 0, the image (station 5) on station 1;
# READS ReadProperty requests from our CLI through the router; then the
# node's reply delay (end of a request to it, to the start of its answer)
# and usage delay (end of a Token or Poll For Master to it, to its first
# octet) read off the line's capture with tshark.
#
# Usage: bash benches/mstp-node-qemu.sh [READS]   (after `cargo build -p trellis`)
# What it measures is QEMU's and the pty relay's scheduling on this machine
# as much as the node: QEMU's UART ignores the baud rate.
set -euo pipefail
cd "$(dirname "$0")/.."
READS="${1:-30}"
ROOT=$PWD
TRELLIS=$ROOT/target/debug/trellis
(cd transports/mstp-node/firmware && cargo build --release --locked --quiet)
IMAGE=$ROOT/transports/mstp-node/firmware/target/thumbv7em-none-eabihf/release/mstp-node
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$TRELLIS" sim-line --baud 38400 --stations 2 --capture "$WORK/line.pcap" >"$WORK/stations" 2>"$WORK/sim-line.log" &
LINE=$!
PIDS+=("$LINE")
for _ in $(seq 50); do [ "$(wc -l <"$WORK/stations")" -ge 2 ] && break; sleep 0.1; done
P0=$(sed -n 's/^station 0: //p' "$WORK/stations")
P1=$(sed -n 's/^station 1: //p' "$WORK/stations")
PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed "s|/dev/ttyUSB0|$P0|; s|47808|$PORT|" examples/mstp-node.toml >"$WORK/gateway.toml"
XDG_CACHE_HOME=$WORK TRELLIS_ADMIN_SOCKET=$WORK/admin.sock "$TRELLIS" run --config "$WORK/gateway.toml" >"$WORK/gateway.log" 2>&1 &
PIDS+=("$!")
qemu-system-arm -machine mps2-an386 -display none -monitor none -serial "$P1" -kernel "$IMAGE" >"$WORK/qemu.log" 2>&1 &
PIDS+=("$!")
sleep 8 # the node polls every address before the ring has formed
fails=0
for _ in $(seq "$READS"); do
    "$TRELLIS" --port 0 --timeout-ms 3000 --retries 0 read "127.0.0.1:$PORT@2:05" analog-value,1 present-value >/dev/null \
        || fails=$((fails + 1))
done
echo "reads: $READS, unanswered: $fails"
kill -TERM "$LINE"
wait "$LINE" || true
tail -1 "$WORK/sim-line.log"
tshark -r "$WORK/line.pcap" -T fields -e frame.time_epoch -e frame.len -e mstp.frame_type -e mstp.src -e mstp.dst \
    2>/dev/null | python3 -c '
import statistics, sys
rows = [l.split("\t") for l in sys.stdin.read().splitlines()]
rows = [(float(t), int(n), int(ft), int(s), int(d)) for t, n, ft, s, d in rows if "" not in (t, n, ft, s, d)]
bit = 1e6 / 38400
reply, usage = [], []
for a, b in zip(rows, rows[1:]):
    gap = b[0] * 1e6 - (a[0] * 1e6 + a[1] * 10 * bit)
    if a[2] == 5 and a[4] == 5 and b[3] == 5:
        reply.append(gap)
    if a[2] in (0, 1) and a[4] == 5 and b[3] == 5:
        usage.append(gap)
for name, v in (("reply delay", reply), ("usage delay", usage)):
    v.sort()
    print(f"{name}: {len(v)} samples, min {v[0]:.0f} µs, p50 {statistics.median(v):.0f}, p90 {v[int(len(v) * 0.9)]:.0f}, max {v[-1]:.0f}")
'
