#!/usr/bin/env python3
"""bacpypes3 as a COV subscriber: SubscribeCOV to one object of a device and
print every notification it receives.

Prints one JSON line per reported property as it arrives, e.g.

  {"property": "present-value", "value": 21.5}
  {"property": "status-flags", "value": [0, 0, 0, 0]}

and exits 0 after --count Present_Value notifications (the initial one
included), or 1 after --timeout seconds without them. The subscription is
cancelled on exit (bacpypes3's context manager does it).

Usage:  .venv-peers/bin/python host/tests/peers/bacpypes3_cov_client.py \
          --target 127.0.0.1:47808 --device 389001 --port 47901 \
          --object analog-value,1 --count 4 [--confirmed] [--lifetime 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys


def plain(value):
    """A JSON-friendly form of a bacpypes3 value."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    try:
        return [int(b) for b in value]  # bit strings
    except TypeError:
        return str(value)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--device", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--object", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--confirmed", action="store_true")
    parser.add_argument("--lifetime", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()

    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import ObjectIdentifier

    bp_args = SimpleArgumentParser().parse_args(
        ["--address", f"127.0.0.1/8:{args.port}", "--instance", "597", "--name", "trellis-cov-client"]
    )
    app = Application.from_args(bp_args)
    await asyncio.sleep(0.3)
    target = Address(args.target)
    seen = 0
    try:
        await app.who_is(args.device, args.device, address=target, timeout=5)
        async with app.change_of_value(
            target, ObjectIdentifier(args.object), None, args.confirmed, args.lifetime
        ) as scm:
            print(json.dumps({"subscribed": True}), flush=True)
            while seen < args.count:
                prop, value = await asyncio.wait_for(scm.get_value(), timeout=args.timeout)
                print(json.dumps({"property": str(prop), "value": plain(value)}), flush=True)
                if str(prop) == "present-value":
                    seen += 1
    except BaseException as exc:  # bacpypes3's Abort/Error PDUs are BaseExceptions
        print(json.dumps({"error": repr(exc)}), flush=True)
    finally:
        app.close()
    return 0 if seen >= args.count else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
