#!/usr/bin/env python3
"""rusty-bacnet on BACnet/SC, for Trellis's SC interop tests.

  hub    --bind 127.0.0.1:PORT --pki DIR     rusty's ScHub with DIR/hub.pem, hub.key, ca.pem;
                                             prints READY, then once a second "clients N"
  server --hub wss://... --pki DIR --node N  a rusty SC server device (instance 4100+N, AI 1)
                                             with DIR/nodeN.pem/.key; prints READY once started
  client --hub wss://... --pki DIR --node N --device I [--read OBJECT:PROPERTY ...]
                                             a rusty SC client with DIR/nodeN.pem/.key: Who-Is for
                                             device I, then ReadProperty from the VMAC its I-Am
                                             came from; one JSON line per step, exit 0 if all passed

hub and server run until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

import json

from rusty_bacnet import BACnetClient, BACnetServer, ObjectIdentifier, ObjectType, PropertyIdentifier, ScHub


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


def step(name: str, ok: bool, **detail) -> bool:
    print(json.dumps({"step": name, "ok": ok, **detail}), flush=True)
    return ok


async def client(args: argparse.Namespace) -> int:
    n = args.node
    ok = True
    async with BACnetClient(
        transport="sc",
        sc_hub=args.hub,
        sc_vmac=bytes([2, 0x52, 0x43, 0x4C, 0, n]),
        sc_ca_cert=f"{args.pki}/ca.pem",
        sc_client_cert=f"{args.pki}/node{n}.pem",
        sc_client_key=f"{args.pki}/node{n}.key",
        sc_device_uuid=bytes([0x43, n] * 8),
        apdu_timeout_ms=5000,
    ) as c:
        found = await c.discover(3000, args.device, args.device)
        macs = [bytes(d.mac_address).hex() for d in found if d.object_identifier.instance == args.device]
        ok &= step("who-is", len(macs) == 1, macs=macs)
        if not macs:
            return 1
        address = ":".join(macs[0][i:i + 2] for i in range(0, 12, 2))
        for spec in args.read:
            obj, prop = spec.split(":")
            kind, instance = obj.split(",")
            try:
                value = await c.read_property(
                    address,
                    ObjectIdentifier(getattr(ObjectType, kind.upper().replace("-", "_")), int(instance)),
                    getattr(PropertyIdentifier, prop.upper().replace("-", "_")),
                )
                ok &= step(f"read {spec}", True, tag=str(value.tag), value=repr(value.value))
            except Exception as exc:  # report and go on
                ok &= step(f"read {spec}", False, error=repr(exc))
    return 0 if ok else 1


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
    c = sub.add_parser("client")
    c.add_argument("--hub", required=True)
    c.add_argument("--pki", required=True)
    c.add_argument("--node", type=int, required=True)
    c.add_argument("--device", type=int, required=True)
    c.add_argument("--read", action="append", default=[], metavar="OBJECT:PROPERTY")
    args = parser.parse_args()
    mode = {"hub": hub, "server": server, "client": client}[args.mode]
    return asyncio.run(mode(args))


if __name__ == "__main__":
    sys.exit(main())
