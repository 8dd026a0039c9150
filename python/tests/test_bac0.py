"""BAC0's usage patterns and their trellis equivalents (the table in the
package README) give the same answers, on our device and on bacpypes3's."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sys
from typing import Any

import trellis
from conftest import Peer, Served, free_udp_port

BAC0_CALLS = pathlib.Path(__file__).resolve().parent / "bac0_calls.py"


async def test_bac0_calls_and_their_trellis_equivalents_agree(
    client: trellis.Client, served: Served, bacpypes3_server: Peer
) -> None:
    devices = [served.address, bacpypes3_server.address]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(BAC0_CALLS),
        str(free_udp_port()),
        *devices,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-2000:]
    bac0 = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    assert [row["address"] for row in bac0] == devices

    for row in bac0:
        address = row["address"]
        # bacnet.who_is(address=...)                → client.who_is(target=...)
        assert [d.instance for d in await client.who_is(target=address, timeout=1.0)] == row["who_is"]
        # bacnet.read("ADDR analogValue 1 presentValue") → client.read(ADDR, "analog-value,1", "present-value")
        assert await client.read(address, "analog-value,1", "present-value") == row["read"]
        assert await client.read(address, ("analogValue", 1), "objectName") == row["read_name"]
        # "... priorityArray 0" (an array index)      → index=0
        assert await client.read(address, "analog-value,1", "priority-array", index=0) == row["read_index"]
        # bacnet.readMultiple("ADDR analogValue 1 presentValue units objectName")
        #   → client.read_multiple(ADDR, {"analog-value,1": ["present-value", "units", "object-name"]})
        values: dict[str, Any] = (
            await client.read_multiple(address, {"analog-value,1": ["present-value", "units", "object-name"]})
        )["analog-value,1"]
        assert [values["present-value"], values["units"], values["object-name"]] == row["read_multiple"]
