#!/usr/bin/env python3
"""Read and rewrite a BACnet device's Schedule and Calendar as a
third-party front end, then move its clock and see the scheduled write.

One of two real stacks plays the front end:

- bacpypes3: reads schedule,1 (Present_Value, Weekly_Schedule,
  Exception_Schedule, Schedule_Default, Effective_Period,
  List_Of_Object_Property_References, Priority_For_Writing) and calendar,1
  (Date_List, Present_Value), each decoded by bacpypes3's own Schedule and
  Calendar classes; writes a new Weekly_Schedule (every weekday: 06:30
  22.0, 18:00 NULL) and Schedule_Default 17.0 built from bacpypes3's
  types, and reads them back.
- rusty-lifecycle: rusty-bacnet's BACnetClient creates a Calendar by type
  (with an Object_Name) and a Schedule by identifier (schedule,50), asks
  for the same identifier again (refused), deletes both, and asks to delete
  the model's analog-value,1 (refused).
- rusty: rusty-bacnet's BACnetClient sends a UTCTimeSynchronization for
  Monday 2026-11-30 at --time (UTC) and reads the scheduled object's
  Present_Value until it is --expect (or 10 s pass), then reads
  schedule,1's Present_Value.

Prints one JSON line on stdout. Exit status 0 when every request
succeeded, 1 otherwise.

Loopback only.

    .venv-peers/bin/python host/tests/peers/schedule_client.py --stack bacpypes3 \
        --target 127.0.0.1:47808 --port 47809
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from typing import Any, Dict


async def run_bacpypes3(args: argparse.Namespace) -> Dict[str, Any]:
    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.basetypes import DailySchedule, TimeValue
    from bacpypes3.constructeddata import ArrayOf
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import Null, ObjectIdentifier, Real, Time

    bp_args = SimpleArgumentParser().parse_args(
        ["--address", f"127.0.0.1/8:{args.port}", "--instance", "3999009", "--name", "trellis-schedule-client"]
    )
    app = Application.from_args(bp_args)
    await asyncio.sleep(0.3)
    target = Address(args.target)
    schedule = ObjectIdentifier("schedule,1")
    calendar = ObjectIdentifier("calendar,1")
    out: Dict[str, Any] = {}

    async def read(obj, prop):
        return await app.read_property(target, obj, prop)

    def atomic(v) -> str:
        return str(v.get_value() if hasattr(v, "get_value") else v)

    def day_text(day) -> list:
        return [[str(tv.time), atomic(tv.value)] for tv in day.daySchedule]

    def entry_text(e) -> str:
        if e.date is not None:
            return f"date {e.date}"
        if e.dateRange is not None:
            return f"range {e.dateRange.startDate}..{e.dateRange.endDate}"
        w = e.weekNDay
        return f"weekNDay {bytes(w).hex() if w is not None else '?'}"

    out["present_value"] = atomic(await read(schedule, "present-value"))
    weekly = await read(schedule, "weekly-schedule")
    out["weekly"] = [day_text(d) for d in weekly]
    exceptions = await read(schedule, "exception-schedule")
    out["exceptions"] = [
        {"period": str(e.period.calendarReference) if e.period.calendarReference is not None else str(e.period),
         "priority": int(e.eventPriority),
         "values": [[str(tv.time), atomic(tv.value)] for tv in e.listOfTimeValues]}
        for e in exceptions
    ]
    out["default"] = atomic(await read(schedule, "schedule-default"))
    period = await read(schedule, "effective-period")
    out["effective_period"] = [str(period.startDate), str(period.endDate)]
    refs = await read(schedule, "list-of-object-property-references")
    out["references"] = [f"{r.objectIdentifier} {r.propertyIdentifier}" for r in refs]
    out["priority_for_writing"] = int(await read(schedule, "priority-for-writing"))
    out["date_list"] = [entry_text(e) for e in await read(calendar, "date-list")]
    out["calendar_present_value"] = str(await read(calendar, "present-value"))

    workday = DailySchedule(daySchedule=[
        TimeValue(time=Time("06:30:00"), value=Real(22.0)),
        TimeValue(time=Time("18:00:00"), value=Null(())),
    ])
    weekend = DailySchedule(daySchedule=[])
    await app.write_property(target, schedule, "weekly-schedule",
                             ArrayOf(DailySchedule)([workday] * 5 + [weekend] * 2))
    await app.write_property(target, schedule, "schedule-default", Real(17.0))
    out["weekly_after"] = [day_text(d) for d in await read(schedule, "weekly-schedule")]
    out["default_after"] = atomic(await read(schedule, "schedule-default"))
    app.close()
    return out


async def run_rusty(args: argparse.Namespace) -> Dict[str, Any]:
    from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier

    async with BACnetClient(
        interface="127.0.0.1",
        port=args.port,
        broadcast_address="127.255.255.255",
        apdu_timeout_ms=5000,
    ) as c:
        hour, minute = (int(x) for x in args.time.split(":"))
        # (year, month, day, weekday) and (hour, minute, second, hundredths).
        await c.utc_time_synchronization(args.target, (2026, 11, 30, 1), (hour, minute, 0, 0))
        obj = ObjectIdentifier(ObjectType.ANALOG_VALUE, 1)
        seen = None
        for _ in range(100):
            seen = await c.read_property(args.target, obj, PropertyIdentifier.PRESENT_VALUE)
            if abs(float(seen.value) - args.expect) < 1e-6:
                break
            await asyncio.sleep(0.1)
        pv = await c.read_property(args.target, ObjectIdentifier(ObjectType.SCHEDULE, 1), PropertyIdentifier.PRESENT_VALUE)
        return {"setpoint": float(seen.value), "schedule_present_value": float(pv.value)}


async def run_rusty_lifecycle(args: argparse.Namespace) -> Dict[str, Any]:
    """CreateObject by type and by identifier, DeleteObject, and the refusals."""
    from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier, PropertyValue

    async with BACnetClient(
        interface="127.0.0.1",
        port=args.port,
        broadcast_address="127.255.255.255",
        apdu_timeout_ms=5000,
    ) as c:
        out: Dict[str, Any] = {}
        created = await c.create_object(
            args.target,
            ObjectType.CALENDAR,
            [(PropertyIdentifier.OBJECT_NAME, PropertyValue.character_string("rusty-holidays"), None, None)],
        )
        # rusty-bacnet hands back the CreateObject-ACK as it came: an
        # application-tagged BACnetObjectIdentifier (0xC4, then 4 octets).
        def from_ack(raw: bytes, object_type: Any) -> Any:
            ack = bytes(raw)
            if len(ack) != 5 or ack[0] != 0xC4:
                raise ValueError(f"CreateObject-ACK {ack.hex()}: not an object identifier")
            word = int.from_bytes(ack[1:], "big")
            out.setdefault("acks", []).append(f"{word >> 22},{word & 0x3FFFFF}")
            return ObjectIdentifier(object_type, word & 0x3FFFFF)

        created = from_ack(created, ObjectType.CALENDAR)
        name = await c.read_property(args.target, created, PropertyIdentifier.OBJECT_NAME)
        out["name"] = str(name.value)
        chosen = ObjectIdentifier(ObjectType.SCHEDULE, 50)
        from_ack(await c.create_object(args.target, chosen), ObjectType.SCHEDULE)
        try:
            await c.create_object(args.target, chosen)
            out["duplicate"] = "accepted"
        except Exception as e:  # noqa: BLE001 - the stack raises its own types
            out["duplicate"] = str(e)
        await c.delete_object(args.target, created)
        await c.delete_object(args.target, chosen)
        try:
            await c.read_property(args.target, created, PropertyIdentifier.OBJECT_NAME)
            out["after_delete"] = "still there"
        except Exception as e:  # noqa: BLE001
            out["after_delete"] = str(e)
        try:
            await c.delete_object(args.target, ObjectIdentifier(ObjectType.ANALOG_VALUE, 1))
            out["delete_model_object"] = "accepted"
        except Exception as e:  # noqa: BLE001
            out["delete_model_object"] = str(e)
        return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stack", choices=["bacpypes3", "rusty", "rusty-lifecycle"], required=True)
    p.add_argument("--target", required=True, help="IP:PORT of the device")
    p.add_argument("--port", type=int, required=True, help="our own UDP port on 127.0.0.1")
    p.add_argument("--time", default="06:45", help="rusty: UTC time of day to set (HH:MM)")
    p.add_argument("--expect", type=float, default=22.0, help="rusty: the setpoint to wait for")
    args = p.parse_args()
    runner = {"rusty": run_rusty, "rusty-lifecycle": run_rusty_lifecycle, "bacpypes3": run_bacpypes3}[args.stack]
    try:
        out = asyncio.run(runner(args))
        out.update({"stack": args.stack, "ok": True})
        print(json.dumps(out))
        return 0
    except Exception as e:  # noqa: BLE001 - report whatever the stack raised
        traceback.print_exc()
        print(json.dumps({"stack": args.stack, "ok": False, "error": f"{type(e).__name__}: {e}"}))
        return 1


if __name__ == "__main__":
    sys.exit(main())
