"""Bulk-read 1,000 points from one device, two ways, and say how long each took:
ReadPropertyMultiple in batches, and one ReadProperty per point all at once.

    python bulk_read.py 10.0.0.5 --type analog-input --count 1000
"""

from __future__ import annotations

import argparse
import asyncio
import time

import trellis


async def main(device: str, object_type: str, count: int, batch: int) -> None:
    objects = [f"{object_type},{i}" for i in range(1, count + 1)]
    async with trellis.Client(timeout=5.0) as client:
        started = time.perf_counter()
        values: dict[str, object] = {}
        batches = [objects[i : i + batch] for i in range(0, len(objects), batch)]
        results = await asyncio.gather(*(client.read_multiple(device, {o: "present-value" for o in b}) for b in batches))
        for result in results:
            values.update({o: props["present-value"] for o, props in result.items()})
        rpm = time.perf_counter() - started

        started = time.perf_counter()
        singles = await asyncio.gather(
            *(client.read(device, o, "present-value") for o in objects), return_exceptions=True
        )
        rp = time.perf_counter() - started

    failed = sum(isinstance(v, BaseException) for v in values.values())
    print(f"{len(values)} points by ReadPropertyMultiple ({len(batches)} requests of {batch}): {rpm * 1e3:.1f} ms, {failed} failed")
    failed = sum(isinstance(v, BaseException) for v in singles)
    print(f"{len(singles)} points by ReadProperty, all at once: {rp * 1e3:.1f} ms, {failed} failed")
    first = objects[0]
    print(f"{first} = {values[first]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("device", help="the device's address, IP[:PORT]")
    parser.add_argument("--type", default="analog-input", help="object type to read (default analog-input)")
    parser.add_argument("--count", type=int, default=1000, help="objects 1..COUNT (default 1000)")
    parser.add_argument("--batch", type=int, default=50, help="objects per ReadPropertyMultiple (default 50)")
    args = parser.parse_args()
    asyncio.run(main(args.device, args.type, args.count, args.batch))
