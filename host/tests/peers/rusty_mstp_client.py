#!/usr/bin/env python3
"""rusty-bacnet as an MS/TP CLIENT station on a serial device (e.g. one end of
a socat pty pair): Who-Is for one device, then ReadProperty of the given
properties from it. One JSON line per step on stdout; exit 0 only if all
steps passed.

Steps: ``who-is`` (``discover`` with the device's instance as both limits;
passes if an I-Am from that instance came from ``--target``'s MAC), then one
``read OBJECT PROPERTY`` per ``--read`` (``analog-value,1:present-value``),
printing ``value``.

Usage:  .venv-peers/bin/python host/tests/peers/rusty_mstp_client.py \\
            --mstp /tmp/ttyA --mac 1 --baud 38400 --max-master 7 \\
            --target 5 --device 510009 --read analog-value,1:present-value
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier


def oid(text: str) -> ObjectIdentifier:
    kind, instance = text.split(",")
    return ObjectIdentifier(getattr(ObjectType, kind.upper().replace("-", "_")), int(instance))


def pid(text: str) -> PropertyIdentifier:
    return getattr(PropertyIdentifier, text.upper().replace("-", "_"))


def step(name: str, ok: bool, **detail) -> bool:
    print(json.dumps({"step": name, "ok": ok, **detail}), flush=True)
    return ok


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mstp", required=True, metavar="PATH")
    parser.add_argument("--mac", type=int, default=1)
    parser.add_argument("--baud", type=int, default=38400)
    parser.add_argument("--max-master", type=int, default=127)
    parser.add_argument("--target", type=int, required=True, help="the device's MS/TP MAC")
    parser.add_argument("--device", type=int, required=True, help="the device's instance")
    parser.add_argument("--read", action="append", default=[], metavar="OBJECT:PROPERTY")
    parser.add_argument("--discover-ms", type=int, default=5000)
    args = parser.parse_args()

    ok = True
    async with BACnetClient(
        transport="mstp", serial_port=args.mstp, mstp_baud=args.baud,
        mstp_mac=args.mac, mstp_max_master=args.max_master, apdu_timeout_ms=5000,
    ) as client:
        found = await client.discover(args.discover_ms, args.device, args.device)
        macs = [bytes(d.mac_address).hex() for d in found if d.object_identifier.instance == args.device]
        ok &= step("who-is", bytes([args.target]).hex() in macs, macs=macs)
        for spec in args.read:
            obj, prop = spec.split(":")
            try:
                value = await client.read_property(str(args.target), oid(obj), pid(prop))
                ok &= step(f"read {spec}", True, tag=str(value.tag), value=repr(value.value))
            except Exception as exc:  # report and go on
                ok &= step(f"read {spec}", False, error=repr(exc))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
