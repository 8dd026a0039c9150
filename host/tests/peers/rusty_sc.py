#!/usr/bin/env python3
"""rusty-bacnet on BACnet/SC, for Trellis's SC interop tests.

  hub    --bind 127.0.0.1:PORT --pki DIR     rusty's ScHub with DIR/hub.pem, hub.key, ca.pem;
                                             prints READY, then once a second "clients N"
  server --hub wss://... --pki DIR --node N  a rusty SC server device (instance 4100+N, AI 1)
                                             with DIR/nodeN.pem/.key; prints READY once started

Both run until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from rusty_bacnet import BACnetServer, ScHub


async def stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def hub(args: argparse.Namespace) -> int:
    h = ScHub(args.bind, f"{args.pki}/hub.pem", f"{args.pki}/hub.key", bytes([2, 0x48, 0x55, 0x42, 0, 1]),
              ca_cert=f"{args.pki}/ca.pem", device_uuid=bytes([0x48] * 16))
    await h.start()
    print("READY", await h.url(), flush=True)
    done = asyncio.ensure_future(stopped())
    while not done.done():
        status = await h.status()
        print("clients", status["client_count"], flush=True)
        await asyncio.wait([done], timeout=0.2)
    await h.shutdown_gracefully()
    return 0


async def server(args: argparse.Namespace) -> int:
    n = args.node
    s = BACnetServer(
        device_instance=4100 + n,
        device_name=f"RustySc-{n}",
        transport="sc",
        sc_hub=args.hub,
        sc_vmac=bytes([2, 0x52, 0x55, 0x53, 0, n]),
        sc_ca_cert=f"{args.pki}/ca.pem",
        sc_client_cert=f"{args.pki}/node{n}.pem",
        sc_client_key=f"{args.pki}/node{n}.key",
        sc_device_uuid=bytes([0x52, n] * 8),
    )
    s.add_analog_input(1, "Zone Temp", units=62, present_value=21.5)
    await s.start()
    print("READY", flush=True)
    await stopped()
    await s.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    h = sub.add_parser("hub")
    h.add_argument("--bind", required=True)
    h.add_argument("--pki", required=True)
    s = sub.add_parser("server")
    s.add_argument("--hub", required=True)
    s.add_argument("--pki", required=True)
    s.add_argument("--node", type=int, required=True)
    args = parser.parse_args()
    return asyncio.run(hub(args) if args.mode == "hub" else server(args))


if __name__ == "__main__":
    sys.exit(main())
