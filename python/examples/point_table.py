"""Discover a BACnet network and print a point table: every object of every
device that answers, with its name, present value and units.

    python point_table.py                        # broadcast Who-Is on this host's networks
    python point_table.py --target 10.0.0.5      # one device
    python point_table.py --bind 192.168.1.20/24 # the interface (and broadcast) to use
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import trellis

POINT_TYPES = {
    "analog-input",
    "analog-output",
    "analog-value",
    "binary-input",
    "binary-output",
    "binary-value",
    "multi-state-input",
    "multi-state-output",
    "multi-state-value",
}


def shown(value: Any) -> str:
    if isinstance(value, trellis.BACnetError):
        return f"({value.error_code})" if isinstance(value, trellis.DeviceError) else "(error)"
    if isinstance(value, float):
        return f"{value:.2f}"
    return "" if value is None else str(value)


async def main(bind: str, target: str | None, timeout: float) -> None:
    async with trellis.Client(bind) as client:
        devices = await client.discover(target=target, timeout=timeout)
        for device in sorted(devices, key=lambda d: d["device"]):
            points = [o["object"] for o in device["objects"] if o["object_type"] in POINT_TYPES]
            print(f"device {device['device']} at {device['address']}: {len(points)} points")
            if not points:
                continue
            # 20 objects per ReadPropertyMultiple keeps each answer in one APDU.
            rows: dict[str, dict[str, Any]] = {}
            for start in range(0, len(points), 20):
                request = {p: ["object-name", "present-value", "units"] for p in points[start : start + 20]}
                rows.update(await client.read_multiple(device["address"], request))
            print(f"  {'object':<24} {'name':<32} {'value':>10}  units")
            for point in points:
                row = rows.get(point, {})
                units = row.get("units")
                print(
                    f"  {point:<24} {shown(row.get('object-name')):<32} {shown(row.get('present-value')):>10}"
                    f"  {'' if isinstance(units, trellis.BACnetError) else shown(units)}"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bind", default="0.0.0.0", help="local IPv4 address[/prefix] (default 0.0.0.0)")
    parser.add_argument("--target", help="ask one device (IP[:PORT]) instead of broadcasting")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for I-Am answers")
    args = parser.parse_args()
    asyncio.run(main(args.bind, args.target, args.timeout))
