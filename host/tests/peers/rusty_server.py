#!/usr/bin/env python3
"""rusty-bacnet BACnet/IP server device: the fast third-party peer for Trellis tests.

Interface, port and broadcast address are always given explicitly
(interface 127.0.0.1, broadcast 127.255.255.255; the library defaults are
0.0.0.0:47808 and 255.255.255.255). Note that rusty-bacnet 0.14.0 still binds
its UDP socket to 0.0.0.0:PORT with these arguments (so it also hears
broadcasts to 127.255.255.255:PORT); it only ever answers the loopback peers
that talk to it here. Prints exactly one line ``READY`` on stdout once the
server is started, then serves until SIGTERM/SIGINT and exits 0.

ReinitializeDevice and DeviceCommunicationControl take the password
"trellis"; an accepted ReinitializeDevice is acknowledged and does nothing.

Objects:
  device,N            (N = --device-id, default 4001; name "RustyServer-N")
  analog-input,1      "Zone Temp" units 62 (degrees-celsius) pv 72.5
  analog-value,1      "av1" units 62 (degrees-celsius), commandable; relinquish-default 42.0 (present-value 42.0)
  binary-value,1      "bv1" commandable
  multi-state-value,1 "msv1" 3 states, commandable
  characterstring-value,1 "csv1" "hello"
  trend-log,1         "tl1" polls Zone Temp present-value once a second
  analog-value,2..N+1 "av2".. (one per --objects)

``--alarm-recipient PORT``: analog-value,1 reports alarms (intrinsic
reporting, OUT_OF_RANGE: Low_Limit 16, High_Limit 28, both enabled,
Time_Delay 0, every transition enabled) to notification-class,1, whose one
recipient is 127.0.0.1:PORT (unconfirmed). Its relinquish-default 42.0 is
beyond the limit: a client commands it inside first.

``--bbmd``: the server is also a BBMD accepting foreign devices (an empty
BDT: its own row only).

``--ipv6 ADDR``: BACnet/IPv6 (Annex U) on ``[ADDR]:PORT`` instead, the VMAC
being the device instance (e.g. ``::1``, or an address of a test's network
namespace).

MS/TP (``--mstp PATH --mac N --baud B [--max-master M]``, instead of
``--port``): the station runs on a serial device, e.g. one end of a socat
pty pair. rusty-bacnet 0.14.0's ``BACnetServer(transport="mstp")`` panics in
``start()`` ("no reactor running"), so this mode uses ``MstpEndpoint``: it
serves device,N and analog-input,1 "Zone Temp" 72.5 only, answers
ReadProperty only (other services get a Reject) and ignores Who-Is. On
SIGUSR1 it broadcasts one I-Am (MS/TP local broadcast); it never sends one
by itself.

Usage:  .venv-peers/bin/python host/tests/peers/rusty_server.py --port 47814
        .venv-peers/bin/python host/tests/peers/rusty_server.py --mstp /tmp/ttyB --mac 2 --baud 38400 --max-master 3
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from rusty_bacnet import (
    BACnetServer,
    Bbmd,
    MstpEndpoint,
    ObjectIdentifier,
    ObjectType,
    PropertyIdentifier,
    PropertyValue,
    Segmentation,
)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", type=int, help="B/IP: UDP port on 127.0.0.1")
    where.add_argument("--mstp", metavar="PATH", help="MS/TP: serial device (e.g. a socat pty)")
    parser.add_argument("--mac", type=int, default=2, help="MS/TP station MAC (default 2)")
    parser.add_argument("--baud", type=int, default=38400, help="MS/TP baud (default 38400)")
    parser.add_argument("--max-master", type=int, default=127, help="MS/TP Max_Master (default 127)")
    parser.add_argument("--device-id", type=int, default=4001)
    parser.add_argument("--objects", type=int, default=0,
                        help="extra analog-value objects av2.. (default 0)")
    parser.add_argument("--segmentation", action="store_true",
                        help="segmented-both (rusty-bacnet's default is no-segmentation)")
    parser.add_argument("--bbmd", action="store_true",
                        help="be a BBMD that accepts foreign-device registrations (no peers)")
    parser.add_argument("--ipv6", metavar="ADDR",
                        help="BACnet/IPv6 on [ADDR]:PORT instead of B/IP (VMAC = the device instance)")
    parser.add_argument("--alarm-recipient", type=int, metavar="PORT",
                        help="analog-value,1 alarms outside 16..28 to 127.0.0.1:PORT (notification-class,1)")
    args = parser.parse_args()
    if args.mstp is not None:
        return await serve_mstp(args)

    where = (
        {"transport": "ipv6", "ipv6_interface": args.ipv6}
        if args.ipv6
        else {"interface": "127.0.0.1", "broadcast_address": "127.255.255.255"}
    )
    server = BACnetServer(
        device_instance=args.device_id,
        device_name=f"RustyServer-{args.device_id}",
        port=args.port,
        **where,
        # Answer DeviceCommunicationControl (default policy denies all).
        dcc_policy="require_password",
        dcc_password="trellis",
        reinit_password="trellis",
        # Accept ReinitializeDevice with the right password but do nothing.
        on_reinitialize=lambda req: True,
        **({"segmentation_supported": Segmentation.BOTH} if args.segmentation else {}),
        **({"bbmd": Bbmd(bdt=[], accept_foreign_devices=True)} if args.bbmd else {}),
    )
    server.add_analog_input(1, "Zone Temp", units=62, present_value=72.5)
    server.add_analog_value(1, "av1", units=62, present_value_access="commandable")
    server.add_binary_value(1, "bv1", present_value_access="commandable")
    server.add_multistate_value(1, "msv1", 3, present_value_access="commandable")
    server.add_character_string_value(1, "csv1")
    # A polled Trend Log of Zone Temp, one record a second: a ReadRange target.
    server.add_trend_log(
        1, "tl1", buffer_size=100,
        reference=(ObjectIdentifier(ObjectType.ANALOG_INPUT, 1), PropertyIdentifier.PRESENT_VALUE),
        logging_type="polled", log_interval=100,
    )
    for i in range(2, 2 + args.objects):
        server.add_analog_value(i, f"av{i}", units=62, present_value_access="commandable")
    if args.alarm_recipient is not None:
        mac = bytes([127, 0, 0, 1]) + args.alarm_recipient.to_bytes(2, "big")
        server.add_notification_class(1, "alarms", 1, recipients=[
            {"recipient": {"kind": "address", "network_number": 0, "mac_address": mac}, "process_identifier": 1},
        ])

    await server.start()

    av1 = ObjectIdentifier(ObjectType.ANALOG_VALUE, 1)
    # AV present value comes from Relinquish_Default while the array is empty.
    await server.write_property_local(
        av1, PropertyIdentifier.RELINQUISH_DEFAULT, PropertyValue.real(42.0),
        source_object=None,
    )
    if args.alarm_recipient is not None:
        for prop, value in [
            (PropertyIdentifier.HIGH_LIMIT, PropertyValue.real(28.0)),
            (PropertyIdentifier.LOW_LIMIT, PropertyValue.real(16.0)),
            (PropertyIdentifier.NOTIFICATION_CLASS, PropertyValue.unsigned(1)),
            (PropertyIdentifier.TIME_DELAY, PropertyValue.unsigned(0)),
            (PropertyIdentifier.LIMIT_ENABLE, PropertyValue.bit_string(6, bytes([0xC0]))),
            (PropertyIdentifier.EVENT_ENABLE, PropertyValue.bit_string(5, bytes([0xE0]))),
        ]:
            await server.write_property_local(av1, prop, value, source_object=None)
    csv1 = ObjectIdentifier(ObjectType.CHARACTERSTRING_VALUE, 1)
    try:
        await server.write_property_local(
            csv1, PropertyIdentifier.PRESENT_VALUE, PropertyValue.character_string("hello"),
            source_object=None,
        )
    except Exception as exc:  # not fatal: the object still serves its default
        print(f"rusty_server: csv1 present-value not set: {exc!r}", file=sys.stderr)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    print("READY", flush=True)
    await stop.wait()
    await server.stop()
    return 0


async def serve_mstp(args: argparse.Namespace) -> int:
    """An MS/TP station on a serial device (MstpEndpoint, see the docstring)."""
    endpoint = MstpEndpoint(
        device_instance=args.device_id,
        serial_port=args.mstp,
        device_name=f"RustyServer-{args.device_id}",
        mstp_baud=args.baud,
        mstp_mac=args.mac,
        mstp_max_master=args.max_master,
    )
    endpoint.add_analog_input(1, "Zone Temp", units=62, present_value=72.5)
    await endpoint.start()

    stop = asyncio.Event()
    i_am = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, i_am.set)

    print("READY", flush=True)
    while not stop.is_set():
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(i_am.wait())]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for w in waiters:
            w.cancel()
        if i_am.is_set() and not stop.is_set():
            i_am.clear()
            await endpoint.broadcast_i_am()
            print("I-AM", flush=True)
    await endpoint.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
