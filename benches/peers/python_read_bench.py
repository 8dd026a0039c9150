#!/usr/bin/env python3
"""ReadProperty from a Python BACnet client, as fast as it goes: the
`python` scenario's client side (benches/src/scenario/python.rs).

One client of the chosen library reads analog-input,1 present-value from
TARGET with TASKS asyncio tasks, each awaiting one read at a time, for
--warmup then --seconds; prints one JSON line: reads completed, reads per
second, latency percentiles (µs), failures and the process's CPU seconds.
Every library's values are converted to a plain float, as a caller would
use them.

    python_read_bench.py --lib trellis|rusty|bacpypes3 --target 127.0.0.1:47808 --tasks 32 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import time
from typing import Awaitable, Callable


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def drive(read: Callable[[], Awaitable[float]], tasks: int, warmup: float, seconds: float) -> dict[str, object]:
    latencies: list[float] = []
    failures = 0
    measuring = False
    stop = False

    async def worker() -> None:
        nonlocal failures
        while not stop:
            started = time.perf_counter()
            try:
                value = await read()
                assert isinstance(value, float)
            except Exception:
                if measuring:
                    failures += 1
                continue
            if measuring:
                latencies.append(time.perf_counter() - started)

    workers = [asyncio.get_running_loop().create_task(worker()) for _ in range(tasks)]
    await asyncio.sleep(warmup)
    measuring = True
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    await asyncio.sleep(seconds)
    measuring = False
    elapsed, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    stop = True
    await asyncio.gather(*workers, return_exceptions=True)
    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e6, 1) if latencies else 0.0

    return {
        "reads": len(latencies),
        "reads_per_sec": round(len(latencies) / elapsed, 1),
        "p50_us": pct(0.50),
        "p99_us": pct(0.99),
        "failures": failures,
        "client_cpu_s": round(cpu, 3),
        "cpu_us_per_read": round(cpu / max(1, len(latencies)) * 1e6, 2),
    }


async def with_trellis(target: str, run: Callable[[Callable[[], Awaitable[float]]], Awaitable[dict[str, object]]]) -> dict[str, object]:
    import trellis

    async with trellis.Client("127.0.0.1", 0, timeout=5.0) as c:

        async def read() -> float:
            return float(await c.read(target, "analog-input,1", "present-value"))

        return await run(read)


async def with_rusty(target: str, run: Callable[[Callable[[], Awaitable[float]]], Awaitable[dict[str, object]]]) -> dict[str, object]:
    from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier

    oid = ObjectIdentifier(ObjectType.ANALOG_INPUT, 1)
    pid = PropertyIdentifier.PRESENT_VALUE
    async with BACnetClient(
        interface="127.0.0.1", port=free_port(), broadcast_address="127.255.255.255", apdu_timeout_ms=5000,
        share_port_by_address=True,  # bind 127.0.0.1 itself, not 0.0.0.0 (needs a nonzero port)
    ) as c:

        async def read() -> float:
            return float((await c.read_property(target, oid, pid)).value)

        return await run(read)


async def with_bacpypes3(target: str, run: Callable[[Callable[[], Awaitable[float]]], Awaitable[dict[str, object]]]) -> dict[str, object]:
    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import ObjectIdentifier, PropertyIdentifier

    port = free_port()
    app = Application.from_args(
        SimpleArgumentParser().parse_args(["--address", f"127.0.0.1/8:{port}", "--instance", "4194", "--name", "bench"])
    )
    await asyncio.sleep(0.3)
    address, oid, pid = Address(target), ObjectIdentifier("analog-input,1"), PropertyIdentifier("present-value")
    try:

        async def read() -> float:
            return float(await app.read_property(address, oid, pid))

        return await run(read)
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", choices=["trellis", "rusty", "bacpypes3"], required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--tasks", type=int, default=1)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    libs = {"trellis": with_trellis, "rusty": with_rusty, "bacpypes3": with_bacpypes3}

    async def go() -> dict[str, object]:
        return await libs[args.lib](args.target, lambda read: drive(read, args.tasks, args.warmup, args.seconds))

    result = asyncio.run(go())
    print(json.dumps({"lib": args.lib, "tasks": args.tasks, "pid": os.getpid(), **result}), flush=True)


if __name__ == "__main__":
    main()
