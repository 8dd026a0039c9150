#!/usr/bin/env python3
"""bacpypes3 BACnet/IP server device: a real third-party peer for Trellis tests.

Binds 127.0.0.1/8:PORT (loopback only; bacpypes3 also binds the broadcast
socket 127.255.255.255:PORT), prints exactly one line ``READY`` on stdout once
the sockets are bound, then serves until SIGTERM/SIGINT and exits 0.

Objects:
  device,N            (N = --device-id, default 3001; name "bacpypes3-N")
  analog-value,1      "av1"  42.0 degreesCelsius, commandable (priority array,
                      relinquish-default 42.0)
  analog-input,1      "ai1"  21.5 degreesCelsius
  binary-value,1      "bv1"  inactive, commandable
  multi-state-value,1 "msv1" 3 states, stateText ["Off", "Low", "High"], pv 1
  characterstring-value,1 "csv1" "hello"
  characterstring-value,2 "last-time-sync" "none": a test hook, see below
  analog-value,2..N+1 "av2".. (one per --objects), pv = instance as float;
                      commandable (relinquish-default = instance) with --commandable

DeviceCommunicationControl is answered (password "trellis"); bacpypes3 has no
ReinitializeDevice handler, and its ReadRange handler raises
NotImplementedError (answered Error device/operational-problem).

bacpypes3 has no TimeSynchronization handlers either. The script adds two
that only record what bacpypes3 decoded, for tests to read back: the
Present_Value of characterstring-value,2 becomes
"<service> YYYY-MM-DD <weekday 1-7> HH:MM:SS.hh" (the fields as received,
e.g. "utcTimeSynchronization 2025-06-01 7 12:00:00.00"). The device's own
Local_Date/Local_Time stay the host clock's.

``--bbmd``: the device's port is also a BBMD with an empty BDT, which
accepts foreign-device registrations from anyone (bacpypes3 has no
restriction to configure).

Usage:  .venv-peers/bin/python host/tests/peers/bacpypes3_server.py --port 47809
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from bacpypes3.app import Application
from bacpypes3.argparse import SimpleArgumentParser
from bacpypes3.local.analog import AnalogInputObject, AnalogValueObject, AnalogValueObjectCmd
from bacpypes3.local.binary import BinaryValueObject
from bacpypes3.local.cmd import Commandable
from bacpypes3.local.multistate import MultiStateValueObject
from bacpypes3.local.object import Object as _LocalObject
from bacpypes3.object import CharacterStringValueObject as _CharacterStringValueObject
from bacpypes3.service.device import DeviceCommunicationControlServices


DCC_PASSWORD = "trellis"


class ServerApplication(Application, DeviceCommunicationControlServices):
    """bacpypes3's Application plus its (not mixed in by default) DCC service.

    bacpypes3 0.0.110 compares the request's enable-disable enumeration with
    the strings "enable"/"disable"/"disableInitiation", which never match, so
    an unpatched DCC is acknowledged and then not enforced. The ASAP wants
    those strings: translate the enumeration here."""

    _DCC_NAMES = {0: "enable", 1: "disable", 2: "disableInitiation"}

    def disable_communications(self, enable_disable):
        name = self._DCC_NAMES.get(int(enable_disable), str(enable_disable))
        if name == "enable":
            self.enable_communications()
        else:
            super().disable_communications(name)

    # Test hook: record the TimeSynchronization requests bacpypes3 decoded.
    time_sync_log = None

    async def do_TimeSynchronizationRequest(self, apdu) -> None:
        self._record_time_sync("timeSynchronization", apdu)

    async def do_UTCTimeSynchronizationRequest(self, apdu) -> None:
        self._record_time_sync("utcTimeSynchronization", apdu)

    def _record_time_sync(self, service, apdu) -> None:
        year, month, day, weekday = apdu.time.date
        hour, minute, second, hundredths = apdu.time.time
        self.time_sync_log.presentValue = (
            f"{service} {1900 + year:04d}-{month:02d}-{day:02d} {weekday} "
            f"{hour:02d}:{minute:02d}:{second:02d}.{hundredths:02d}"
        )


class BinaryValueObjectCmd(Commandable, BinaryValueObject):
    """Commandable binary value built on the *local* BinaryValueObject.

    bacpypes3.local.binary.BinaryValueObjectCmd derives from the plain
    (non-local) object class, so it has no COV criteria and SubscribeCOV on
    it fails with services/cov-subscription-failed."""

    _required = ("priorityArray",)


class CharacterStringValueObject(_LocalObject, _CharacterStringValueObject):
    """Local (served) characterstring-value object with a generated propertyList."""


def _fix_dcc_receive_filter(asap) -> None:
    """While DCC is "disable", bacpypes3 0.0.110's ASAP.confirmation reads
    pdu.apduType/apduService from the *undecoded* PDU, which has neither: the
    AttributeError drops every request, including the DCC enable that should
    end it. Filter here on the raw octets instead (DCC and ReinitializeDevice
    pass, as do Who-Is/Who-Has like bacpypes3 intends), then let the original
    code run past its broken check."""
    original = asap.confirmation
    bypass = "bypass"  # matches none of bacpypes3's branches: no filtering

    async def confirmation(pdu):
        if asap.dccEnableDisable == "disable":
            data = bytes(pdu.pduData)
            ptype = data[0] >> 4 if data else -1
            if ptype == 0:
                service = data[5] if data[0] & 0x08 else data[3]
                allowed = service in (17, 20)
            elif ptype == 1:
                allowed = data[1] in (7, 8)
            else:
                allowed = False
            if not allowed:
                return
            asap.dccEnableDisable = bypass
            try:
                await original(pdu)
            finally:
                if asap.dccEnableDisable == bypass:
                    asap.dccEnableDisable = "disable"
            return
        await original(pdu)

    asap.confirmation = confirmation


def build_app(
    port: int, device_id: int, extra: int, commandable: bool = False, bbmd: bool = False, address: str = "127.0.0.1/8"
) -> Application:
    # 127.0.0.1/8 by default: the /8 also binds the 127.255.255.255 broadcast socket.
    bp_args = SimpleArgumentParser().parse_args(
        [
            "--address", f"{address}:{port}",
            "--instance", str(device_id),
            "--name", f"bacpypes3-{device_id}",
        ]
        # A BBMD with an empty BDT: it accepts foreign devices (bacpypes3
        # checks no source address) and distributes their broadcasts.
        + (["--bbmd"] if bbmd else [])
    )
    app = ServerApplication.from_args(bp_args)
    app.device_object._dcc_password = DCC_PASSWORD
    # DeviceCommunicationControlServices sets self.smap.dccEnableDisable, but
    # the Application keeps that state on its ASAP (self.asap); without this
    # alias every accepted DCC request answers device/operational-problem.
    app.smap = app.asap
    _fix_dcc_receive_filter(app.asap)

    app.add_object(
        AnalogValueObjectCmd(
            objectIdentifier=("analog-value", 1),
            objectName="av1",
            presentValue=42.0,
            relinquishDefault=42.0,
            statusFlags=[0, 0, 0, 0],
            eventState="normal",
            outOfService=False,
            units="degreesCelsius",
            covIncrement=0.5,
        )
    )
    app.add_object(
        AnalogInputObject(
            objectIdentifier=("analog-input", 1),
            objectName="ai1",
            presentValue=21.5,
            statusFlags=[0, 0, 0, 0],
            eventState="normal",
            outOfService=False,
            units="degreesCelsius",
            covIncrement=0.1,
        )
    )
    app.add_object(
        BinaryValueObjectCmd(
            objectIdentifier=("binary-value", 1),
            objectName="bv1",
            presentValue="inactive",
            relinquishDefault="inactive",
            statusFlags=[0, 0, 0, 0],
            eventState="normal",
            outOfService=False,
        )
    )
    app.add_object(
        MultiStateValueObject(
            objectIdentifier=("multi-state-value", 1),
            objectName="msv1",
            presentValue=1,
            numberOfStates=3,
            stateText=["Off", "Low", "High"],
            statusFlags=[0, 0, 0, 0],
            eventState="normal",
            outOfService=False,
        )
    )
    app.add_object(
        CharacterStringValueObject(
            objectIdentifier=("characterstring-value", 1),
            objectName="csv1",
            presentValue="hello",
            statusFlags=[0, 0, 0, 0],
            eventState="normal",
            outOfService=False,
        )
    )
    app.time_sync_log = CharacterStringValueObject(
        objectIdentifier=("characterstring-value", 2),
        objectName="last-time-sync",
        presentValue="none",
        statusFlags=[0, 0, 0, 0],
        eventState="normal",
        outOfService=False,
    )
    app.add_object(app.time_sync_log)
    for i in range(2, 2 + extra):
        # Only the commandable class notifies COV subscribers of a
        # WriteProperty (the plain local object changes silently).
        cls = AnalogValueObjectCmd if commandable else AnalogValueObject
        more = {"relinquishDefault": float(i)} if commandable else {}
        app.add_object(
            cls(
                objectIdentifier=("analog-value", i),
                objectName=f"av{i}",
                presentValue=float(i),
                statusFlags=[0, 0, 0, 0],
                eventState="normal",
                outOfService=False,
                units="degreesCelsius",
                covIncrement=1.0,
                **more,
            )
        )
    return app


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--device-id", type=int, default=3001)
    parser.add_argument("--objects", type=int, default=0,
                        help="extra analog-value objects av2.. (default 0)")
    parser.add_argument("--commandable", action="store_true",
                        help="the extra analog values are commandable (COV on writes)")
    parser.add_argument("--bbmd", action="store_true",
                        help="also a BBMD (empty BDT) accepting foreign devices")
    parser.add_argument("--address", default="127.0.0.1/8",
                        help="IP/PREFIX to bind (default 127.0.0.1/8; another only inside a test's network namespace)")
    args = parser.parse_args()

    app = build_app(args.port, args.device_id, args.objects, args.commandable, args.bbmd, args.address)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    # Application.from_args binds the UDP sockets asynchronously; give the
    # endpoint tasks a moment to run before announcing readiness.
    for _ in range(1000):
        if _bound(app):
            break
        await asyncio.sleep(0.01)
    else:
        print(f"bacpypes3_server: could not bind {args.address}:{args.port}", file=sys.stderr)
        app.close()
        return 1
    print("READY", flush=True)

    await stop.wait()
    app.close()
    return 0


def _bound(app: Application) -> bool:
    """True once every link layer's UDP transports exist."""
    try:
        for link in app.link_layers.values():
            server = getattr(link, "server", None)
            if server is None:
                return False
            # IPv4DatagramServer keeps its transports on local_transport /
            # broadcast_transport after the endpoints are created.
            if getattr(server, "local_transport", None) is None:
                return False
            if (getattr(server, "broadcast_address", None) is not None
                    and getattr(server, "broadcast_transport", None) is None):
                return False
        return True
    except Exception:  # pragma: no cover - defensive
        return False


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
