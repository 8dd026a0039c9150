"""Clients and gateways start and stop cleanly: no thread or socket left
behind, a gateway serves without the GIL, hot swaps, and counts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

import pytest

import trellis
from conftest import PLUGINS, free_udp_port, sockets_open, threads_running


async def test_closing_a_client_releases_its_port_and_tasks() -> None:
    port = free_udp_port()

    async def use_and_close() -> None:
        # The same port each time: binding it again proves it was closed.
        async with trellis.Client("127.0.0.1", port, timeout=0.2, retries=0) as c:
            assert c.local_address == f"127.0.0.1:{port}"
            reading = asyncio.get_running_loop().create_task(c.read(f"127.0.0.1:{free_udp_port()}", "analog-value,1"))
            await asyncio.sleep(0.05)
            reading.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reading

    # Once first, so that the shared runtime's threads are in the baseline.
    await use_and_close()
    sockets, threads = sockets_open(), threads_running()
    for _ in range(10):
        await use_and_close()
    assert sockets_open() == sockets
    # The shared runtime's blocking pool may have started one more thread on
    # demand (idle ones end after 10 s); a client that leaked its own would
    # show ten.
    assert threads_running() <= threads + 1
    closed = trellis.Client("127.0.0.1", 0)
    await closed.open()
    closed.close()
    with pytest.raises(RuntimeError, match="not open"):
        await closed.read("127.0.0.1", "analog-value,1")


async def test_a_stopped_gateway_leaves_no_thread_or_socket() -> None:
    port = free_udp_port()

    async def serve_and_stop() -> None:
        threads = threads_running()
        gateway = await trellis.serve(plugin="demo-building", bind="127.0.0.1", port=port, device_id=389201, http="127.0.0.1:0")
        assert gateway.running and gateway.devices == [389201]
        assert gateway.console_url is not None and gateway.console_url.startswith("http://127.0.0.1:")
        assert threads_running() > threads, "the gateway runs on threads of its own"
        await gateway.stop()
        assert not gateway.running

    # Once first: tokio's process-wide signal pipe is made by the first runtime.
    await serve_and_stop()
    sockets, threads = sockets_open(), threads_running()
    for _ in range(3):
        await serve_and_stop()
    assert sockets_open() == sockets
    assert threads_running() <= threads + 1


async def test_a_gateway_from_a_configuration_hot_swaps_and_counts(tmp_path: object) -> None:
    ports = [free_udp_port(), free_udp_port()]
    config = textwrap.dedent(
        f"""
        [policy]
        allow_unsigned = true

        [[device]]
        bind = "127.0.0.1"
        port = {ports[0]}
        instance = 389301
        plugin = "builtin:demo-building"
        password = "secret"

        [[device]]
        bind = "127.0.0.1"
        port = {ports[1]}
        instance = 389302
        plugin = "builtin:bulk-objects"
        password = "secret"
        """
    )
    async with await trellis.serve(config) as gateway:
        assert sorted(gateway.devices) == [389301, 389302]
        async with trellis.Client("127.0.0.1", 0, timeout=2.0) as c:
            at = f"127.0.0.1:{ports[1]}"
            objects = await c.read(at, "device,389302", "object-list")
            with pytest.raises(trellis.DeviceError) as e:
                await c.reinitialize(at, "warmstart", password="wrong")
            assert e.value.error_code == "password-failure"
            swapped = await gateway.swap(389302, PLUGINS / "bulk_objects.wasm")
            assert swapped["device"] == 389302 and swapped["plugin"].startswith("bulk-objects")
            assert swapped["pause_us"] >= 0 and swapped["load_ms"] > 0
            assert await c.read(at, "device,389302", "object-list") == objects
            # A plugin whose state does not fit is refused; the old one serves on.
            with pytest.raises(RuntimeError, match="swap refused, old plugin kept"):
                await gateway.swap(389302, PLUGINS / "demo_building.wasm")
            assert await c.read(at, "device,389302", "object-list") == objects
            status = await gateway.status()
            plugins = {d["device"]: d["plugin"] for d in status["devices"]}
            assert plugins[389301].startswith("demo-building") and plugins[389302].startswith("bulk-objects")
            with pytest.raises(RuntimeError, match="no device 1 "):
                await gateway.swap(1, PLUGINS / "bulk_objects.wasm")
        counters = gateway.counters()
        ports_seen = {p["device"]: p["counters"] for p in counters["ports"]}
        assert ports_seen[389302]["datagrams_received"] >= 3
        assert counters["devices"]["389302"]["aborted"] == 0


async def test_a_gateway_that_cannot_start_says_why() -> None:
    taken = free_udp_port()
    first = await trellis.serve(plugin="demo-building", bind="127.0.0.1", port=taken, device_id=389401)
    try:
        with pytest.raises(RuntimeError, match="did not start"):
            await trellis.serve(plugin="demo-building", bind="127.0.0.1", port=taken, device_id=389402)
    finally:
        await first.stop()
    with pytest.raises(RuntimeError, match="no-such-plugin"):
        await trellis.serve(plugin="no-such-plugin", bind="127.0.0.1", port=free_udp_port())


def test_the_gateway_serves_while_python_holds_the_gil() -> None:
    port = free_udp_port()

    async def start() -> trellis.Gateway:
        return await trellis.serve(plugin="demo-building", bind="127.0.0.1", port=port, device_id=389501)

    gateway = asyncio.run(start())
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, trellis\n"
            "async def main():\n"
            "    async with trellis.Client('127.0.0.1', 0, timeout=1.0, retries=0) as c:\n"
            f"        print(await c.read('127.0.0.1:{port}', 'analog-value,1', 'object-name'))\n"
            "asyncio.run(main())\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    # Pure Python work that never releases the GIL until the reader is done.
    deadline = time.monotonic() + 30
    spins = 0
    while reader.poll() is None and time.monotonic() < deadline:
        spins += 1
    out, _ = reader.communicate(timeout=10)
    assert out.strip() == "Zone Setpoint" and spins > 0
    gateway.stop_blocking()
    assert not gateway.running


def test_a_forked_child_is_refused() -> None:
    code = (
        "import asyncio, os, trellis\n"
        "async def main():\n"
        "    async with trellis.Client('127.0.0.1', 0):\n"
        "        pass\n"
        "asyncio.run(main())\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        asyncio.run(main())\n"
        "    except RuntimeError as e:\n"
        "        print('refused' if 'forked' in str(e) else e, flush=True)\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "refused", out.stderr
