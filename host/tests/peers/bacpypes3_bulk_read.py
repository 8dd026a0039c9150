#!/usr/bin/env python3
"""bacpypes3 as a client reading many objects in ONE ReadPropertyMultiple.

Asks device --device at --target for `all` properties of analog-input,1 ..
analog-input,N (N = --objects) in a single request, which bacpypes3 sends
with segmented-response-accepted, max-APDU 1024 and (set here) 64 segments:
an answer of that size only comes back segmented. Prints one JSON line and exits 0 when the read
succeeded, 1 otherwise:

  {"ok": true, "objects": 250, "results": 3000, "present_values": 250,
   "names": 250, "error": null}

Usage:  .venv-peers/bin/python host/tests/peers/bacpypes3_bulk_read.py \
          --target 127.0.0.1:47808 --device 389002 --port 47900 --objects 250
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="IP:PORT of the device (loopback)")
    parser.add_argument("--device", type=int, required=True)
    parser.add_argument("--port", type=int, required=True, help="this client's own UDP port")
    parser.add_argument("--objects", type=int, required=True)
    args = parser.parse_args()

    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import ObjectIdentifier, PropertyIdentifier

    bp_args = SimpleArgumentParser().parse_args(
        ["--address", f"127.0.0.1/8:{args.port}", "--instance", "598", "--name", "trellis-bulk-read"]
    )
    app = Application.from_args(bp_args)
    # bacpypes3's own device accepts 16 segments by default (16 × 1019
    # octets), too few for this answer: accept 64, as a front end would be
    # configured to for large devices.
    app.device_object.maxSegmentsAccepted = 64
    await asyncio.sleep(0.3)  # let the sockets bind
    target = Address(args.target)
    summary = {"ok": False, "objects": args.objects, "results": 0, "present_values": 0, "names": 0, "error": None}
    try:
        # Learn the device (max-APDU, segmentation) the way a front end does.
        await app.who_is(args.device, args.device, address=target, timeout=5)
        specs = []
        for i in range(1, args.objects + 1):
            specs.extend([ObjectIdentifier(f"analog-input,{i}"), [PropertyIdentifier("all")]])
        results = await asyncio.wait_for(app.read_property_multiple(target, specs), timeout=60)
        summary["results"] = len(results)
        for obj, prop, _index, value in results:
            if str(prop) == "present-value" and isinstance(value, float):
                summary["present_values"] += 1
            if str(prop) == "object-name" and str(value).startswith("Bulk AI "):
                summary["names"] += 1
        summary["ok"] = True
    except BaseException as exc:  # bacpypes3's Abort/Error PDUs are BaseExceptions
        summary["error"] = repr(exc)
    finally:
        app.close()
    print(json.dumps(summary), flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
