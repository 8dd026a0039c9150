"""The client against third-party servers: bacpypes3's and rusty-bacnet's
devices, each in a process of its own."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

import trellis
from conftest import Peer


@pytest.fixture(params=["bacpypes3", "rusty"])
def peer(request: pytest.FixtureRequest, bacpypes3_server: Peer, rusty_server: Peer) -> Peer:
    return bacpypes3_server if request.param == "bacpypes3" else rusty_server


async def test_who_is_read_write_and_read_back(client: trellis.Client, peer: Peer) -> None:
    (device,) = await client.who_is(target=peer.address, timeout=1.0)
    assert device.instance == peer.instance
    assert await client.read(device, "analog-value,1", "object-name") == "av1"
    assert await client.read(device, "analog-value,1", "units") == "degrees-celsius"
    await client.write(device, "analog-value,1", "present-value", 12.25, priority=8)
    assert await client.read(device, "analog-value,1", "present-value") == 12.25
    await client.write(device, "analog-value,1", "present-value", None, priority=8)
    assert await client.read(device, "analog-value,1", "present-value") == 42.0
    await client.write(device, "binary-value,1", "present-value", True, priority=8)
    assert await client.read(device, "binary-value,1", "present-value") == "active"
    await client.write(device, "binary-value,1", "present-value", None, priority=8)
    assert await client.read(device, "characterstring-value,1", "present-value") == "hello"


async def test_read_multiple_and_errors(client: trellis.Client, peer: Peer) -> None:
    result = await client.read_multiple(peer.address, {"analog-value,1": ["object-name", "present-value", "units"]})
    assert result["analog-value,1"]["object-name"] == "av1"
    everything = await client.read_multiple(peer.address, {"analog-value,1": "all"})
    assert everything["analog-value,1"]["object-name"] == "av1"
    with pytest.raises(trellis.DeviceError) as e:
        await client.read(peer.address, "analog-value,999", "present-value")
    assert e.value.error_class == "object" and e.value.error_code == "unknown-object"


async def test_cov_from_the_peer(client: trellis.Client, peer: Peer) -> None:
    async with client.subscribe_cov(peer.address, "analog-value,1", confirmed=True, lifetime=120) as sub:
        notifications = sub.__aiter__()
        first = await asyncio.wait_for(notifications.__anext__(), 10)
        assert first.device == peer.instance and "present-value" in first.values
        await client.write(peer.address, "analog-value,1", "present-value", 30.0, priority=8)
        changed = await asyncio.wait_for(notifications.__anext__(), 10)
        assert changed.values["present-value"] == 30.0
    await client.write(peer.address, "analog-value,1", "present-value", None, priority=8)


async def test_time_sync_reaches_bacpypes3(client: trellis.Client, bacpypes3_server: Peer) -> None:
    when = dt.datetime(2026, 6, 1, 12, 30, 15, 250000)
    await client.time_sync(bacpypes3_server.address, when)
    for _ in range(50):
        got = await client.read(bacpypes3_server.address, "characterstring-value,2", "present-value")
        if got != "none":
            break
        await asyncio.sleep(0.1)
    assert got == "timeSynchronization 2026-06-01 1 12:30:15.25"


async def test_device_communication_control_with_a_password(client: trellis.Client, bacpypes3_server: Peer) -> None:
    with pytest.raises(trellis.DeviceError) as e:
        await client.device_communication_control(bacpypes3_server.address, "disable-initiation", password="wrong")
    assert e.value.error_code == "password-failure"
    await client.device_communication_control(bacpypes3_server.address, "enable", password="trellis")


async def test_rusty_bacnet_reinitialize_and_trend_log(client: trellis.Client, rusty_server: Peer) -> None:
    await client.reinitialize(rusty_server.address, "warmstart", password="trellis")
    for _ in range(50):
        result = await client.read_range(rusty_server.address, "trend-log,1")
        if result.items:
            break
        await asyncio.sleep(0.2)
    record = result.items[0]
    assert isinstance(record["timestamp"], dt.datetime) and record["value"] == 72.5


async def test_an_abort_from_the_device_is_an_abort_error(client: trellis.Client) -> None:
    # rusty-bacnet without segmentation cannot send an Object_List of 400
    # objects in one APDU: it aborts the transaction.
    from conftest import start_peer, stop_peer

    peer = start_peer("rusty_server.py", "--objects", "400", instance=4202)
    try:
        with pytest.raises(trellis.AbortError) as e:
            await client.read(peer.address, "device,4202", "object-list")
        assert e.value.from_server, e.value
        assert e.value.reason == "segmentation-not-supported" and e.value.reason_number == 4
    finally:
        stop_peer(peer)
