#!/usr/bin/env bash
# What a gateway build costs on an edge box (issue 21): its file size, how
# long it takes to serve the demo device with an empty plugin cache (the
# plugin compiled to native code on the spot) and with a warm one, and its
# resident memory serving the device after 1,000 ReadProperty requests.
# Run it on a native build and on a cross build under qemu-user, side by
# side in one session (benches/README.md, "Edge builds"):
#
#   benches/edge.sh target/edge/trellis
#   benches/edge.sh target/aarch64-unknown-linux-gnu/edge/trellis qemu-aarch64 -L /usr/aarch64-linux-gnu
#
# Prints one line. Under qemu the resident memory includes the emulator's
# own (its translated code cache: tens of MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
BINARY=$1
shift
NATIVE=${TRELLIS_NATIVE:-target/debug/trellis}
SCRATCH=$(mktemp -d)
mkdir -m 700 "$SCRATCH/admin"
trap 'if [ -n "$GATEWAY" ]; then kill "$GATEWAY" 2>/dev/null || true; fi; rm -rf "$SCRATCH"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '[[device]]\nport = %s\ndeadline_ms = 5000\n\n[http]\nbind = "off"\n' "$PORT" >"$SCRATCH/edge.toml"

# serve: start, wait for "serving"; ELAPSED is the seconds it took.
GATEWAY=
serve() {
    local log=$SCRATCH/gateway.log started
    started=$(date +%s.%N)
    XDG_CACHE_HOME=$SCRATCH/cache TRELLIS_ADMIN_SOCKET=$SCRATCH/admin/admin.sock \
        "$@" "$BINARY" run --config "$SCRATCH/edge.toml" >"$log" 2>&1 &
    GATEWAY=$!
    for _ in $(seq 1 1200); do
        grep -q "trellis: serving" "$log" && break
        kill -0 "$GATEWAY" 2>/dev/null || { cat "$log" >&2; exit 1; }
        sleep 0.1
    done
    ELAPSED=$(python3 -c "print(f'{$(date +%s.%N) - $started:.2f}')")
}
stop() {
    kill "$GATEWAY" && wait "$GATEWAY" 2>/dev/null || true
}

serve "$@"
COLD=$ELAPSED
stop
serve "$@"
WARM=$ELAPSED
for _ in $(seq 1 10); do
    "$NATIVE" --port 0 readm "127.0.0.1:$PORT" analog-value,1 present-value object-name units >/dev/null
done
python3 - "$PORT" <<'PY'
import socket, sys
# 1,000 ReadProperty analog-value,1 present-value, one at a time.
port = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
for i in range(1000):
    apdu = bytes([0x00, 0x05, i % 256, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55])
    npdu = bytes([0x01, 0x04]) + apdu
    s.sendto(bytes([0x81, 0x0A, 0x00, 4 + len(npdu)]) + npdu, ("127.0.0.1", port))
    s.recvfrom(1500)
PY
RSS=$(awk '/VmRSS/ {print $2}' "/proc/$GATEWAY/status")
stop
SIZE=$(stat -c %s "$BINARY")
printf '%s: %.1f MB; serving after %s s with an empty plugin cache, %s s with a warm one; %.1f MiB resident after 1,000 reads%s\n' \
    "$BINARY" "$(python3 -c "print($SIZE / 1e6)")" "$COLD" "$WARM" "$(python3 -c "print($RSS / 1024)")" \
    "${1:+ (under $1)}"
