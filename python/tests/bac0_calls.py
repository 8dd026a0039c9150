"""BAC0's everyday calls on a list of devices, printed as JSON lines: the
side that test_bac0.py compares with the trellis equivalents in the
package README. Usage: bac0_calls.py PORT DEVICE_ADDRESS..."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import BAC0  # type: ignore[import-untyped]


def plain(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return str(v)


async def main(port: int, devices: list[str]) -> None:
    BAC0.log_level("silence")
    async with BAC0.lite(ip="127.0.0.1/24", port=port) as bacnet:
        for address in devices:
            found = await bacnet.who_is(address=address)
            row = {
                "address": address,
                "who_is": [int(i_am.iAmDeviceIdentifier[1]) for i_am in found],
                "read": plain(await bacnet.read(f"{address} analogValue 1 presentValue")),
                "read_name": plain(await bacnet.read(f"{address} analogValue 1 objectName")),
                "read_index": plain(await bacnet.read(f"{address} analogValue 1 priorityArray 0")),
                "read_multiple": plain(await bacnet.readMultiple(f"{address} analogValue 1 presentValue units objectName")),
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2:]))
