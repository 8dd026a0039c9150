"""The package's examples (python/examples), run as a user runs them,
against gateways served from this process."""

from __future__ import annotations

import asyncio
import csv
import io
import pathlib
import sys

import trellis
from conftest import Served, free_udp_port

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


async def run(script: str, *args: str, timeout: float = 120) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / script),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_point_table_lists_the_demo_buildings_points(served: Served) -> None:
    out = await run("point_table.py", "--bind", "127.0.0.1", "--target", served.address, "--timeout", "1")
    assert f"device {served.instance} at {served.address}: 11 points" in out
    assert any("analog-value,1" in line and "Zone Setpoint" in line and "degrees-celsius" in line for line in out.splitlines())


async def test_cov_to_csv_logs_a_change(client: trellis.Client, served: Served) -> None:
    logging = asyncio.get_running_loop().create_task(
        run("cov_to_csv.py", served.address, "analog-value,1", "--confirmed", "--seconds", "4")
    )
    await asyncio.sleep(2.0)
    await client.write(served.address, "analog-value,1", "present-value", 27.5, priority=8)
    out = await logging
    await client.write(served.address, "analog-value,1", "present-value", None, priority=8)
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["time", "device", "object", "property", "value"]
    values = [r[4] for r in rows[1:] if r[3] == "present-value"]
    assert "27.5" in values, rows
    # The subscription was cancelled when the script's time was up.
    assert served.gateway.counters()["cov"][0]["subscriptions"] == []


async def test_bulk_read_reads_a_thousand_points() -> None:
    port = free_udp_port()
    async with await trellis.serve(plugin="bulk-objects", bind="127.0.0.1", port=port, device_id=389601):
        out = await run("bulk_read.py", f"127.0.0.1:{port}", "--count", "1000")
    assert "1000 points by ReadPropertyMultiple (20 requests of 50)" in out and ", 0 failed" in out
    assert "1000 points by ReadProperty, all at once" in out
    assert out.count(" 0 failed") == 2
