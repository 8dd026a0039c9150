"""Fixtures: a gateway served in this process, and the third-party servers
(bacpypes3, rusty-bacnet) as processes of their own on loopback ports,
stopped by PID when the session ends."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
import pytest_asyncio

import trellis

REPO = pathlib.Path(__file__).resolve().parents[2]
PEERS = REPO / "host" / "tests" / "peers"
PLUGINS = REPO / "target" / "wasm-plugins" / "wasm32-wasip2" / "release"


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Peer:
    """A server process and where it answers."""

    process: subprocess.Popen[str]
    address: str
    instance: int


def start_peer(script: str, *args: str, instance: int) -> Peer:
    port = free_udp_port()
    process = subprocess.Popen(
        [sys.executable, str(PEERS / script), "--port", str(port), "--device-id", str(instance), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if line != "READY":
        process.kill()
        _, err = process.communicate(timeout=10)
        raise RuntimeError(f"{script} did not start: {line!r} {err}")
    return Peer(process, f"127.0.0.1:{port}", instance)


def stop_peer(peer: Peer) -> None:
    peer.process.terminate()
    try:
        peer.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        peer.process.kill()
        peer.process.wait(timeout=10)


@pytest.fixture(scope="session")
def bacpypes3_server() -> Iterator[Peer]:
    peer = start_peer("bacpypes3_server.py", instance=4101)
    yield peer
    stop_peer(peer)


@pytest.fixture(scope="session")
def rusty_server() -> Iterator[Peer]:
    peer = start_peer("rusty_server.py", instance=4201)
    yield peer
    stop_peer(peer)


@dataclass
class Served:
    gateway: trellis.Gateway
    address: str
    instance: int


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def served() -> AsyncIterator[Served]:
    """The demo building served from this process (device 389101)."""
    port = free_udp_port()
    gateway = await trellis.serve(plugin="demo-building", bind="127.0.0.1", port=port, device_id=389101)
    yield Served(gateway, f"127.0.0.1:{port}", 389101)
    await gateway.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def client() -> AsyncIterator[trellis.Client]:
    async with trellis.Client("127.0.0.1", 0, broadcast="127.255.255.255", timeout=2.0, retries=1) as c:
        yield c


def sockets_open() -> int:
    """UDP and TCP sockets this process holds."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


def threads_running() -> int:
    return len(os.listdir("/proc/self/task"))
