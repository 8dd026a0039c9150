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

Usage:  .venv-peers/bin/python host/tests/peers/rusty_server.py --port 47814
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from rusty_bacnet import (
    BACnetServer,
    ObjectIdentifier,
    ObjectType,
    PropertyIdentifier,
    PropertyValue,
    Segmentation,
)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--device-id", type=int, default=4001)
    parser.add_argument("--objects", type=int, default=0,
                        help="extra analog-value objects av2.. (default 0)")
    parser.add_argument("--segmentation", action="store_true",
                        help="segmented-both (rusty-bacnet's default is no-segmentation)")
    args = parser.parse_args()

    server = BACnetServer(
        device_instance=args.device_id,
        device_name=f"RustyServer-{args.device_id}",
        interface="127.0.0.1",
        port=args.port,
        broadcast_address="127.255.255.255",
        # Answer DeviceCommunicationControl (default policy denies all).
        dcc_policy="require_password",
        dcc_password="trellis",
        reinit_password="trellis",
        # Accept ReinitializeDevice with the right password but do nothing.
        on_reinitialize=lambda req: True,
        **({"segmentation_supported": Segmentation.BOTH} if args.segmentation else {}),
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

    await server.start()

    av1 = ObjectIdentifier(ObjectType.ANALOG_VALUE, 1)
    # AV present value comes from Relinquish_Default while the array is empty.
    await server.write_property_local(
        av1, PropertyIdentifier.RELINQUISH_DEFAULT, PropertyValue.real(42.0),
        source_object=None,
    )
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


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
