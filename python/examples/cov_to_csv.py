"""Log change-of-value notifications to CSV: one row per notification and
property, until Ctrl-C (or --seconds).

    python cov_to_csv.py 10.0.0.5 analog-input,1 binary-value,2 > cov.csv
    python cov_to_csv.py 10.0.0.5:47808 analog-value,1 --confirmed --lifetime 600 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import sys
from typing import Any

import trellis


def cell(value: Any) -> str:
    if isinstance(value, dict):
        return ";".join(k for k, on in value.items() if on)  # named flags that are set
    return str(value)


async def follow(client: trellis.Client, device: str, obj: str, confirmed: bool, lifetime: int, out: Any) -> None:
    async with client.subscribe_cov(device, obj, confirmed=confirmed, lifetime=lifetime) as subscription:
        async for n in subscription:
            now = dt.datetime.now().isoformat(timespec="milliseconds")
            for prop, value in n.values.items():
                out.writerow([now, n.device, str(n.object), prop, cell(value)])
            sys.stdout.flush()


async def main(device: str, objects: list[str], confirmed: bool, lifetime: int, seconds: float | None) -> None:
    out = csv.writer(sys.stdout)
    out.writerow(["time", "device", "object", "property", "value"])
    sys.stdout.flush()
    async with trellis.Client() as client:
        followers = [follow(client, device, o, confirmed, lifetime, out) for o in objects]
        try:
            # Leaving the block cancels the tasks, which cancels each subscription at the device.
            await asyncio.wait_for(asyncio.gather(*followers), seconds)
        except asyncio.TimeoutError:
            pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("device", help="the device's address, IP[:PORT]")
    parser.add_argument("objects", nargs="+", help="objects to follow, e.g. analog-input,1")
    parser.add_argument("--confirmed", action="store_true", help="ask for confirmed notifications")
    parser.add_argument("--lifetime", type=int, default=300, help="subscription lifetime in seconds, renewed at half")
    parser.add_argument("--seconds", type=float, help="stop after this long (default: until Ctrl-C)")
    args = parser.parse_args()
    try:
        asyncio.run(main(args.device, args.objects, args.confirmed, args.lifetime, args.seconds))
    except KeyboardInterrupt:
        pass
