#!/usr/bin/env python3
"""Meet a BACnet device's alarms as a third-party front end.

One of two real stacks plays the front end:

- bacpypes3: an Application on --port, the recipient of the device's
  Notification Class. It waits for the Confirmed- or
  UnconfirmedEventNotification of --object (decoded by bacpypes3's own
  ConfirmedEventNotificationRequest; a confirmed one is answered with a
  SimpleACK), asks GetEventInformation, GetAlarmSummary and
  GetEnrollmentSummary, acknowledges the alarm with AcknowledgeAlarm
  (echoing the notification's time stamp) and asks GetEventInformation
  again. The test triggers the alarm once this script prints READY.
- rusty: rusty-bacnet's BACnetClient (it cannot be a recipient: its client
  takes no event notifications) asks GetAlarmSummary and
  GetEnrollmentSummary, GetEventInformation (whose ACK it hands back raw:
  its event time stamp for the object is read from it here), and
  acknowledges with acknowledge_alarm_request.

Prints one JSON line on stdout, e.g. for bacpypes3:

    {"stack": "bacpypes3", "ok": true, "notification": {"confirmed": true,
     "object": "analog-input,1", "to_state": "high-limit", ...},
     "event_information": [...], "alarm_summary": [...],
     "enrollment_summary": [...], "acknowledged": true,
     "after_ack": [...]}

Exit status 0 when every request succeeded, 1 otherwise.

Loopback only.

    .venv-peers/bin/python host/tests/peers/alarm_client.py --stack bacpypes3 \
        --target 127.0.0.1:47808 --device 389007 --port 47809 --object analog-input,1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from typing import Any, Dict, List


def stamp_text(ts: Any) -> str:
    """A bacpypes3 TimeStamp as text, whichever choice it is."""
    for choice in ("dateTime", "time", "sequenceNumber"):
        v = getattr(ts, choice, None)
        if v is not None:
            if choice == "dateTime":
                return f"{v.date} {v.time}"
            return str(v)
    return "?"


async def run_bacpypes3(args: argparse.Namespace) -> Dict[str, Any]:
    from bacpypes3.apdu import (
        AcknowledgeAlarmRequest,
        GetAlarmSummaryRequest,
        GetEnrollmentSummaryRequest,
        GetEventInformationRequest,
        SimpleAckPDU,
    )
    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.basetypes import (
        EventState,
        GetEnrollmentSummaryRequestAcknowledgmentFilterType,
        TimeStamp,
    )
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import CharacterString, ObjectIdentifier

    received: asyncio.Queue = asyncio.Queue()

    class FrontEnd(Application):
        async def do_ConfirmedEventNotificationRequest(self, apdu) -> None:  # noqa: N802 - bacpypes3's naming
            await received.put((True, apdu))
            await self.response(SimpleAckPDU(context=apdu))

        async def do_UnconfirmedEventNotificationRequest(self, apdu) -> None:  # noqa: N802
            await received.put((False, apdu))

    bp_args = SimpleArgumentParser().parse_args(
        ["--address", f"127.0.0.1/8:{args.port}", "--instance", "3999007", "--name", "trellis-alarm-client"]
    )
    app = FrontEnd.from_args(bp_args)
    await asyncio.sleep(0.3)
    target = Address(args.target)
    wanted = ObjectIdentifier(args.object)
    print("READY", file=sys.stderr, flush=True)
    sys.stderr.flush()
    out: Dict[str, Any] = {}

    while True:
        confirmed, n = await asyncio.wait_for(received.get(), timeout=30)
        if n.eventObjectIdentifier == wanted:
            break
    out["notification"] = {
        "confirmed": confirmed,
        "process": int(n.processIdentifier),
        "device": str(n.initiatingDeviceIdentifier),
        "object": str(n.eventObjectIdentifier),
        "class": int(n.notificationClass),
        "priority": int(n.priority),
        "event_type": str(n.eventType),
        "notify_type": str(n.notifyType),
        "ack_required": bool(n.ackRequired),
        "from_state": str(n.fromState),
        "to_state": str(n.toState),
        "message": str(n.messageText) if n.messageText is not None else None,
        "time_stamp": stamp_text(n.timeStamp),
        "event_values": str(n.eventValues.__class__.__name__) if n.eventValues is not None else None,
    }
    if n.eventValues is not None and getattr(n.eventValues, "outOfRange", None) is not None:
        oor = n.eventValues.outOfRange
        out["notification"]["exceeding_value"] = float(oor.exceedingValue)
        out["notification"]["exceeded_limit"] = float(oor.exceededLimit)

    async def event_information() -> List[Dict[str, Any]]:
        ack = await app.request(GetEventInformationRequest(destination=target))
        return [
            {
                "object": str(s.objectIdentifier),
                "state": str(s.eventState),
                "acked": [bool(b) for b in s.acknowledgedTransitions],
                "time_stamps": [stamp_text(t) for t in s.eventTimeStamps],
                "notify_type": str(s.notifyType),
                "priorities": [int(p) for p in s.eventPriorities],
            }
            for s in ack.listOfEventSummaries
        ] + ([{"more_events": True}] if ack.moreEvents else [])

    out["event_information"] = await event_information()
    ack = await app.request(GetAlarmSummaryRequest(destination=target))
    out["alarm_summary"] = [
        {"object": str(s.objectIdentifier), "state": str(s.alarmState)} for s in ack.listOfAlarmSummaries
    ]
    ack = await app.request(
        GetEnrollmentSummaryRequest(
            acknowledgmentFilter=GetEnrollmentSummaryRequestAcknowledgmentFilterType("all"),
            destination=target,
        )
    )
    out["enrollment_summary"] = [
        {
            "object": str(s.objectIdentifier),
            "event_type": str(s.eventType),
            "state": str(s.eventState),
            "priority": int(s.priority),
            "class": int(s.notificationClass) if s.notificationClass is not None else None,
        }
        for s in ack.listOfEnrollmentSummaries
    ]
    now = TimeStamp.as_dateTime()
    await app.request(
        AcknowledgeAlarmRequest(
            acknowledgingProcessIdentifier=7,
            eventObjectIdentifier=wanted,
            eventStateAcknowledged=EventState(str(n.toState)),
            timeStamp=n.timeStamp,
            acknowledgmentSource=CharacterString("bacpypes3 front end"),
            timeOfAcknowledgment=now,
            destination=target,
        )
    )
    out["acknowledged"] = True
    out["after_ack"] = await event_information()
    app.close()
    return out


async def run_rusty(args: argparse.Namespace) -> Dict[str, Any]:
    import rusty_bacnet as rb

    async with rb.BACnetClient(
        interface="127.0.0.1", port=args.port, broadcast_address="127.255.255.255", apdu_timeout_ms=10000
    ) as client:
        out: Dict[str, Any] = {}
        kind, instance = args.object.split(",")
        wanted = rb.ObjectIdentifier(getattr(rb.ObjectType, kind.upper().replace("-", "_")), int(instance))
        summary = await client.get_alarm_summary(args.target)
        out["alarm_summary"] = [
            {"object": str(s["object_id"]), "state": str(s["alarm_state"])} for s in summary
        ]
        enrolled = await client.get_enrollment_summary(args.target)
        out["enrollment_summary"] = [
            {"object": str(s["object_id"]), "state": str(s["event_state"]), "priority": s["priority"]}
            for s in enrolled
        ]
        raw = await client.get_event_information(args.target)
        out["event_information_octets"] = len(raw)
        stamp = offnormal_stamp_of(raw, args.object_type, int(instance))
        out["stamp_found"] = stamp is not None
        if stamp is not None:
            stamp = rb.BACnetTimeStamp.date_time(*stamp)
            await client.acknowledge_alarm_request(
                args.target,
                7,
                wanted,
                getattr(rb.EventState, args.ack_state.upper().replace("-", "_")),
                stamp,
                "rusty-bacnet front end",
                stamp,
            )
            out["acknowledged"] = True
        return out


def offnormal_stamp_of(raw: bytes, object_type: int, instance: int) -> Any:
    """The to-offnormal time stamp of one object in a GetEventInformation-ACK,
    as rusty-bacnet takes a BACnetTimeStamp: ((year, month, day, weekday),
    (hour, minute, second, hundredths)) for the dateTime choice."""
    wanted = ((object_type << 22) | instance).to_bytes(4, "big")
    # listOfEventSummaries [0] { objectIdentifier [0] ... eventTimeStamps [3] { [2] { date time } ... } }
    i = raw.find(b"\x0c" + wanted)
    if i < 0:
        return None
    j = raw.find(b"\x3e", i)  # eventTimeStamps [3] opening
    if j < 0 or raw[j + 1] != 0x2E:  # the dateTime [2] choice
        return None
    date = raw[j + 3 : j + 7]  # application Date: 0xA4 and 4 octets
    time = raw[j + 8 : j + 12]  # application Time: 0xB4 and 4 octets
    return ((date[0] + 1900, date[1], date[2], date[3]), (time[0], time[1], time[2], time[3]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stack", choices=["bacpypes3", "rusty"], required=True)
    p.add_argument("--target", required=True, help="the device, IP:PORT")
    p.add_argument("--device", type=int, required=True, help="its Device instance")
    p.add_argument("--port", type=int, required=True, help="our UDP port (the recipient's, for bacpypes3)")
    p.add_argument("--object", required=True, help="the alarming object, e.g. analog-input,1")
    p.add_argument("--object-type", type=int, default=0, help="its object type number (rusty)")
    p.add_argument("--ack-state", default="high-limit", help="the state acknowledged (rusty)")
    args = p.parse_args()
    result: Dict[str, Any] = {"stack": args.stack}
    try:
        runner = run_bacpypes3 if args.stack == "bacpypes3" else run_rusty
        result.update(asyncio.run(runner(args)))
        result["ok"] = True
    except Exception as e:  # noqa: BLE001 - report any failure as JSON
        result["ok"] = False
        result["error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    print(json.dumps(result, default=str), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
