#!/usr/bin/env python3
"""Reach devices behind a BACnet router (our gateway's) with a third-party
client stack, and print one JSON line per step:

    {"stack": "bacpypes3", "step": "read-device-1002", "ok": true, "value": "device,1002"}

The last line is ``{"step": "summary", "ok": ..., "failed": [...]}``. Exit
status 0 when every step succeeded, 1 otherwise, 2 on bad arguments.

* ``bacpypes3``: route-aware addresses (``NET:0xMAC@ROUTER``, the setting
  ``BACPYPES_ROUTE_AWARE``): for each device, a read of its Device object's
  Object_Identifier; then, on the first device, a WriteProperty of
  analog-value,1 present-value 23.5 at priority 8, the read-back, and the
  same property on the second device (not written).
  Then a ranged Who-Is sent as a remote broadcast to the devices' network
  through the router (only the first device answers), and a COV
  subscription through the router: the initial notification, a write, and
  the notification that carries the new value.
* ``rusty``: a global Who-Is broadcast (the client shares the router's UDP
  port on another loopback address, so the router hears it), the I-Ams
  collected with their SNET/SADR, then for each device a read by instance
  (``read_property_from_device``: the client routes it through the router
  that forwarded the I-Am); a ranged global Who-Is (only the second device
  answers); a WriteProperty by instance through the router and the
  read-back. (rusty's ``subscribe_cov`` takes only an ``ip:port`` address,
  so it cannot subscribe to a device behind a router.)

A device's MAC on the virtual network is its instance in three octets;
on another network (Ethernet: the interface's six octets) ``--macs`` gives them.

    .venv-peers/bin/python host/tests/peers/routed_client.py --stack bacpypes3 \
        --router 127.0.0.1:47808 --network 1001 --devices 1001,1002 --local 127.0.0.3:47950
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback
from typing import Any, Dict, List

STEP_TIMEOUT = 20.0


class Steps:
    def __init__(self, stack: str) -> None:
        self.stack = stack
        self.failed: List[str] = []

    def report(self, step: str, ok: bool, **fields: Any) -> None:
        if not ok:
            self.failed.append(step)
        line: Dict[str, Any] = {"stack": self.stack, "step": step, "ok": ok}
        line.update(fields)
        print(json.dumps(line, default=str), flush=True)

    async def run(self, step: str, coro: Any) -> Any:
        """The coroutine's value; a failure is reported here and gives FAILED."""
        try:
            return await asyncio.wait_for(coro, STEP_TIMEOUT)
        except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
            self.report(step, False, error=f"{type(e).__name__}: {e}", trace=traceback.format_exc(limit=3))
            return FAILED


FAILED = object()


def mac_hex(instance: int) -> str:
    return "0x%06x" % instance


async def with_bacpypes3(args: argparse.Namespace, steps: Steps) -> None:
    os.environ["BACPYPES_ROUTE_AWARE"] = "true"
    from bacpypes3 import settings

    settings.route_aware = True
    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import ObjectIdentifier, Real

    parsed = SimpleArgumentParser().parse_args(["--address", args.local, "--instance", "3999"])
    app = Application.from_args(parsed)
    try:
        devices = [int(d) for d in args.devices.split(",")]
        macs = ["0x" + m for m in args.macs.split(",")] if args.macs else [mac_hex(d) for d in devices]
        addresses = {d: Address(f"{args.network}:{mac}@{args.router}") for d, mac in zip(devices, macs)}
        for d in devices:
            value = await steps.run(
                f"read-device-{d}",
                app.read_property(addresses[d], ObjectIdentifier(f"device,{d}"), "object-identifier"),
            )
            if value is not FAILED:
                got = f"{value[0]},{value[1]}"
                steps.report(f"read-device-{d}", got == f"device,{d}", value=got)
        first, second = devices[0], devices[1]
        av1 = ObjectIdentifier("analog-value,1")
        done = await steps.run(
            "write-av1-p8", app.write_property(addresses[first], av1, "present-value", Real(23.5), priority=8)
        )
        if done is not FAILED:
            steps.report("write-av1-p8", True)
        value = await steps.run("read-av1-after-write", app.read_property(addresses[first], av1, "present-value"))
        if value is not FAILED:
            steps.report("read-av1-after-write", abs(float(value) - 23.5) < 1e-6, value=float(value))
        value = await steps.run("read-av1-other-device", app.read_property(addresses[second], av1, "present-value"))
        if value is not FAILED:
            steps.report("read-av1-other-device", abs(float(value) - 23.5) > 1e-6, value=float(value))
        # A ranged Who-Is to the virtual network (a remote broadcast, DNET
        # and no DADR, sent to the router): only the first device answers.
        remote_broadcast = Address(f"{args.network}:*@{args.router}")
        i_ams = await steps.run("who-is-range", app.who_is(first, first, remote_broadcast, timeout=3))
        if i_ams is not FAILED:
            found = sorted(i.iAmDeviceIdentifier[1] for i in i_ams)
            steps.report("who-is-range", found == [first], found=found)
        await cov_through_router(app, addresses[first], av1, steps)
    finally:
        app.close()


async def cov_through_router(app: Any, address: Any, av1: Any, steps: Steps) -> None:
    """Subscribe (confirmed notifications) to analog-value,1 through the
    router, take the initial notification, write a new value and wait for
    the notification that carries it."""
    from bacpypes3.primitivedata import Real

    async def subscribe_and_change() -> List[float]:
        seen: List[float] = []
        async with app.change_of_value(address, av1, 4711, True, 120) as scm:
            while True:
                prop, value = await scm.get_value()
                if str(prop) == "present-value":
                    seen.append(float(value))
                    break
            await app.write_property(address, av1, "present-value", Real(24.5), priority=8)
            while True:
                prop, value = await scm.get_value()
                if str(prop) == "present-value":
                    seen.append(float(value))
                    if abs(float(value) - 24.5) < 1e-6:
                        return seen

    seen = await steps.run("cov-through-router", subscribe_and_change())
    if seen is not FAILED:
        steps.report("cov-through-router", seen[0] == 23.5 and seen[-1] == 24.5, values=seen)


async def with_rusty(args: argparse.Namespace, steps: Steps) -> None:
    from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier, PropertyValue

    interface, port = args.local.split(":")
    devices = [int(d) for d in args.devices.split(",")]
    async with BACnetClient(
        interface=interface,
        port=int(port),
        broadcast_address="127.255.255.255",
        apdu_timeout_ms=3000,
        share_port_by_address=True,
    ) as client:
        found = await steps.run("who-is-global", client.discover(timeout_ms=2000))
        if found is FAILED:
            return
        by_instance = {}
        for d in found:
            by_instance[d.object_identifier.instance] = d
        missing = [d for d in devices if d not in by_instance]
        steps.report(
            "who-is-global",
            not missing,
            found=sorted(by_instance),
            missing=missing,
            networks=sorted({by_instance[d].source_network for d in devices if d in by_instance}),
        )
        for d in devices:
            value = await steps.run(
                f"read-device-{d}",
                client.read_property_from_device(
                    d, ObjectIdentifier(ObjectType.DEVICE, d), PropertyIdentifier.OBJECT_IDENTIFIER
                ),
            )
            if value is not FAILED:
                steps.report(f"read-device-{d}", str(d) in repr(value), value=repr(value))
        # A ranged Who-Is (global, limits = the second device): only it
        # answers. (discover() returns every device heard so far: forget them.)
        second = devices[1]
        client.clear_devices()
        found = await steps.run("who-is-range", client.discover(timeout_ms=2000, low_limit=second, high_limit=second))
        if found is not FAILED:
            got = sorted(d.object_identifier.instance for d in found)
            steps.report("who-is-range", got == [second], found=got)
        # WriteProperty through the router, by instance, then the read-back.
        av1 = ObjectIdentifier(ObjectType.ANALOG_VALUE, 1)
        done = await steps.run(
            "write-av1-p9",
            client.write_property_to_device(
                second, av1, PropertyIdentifier.PRESENT_VALUE, PropertyValue.real(31.25), priority=9
            ),
        )
        if done is not FAILED:
            steps.report("write-av1-p9", True)
        value = await steps.run(
            "read-av1-after-write",
            client.read_property_from_device(second, av1, PropertyIdentifier.PRESENT_VALUE),
        )
        if value is not FAILED:
            steps.report("read-av1-after-write", abs(float(value.value) - 31.25) < 1e-6, value=repr(value))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stack", choices=["bacpypes3", "rusty"], required=True)
    p.add_argument("--router", required=True, help="the router's B/IP address, IP:PORT")
    p.add_argument("--network", type=int, required=True, help="the devices' network number")
    p.add_argument("--devices", required=True, help="device instances, comma-separated (at least two)")
    p.add_argument("--local", required=True, help="the client's own IP:PORT (rusty: the router's port)")
    p.add_argument(
        "--macs",
        help="the devices' MACs on their network in hex, comma-separated, in --devices order "
        "(default: each instance in three octets, a virtual network's MAC)",
    )
    args = p.parse_args()
    if len(args.devices.split(",")) < 2:
        p.error("--devices needs at least two instances")
    steps = Steps(args.stack)
    run = with_bacpypes3 if args.stack == "bacpypes3" else with_rusty
    try:
        asyncio.run(run(args, steps))
    except Exception as e:  # noqa: BLE001
        steps.report("stopped", False, error=f"{type(e).__name__}: {e}", trace=traceback.format_exc(limit=5))
    ok = not steps.failed
    print(json.dumps({"step": "summary", "ok": ok, "failed": steps.failed}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
