"""Third-party clients creating and deleting a device's objects (CreateObject, DeleteObject).

- rusty: rusty-bacnet's BACnetClient creates an analog-value by type with
  an Object_Name and a Present_Value, and binary-value,30 by identifier;
  subscribes to COV on both (unconfirmed, 10 minutes, process 7) so that a
  later deletion has a subscription to end; reads the new analog value
  back; asks for a second object with the same name (refused,
  duplicate-name) and to delete the configured analog-value,1 (refused).
- bacpypes3: sends its own CreateObjectRequest for a multi-state-value
  with State_Text (four states) and Present_Value 4 as initial values,
  reads Number_Of_States and Present_Value, deletes it with its
  DeleteObjectRequest and reads it again (unknown-object).

Prints one JSON line on stdout. Exit status 0 when every request that
should succeed did, 1 otherwise.

Loopback only.

    .venv-peers/bin/python host/tests/peers/lifecycle_client.py --stack rusty \
        --target 127.0.0.1:47808 --port 47809
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from typing import Any, Dict


def ack_identifier(raw: bytes) -> str:
    """rusty-bacnet hands back the CreateObject-ACK as it came: an
    application-tagged BACnetObjectIdentifier (0xC4, then 4 octets)."""
    ack = bytes(raw)
    if len(ack) != 5 or ack[0] != 0xC4:
        raise ValueError(f"CreateObject-ACK {ack.hex()}: not an object identifier")
    word = int.from_bytes(ack[1:], "big")
    return f"{word >> 22},{word & 0x3FFFFF}"


async def run_rusty(args: argparse.Namespace) -> Dict[str, Any]:
    from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier, PropertyValue

    async with BACnetClient(
        interface="127.0.0.1",
        port=args.port,
        broadcast_address="127.255.255.255",
        apdu_timeout_ms=5000,
    ) as c:
        out: Dict[str, Any] = {"acks": []}
        name = (PropertyIdentifier.OBJECT_NAME, PropertyValue.character_string("rusty-setpoint"), None, None)
        value = (PropertyIdentifier.PRESENT_VALUE, PropertyValue.real(19.5), None, None)
        ack = ack_identifier(await c.create_object(args.target, ObjectType.ANALOG_VALUE, [name, value]))
        out["acks"].append(ack)
        setpoint = ObjectIdentifier(ObjectType.ANALOG_VALUE, int(ack.split(",")[1]))
        override = ObjectIdentifier(ObjectType.BINARY_VALUE, 30)
        out["acks"].append(ack_identifier(await c.create_object(args.target, override)))
        for o in (setpoint, override):
            await c.subscribe_cov(args.target, 7, o, False, 600)
        pv = await c.read_property(args.target, setpoint, PropertyIdentifier.PRESENT_VALUE)
        out["present_value"] = float(pv.value)
        read_name = await c.read_property(args.target, setpoint, PropertyIdentifier.OBJECT_NAME)
        out["name"] = str(read_name.value)
        try:
            await c.create_object(args.target, ObjectType.ANALOG_VALUE, [name])
            out["duplicate_name"] = "accepted"
        except Exception as e:  # noqa: BLE001 - the stack raises its own types
            out["duplicate_name"] = str(e)
        try:
            await c.delete_object(args.target, ObjectIdentifier(ObjectType.ANALOG_VALUE, 1))
            out["delete_configured"] = "accepted"
        except Exception as e:  # noqa: BLE001
            out["delete_configured"] = str(e)
        return out


async def run_bacpypes3(args: argparse.Namespace) -> Dict[str, Any]:
    from bacpypes3.apdu import CreateObjectRequest, DeleteObjectRequest, ErrorRejectAbortNack
    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.basetypes import CreateObjectRequestObjectSpecifier, PropertyValue
    from bacpypes3.constructeddata import Any as AnyValue
    from bacpypes3.constructeddata import ArrayOf
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import CharacterString, ObjectType, Unsigned

    bp_args = SimpleArgumentParser().parse_args(
        ["--address", f"127.0.0.1/8:{args.port}", "--instance", "3999011", "--name", "trellis-lifecycle-client"]
    )
    app = Application.from_args(bp_args)
    await asyncio.sleep(0.3)
    target = Address(args.target)
    out: Dict[str, Any] = {}

    def initial(prop: str, value: Any) -> PropertyValue:
        return PropertyValue(propertyIdentifier=prop, value=AnyValue(value))

    states = ArrayOf(CharacterString)(["Off", "Low", "High", "Boost"])
    request = CreateObjectRequest(
        objectSpecifier=CreateObjectRequestObjectSpecifier(objectType=ObjectType("multi-state-value")),
        listOfInitialValues=[
            initial("object-name", CharacterString("bacpypes3-fan-mode")),
            initial("state-text", states),
            initial("present-value", Unsigned(4)),
        ],
        destination=target,
    )
    ack = await app.request(request)
    created = ack.objectIdentifier
    out["created"] = f"{created[0]},{created[1]}"
    out["number_of_states"] = int(await app.read_property(target, created, "number-of-states"))
    out["present_value"] = int(await app.read_property(target, created, "present-value"))
    out["state_text"] = [str(s) for s in await app.read_property(target, created, "state-text")]
    await app.request(DeleteObjectRequest(objectIdentifier=created, destination=target))
    try:
        await app.read_property(target, created, "present-value")
        out["after_delete"] = "still there"
    except ErrorRejectAbortNack as e:
        out["after_delete"] = str(e)
    app.close()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stack", choices=["bacpypes3", "rusty"], required=True)
    p.add_argument("--target", required=True, help="IP:PORT of the device")
    p.add_argument("--port", type=int, required=True, help="our own UDP port on 127.0.0.1")
    args = p.parse_args()
    runner = {"rusty": run_rusty, "bacpypes3": run_bacpypes3}[args.stack]
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
