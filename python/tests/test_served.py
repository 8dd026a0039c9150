"""The client against a gateway served from this process: every call, its
values as Python types and its failures as exceptions."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

import trellis
from conftest import Served


async def test_who_is_finds_the_device_by_target_and_by_range(client: trellis.Client, served: Served) -> None:
    found = await client.who_is(target=served.address, timeout=1.0)
    assert [(d.instance, d.address, d.vendor_id) for d in found] == [(served.instance, served.address, 999)]
    assert found[0].segmentation == "segmented-both" and found[0].max_apdu == 1476
    ranged = await client.who_is(served.instance, served.instance, target=served.address, timeout=0.5)
    assert [d.instance for d in ranged] == [served.instance]
    assert await client.who_is(1, 10, target=served.address, timeout=0.5) == []


async def test_a_broadcast_who_is_goes_to_the_networks_port_whatever_the_local_one(served: Served) -> None:
    # The client is on an ephemeral port; its Who-Is goes to broadcast_port (the network's),
    # here the served device's port (47808 by default).
    port = int(served.address.rsplit(":", 1)[1])
    async with trellis.Client("127.0.0.1", 0, broadcast="127.255.255.255", broadcast_port=port, timeout=2.0) as c:
        found = await c.who_is(served.instance, served.instance, timeout=1.0)
    assert [d.instance for d in found] == [served.instance]


async def test_values_come_back_as_python_types(client: trellis.Client, served: Served) -> None:
    at = served.address
    assert await client.read(at, "analog-value,1", "object-name") == "Zone Setpoint"
    pv = await client.read(at, "analog-value,1", "present-value")
    assert isinstance(pv, float)
    units = await client.read(at, "analog-value,1", "units")
    assert isinstance(units, trellis.Enumerated) and units == 62 and units == "degrees-celsius"
    assert units.name == "degrees-celsius" and str(units) == "degrees-celsius"
    flags = await client.read(at, ("analog-value", 1), trellis.PropertyIdentifier.STATUS_FLAGS)
    assert flags == {"in-alarm": False, "fault": False, "overridden": False, "out-of-service": False}
    assert await client.read(at, (trellis.ObjectType.ANALOG_VALUE, 1), "out-of-service") is False
    priorities = await client.read(at, "analog-value,1", "priority-array")
    assert isinstance(priorities, list) and len(priorities) == 16
    assert await client.read(at, "analog-value,1", "priority-array", index=0) == 16
    me = await client.read(at, "device,4194303", "object-identifier")
    assert me == trellis.ObjectIdentifier("device", served.instance) and str(me) == f"device,{served.instance}"
    objects = await client.read(at, f"device,{served.instance}", "object-list")
    assert trellis.ObjectIdentifier("trend-log", 1) in objects
    assert isinstance(await client.read(at, "device,4194303", "local-date"), dt.date)
    assert isinstance(await client.read(at, "device,4194303", "local-time"), dt.time)
    # BAC0's camelCase names are the standard's names too.
    assert await client.read(at, ("analogValue", 1), "presentValue") == pv


async def test_read_multiple_reads_all_and_keeps_per_property_errors(client: trellis.Client, served: Served) -> None:
    result = await client.read_multiple(
        served.address,
        {"analog-value,1": "all", "analog-input,1": ["present-value", "units", ("priority-array", 1)]},
    )
    everything = result["analog-value,1"]
    assert everything["object-name"] == "Zone Setpoint" and "priority-array" in everything
    assert everything["object-type"] == "analog-value"
    ai = result["analog-input,1"]
    assert isinstance(ai["present-value"], float) and ai["units"] == "degrees-celsius"
    # An analog input has no priority array: its error is the value, not raised.
    failed = ai["priority-array[1]"]
    assert isinstance(failed, trellis.DeviceError) and failed.error_code == "unknown-property"


async def test_write_with_priority_and_relinquish(client: trellis.Client, served: Served) -> None:
    at = served.address
    await client.write(at, "analog-value,1", "present-value", 23.5, priority=8)
    assert await client.read(at, "analog-value,1", "present-value") == 23.5
    assert (await client.read(at, "analog-value,1", "priority-array", index=8)) == 23.5
    await client.write(at, "analog-value,1", "present-value", None, priority=8)
    assert (await client.read(at, "analog-value,1", "priority-array", index=8)) is None
    await client.write(at, "binary-value,1", "present-value", "active", priority=8)
    assert await client.read(at, "binary-value,1", "present-value") == "active"
    await client.write(at, "binary-value,1", "present-value", None, priority=8)
    # analog-value,2 is not commandable: a plain write, and Null is no value for it.
    before = await client.read(at, "analog-value,2", "present-value")
    await client.write_multiple(at, {"analog-value,2": {"present-value": 24, "description": "cooling"}})
    assert await client.read_multiple(at, {"analog-value,2": ["present-value", "description"]}) == {
        "analog-value,2": {"present-value": 24.0, "description": "cooling"}
    }
    with pytest.raises(trellis.WriteFailed) as e:
        await client.write_multiple(at, {"analog-value,2": {"present-value": None}})
    assert e.value.error_code == "invalid-data-type"
    await client.write_multiple(at, {"analog-value,2": {"present-value": before}})


async def test_failures_are_typed_exceptions(client: trellis.Client, served: Served) -> None:
    with pytest.raises(trellis.DeviceError) as e:
        await client.read(served.address, "analog-value,999", "present-value")
    assert (e.value.error_class, e.value.error_code) == ("object", "unknown-object")
    assert e.value.error_class_number == 1 and e.value.error_code_number == 31
    with pytest.raises(trellis.DeviceError) as e:
        await client.write(served.address, "analog-input,1", "units", "string:kelvin")
    assert e.value.error_class == "property"
    with pytest.raises(trellis.WriteFailed) as wf:
        await client.write_multiple(
            served.address, {"analog-value,1": {"present-value": 22.0}, "analog-value,999": {"present-value": 1.0}}, priority=9
        )
    assert wf.value.first_failed[0] == trellis.ObjectIdentifier("analog-value", 999)
    assert wf.value.error_code == "unknown-object"
    await client.write(served.address, "analog-value,1", "present-value", None, priority=9)
    with pytest.raises(ValueError, match="not an object identifier"):
        await client.read(served.address, "analog-vlue,1", "present-value")
    with pytest.raises(ValueError, match="priority"):
        await client.write(served.address, "analog-value,1", "present-value", 1.0, priority=17)
    with pytest.raises(TypeError):
        await client.write(served.address, "analog-value,1", "present-value", object())


async def test_a_silent_device_times_out_as_a_timeout_error() -> None:
    from conftest import free_udp_port

    async with trellis.Client("127.0.0.1", 0, timeout=0.2, retries=1) as c:
        with pytest.raises(trellis.BACnetTimeoutError) as e:
            await c.read(f"127.0.0.1:{free_udp_port()}", "analog-value,1", "present-value")
        assert isinstance(e.value, TimeoutError) and e.value.attempts == 2 and e.value.timeout == 0.2


async def test_cov_notifications_iterate_and_the_subscription_ends_with_the_block(
    client: trellis.Client, served: Served
) -> None:
    at = served.address
    async with client.subscribe_cov(at, "analog-value,1", confirmed=True, lifetime=2) as sub:
        notifications = sub.__aiter__()
        first = await asyncio.wait_for(notifications.__anext__(), 5)
        assert first.object == trellis.ObjectIdentifier("analog-value", 1) and first.confirmed
        assert first.device == served.instance and "present-value" in first.values
        await client.write(at, "analog-value,1", "present-value", 26.0, priority=8)
        changed = await asyncio.wait_for(notifications.__anext__(), 5)
        assert changed.values["present-value"] == 26.0
        # Renewed at half the lifetime: still there after twice it.
        await asyncio.sleep(4.0)
        subs = served.gateway.counters()["cov"][0]["subscriptions"]
        assert [s["process_identifier"] for s in subs] == [sub.process_id]
    await client.write(at, "analog-value,1", "present-value", None, priority=8)
    assert served.gateway.counters()["cov"][0]["subscriptions"] == []


async def test_a_cancelled_task_cancels_its_subscription(client: trellis.Client, served: Served) -> None:
    received: list[trellis.CovNotification] = []

    async def listen() -> None:
        async with client.subscribe_cov(served.address, "analog-value,2", lifetime=60) as sub:
            async for n in sub:
                received.append(n)

    task = asyncio.get_running_loop().create_task(listen())
    for _ in range(50):
        if received:
            break
        await asyncio.sleep(0.1)
    assert received, "the initial notification"
    assert any(s["object"] == "analog-value,2" for s in served.gateway.counters()["cov"][0]["subscriptions"])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(s["object"] == "analog-value,2" for s in served.gateway.counters()["cov"][0]["subscriptions"])


async def test_read_range_returns_log_records(client: trellis.Client, served: Served) -> None:
    result = await client.read_range(served.address, "trend-log,1")
    assert result.item_count == len(result.items) >= 1 and result.first_item and result.last_item
    record = result.items[0]
    assert isinstance(record["timestamp"], dt.datetime) and record["kind"] == "real"
    assert isinstance(record["value"], float) and record["status_flags"]["fault"] is False
    last = await client.read_range(served.address, "trend-log,1", position=result.item_count, count=-1)
    assert last.item_count == 1 and last.last_item


async def test_device_management(client: trellis.Client, served: Served) -> None:
    at = served.address
    await client.device_communication_control(at, "disable-initiation", duration=dt.timedelta(minutes=1))
    await client.device_communication_control(at, "enable")
    await client.reinitialize(at, "activate-changes")
    await client.time_sync(at)
    await client.time_sync(at, utc=True)
    with pytest.raises(trellis.CommunicationError, match="password"):
        await client.reinitialize(at, "warmstart", password="x" * 21)


async def test_discover_lists_objects_with_names(client: trellis.Client, served: Served) -> None:
    (device,) = await client.discover(target=served.address, timeout=1.0)
    assert device["device"] == served.instance
    names = {o["object"]: o["name"] for o in device["objects"]}
    assert names["analog-value,1"] == "Zone Setpoint" and len(names) >= 13


async def test_many_concurrent_reads_from_one_client(client: trellis.Client, served: Served) -> None:
    values = await asyncio.gather(*(client.read(served.address, "analog-input,1", "present-value") for _ in range(2000)))
    assert len(values) == 2000 and all(isinstance(v, float) for v in values)


async def test_a_list_of_constructed_values_keeps_every_entry(client: trellis.Client, served: Served) -> None:
    # Active_COV_Subscriptions: a list of SEQUENCEs whose context tags start
    # again at [0] with each entry; two subscriptions are two entries.
    async with client.subscribe_cov(served.address, "analog-input,1", lifetime=60):
        async with client.subscribe_cov(served.address, "analog-input,2", lifetime=60):
            entries = await client.read(served.address, "device,4194303", "active-cov-subscriptions")
    assert isinstance(entries, list) and len(entries) == 2, entries
    assert all(isinstance(e, dict) and set(e) >= {0, 1, 2, 3} for e in entries), entries


async def test_closing_a_subscription_ends_a_waiting_reader(client: trellis.Client, served: Served) -> None:
    sub = await client.subscribe_cov(served.address, "analog-input,3", lifetime=60).open()
    received: list[trellis.CovNotification] = []

    async def read_all() -> None:
        async for n in sub:
            received.append(n)

    reader = asyncio.get_running_loop().create_task(read_all())
    await asyncio.sleep(0.5)
    assert received, "the initial notification"
    await sub.close()
    await asyncio.wait_for(reader, 5)  # ended by StopAsyncIteration, not cancelled
    assert not reader.cancelled()


async def test_a_short_communication_control_duration_is_rounded_up(client: trellis.Client, served: Served) -> None:
    with pytest.raises(ValueError, match="positive"):
        await client.device_communication_control(served.address, "disable-initiation", duration=dt.timedelta(0))
    await client.device_communication_control(served.address, "disable-initiation", duration=dt.timedelta(seconds=30))
    await client.device_communication_control(served.address, "enable")
