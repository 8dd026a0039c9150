#!/usr/bin/env python3
"""Drive a Trellis device (or any BACnet/IP device) as a third-party CLIENT.

One of two real client stacks, bacpypes3 or rusty-bacnet's BACnetClient, runs
a fixed list of steps against the target device and prints one JSON line per
step on stdout:

    {"stack": "rusty", "step": "read-av1-pv-after-write", "ok": true, "value": 23.5}

The last line is always the summary, ``{"step": "summary", "ok": ..., "failed": [...]}``.
When the Who-Is gets no I-Am, a ``{"step": "stopped", "ok": false, "error": ...}``
line replaces the other steps.
Exit status 0 when every step succeeded, 1 otherwise (the failing steps carry
``"ok": false`` and an ``"error"``), 2 on bad arguments.

Steps, in order (object names as on the demo-building plugin):

* ``whois``: a Who-Is for the device instance sent unicast to the target; ok
  when an I-Am for ``--device`` came back.
* ``read-ai1-pv``: analog-input,1 present-value.
* ``write-av1-pv-p8`` (23.5 at priority 8), ``read-av1-pv-after-write``,
  ``read-av1-priority-array`` (whole array, ``slot8`` is element 8),
  ``read-av1-priority-array-8`` (array index 8).
* ``relinquish-av1-p8`` (Null at priority 8), ``read-av1-pv-after-relinquish``,
  ``read-av1-priority-array-8-after-relinquish`` (null).
* ``read-object-list``: device object-list, ``objects`` as "type,instance".
* ``rpm-all``, one per object of that list: ReadPropertyMultiple of ``all``;
  ``count``, ``properties`` (names in answer order), ``values`` (JSON-ified),
  ``errors`` (per-property access errors; ok only when there are none) and,
  bacpypes3 only, ``undecoded`` (properties its object model has no type for).
* ``wpm``: one WritePropertyMultiple of analog-value,1 present-value 24.5 and
  binary-value,1 present-value active at priority 9, then both read back
  (``av1``, ``bv1``); ``wpm-relinquish`` writes Null to both at priority 9 and
  reads back the priority-array slots (``av1_slot9``, ``bv1_slot9``).
* ``read-unknown-object``: analog-value,99 present-value; ok when the device
  answered Error object/unknown-object (``error``: {kind, class, code}).

Values are JSON: REAL as a number, enumerations as bacpypes3 names them
(``"degrees-celsius"``) or rusty's integers, bit strings as a list of 0/1,
object identifiers as ``"analog-value,1"``, Null as null.

Loopback only: the client binds 127.0.0.1 (bacpypes3 also the broadcast
socket 127.255.255.255:PORT) and talks only to the target.

    .venv-peers/bin/python host/tests/peers/probe_client.py --stack bacpypes3 \
        --target 127.0.0.1:47808 --device 389001 --port 47921
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import traceback
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

STEP_TIMEOUT = 30.0  # seconds per step; the stacks retry inside it

AV1_WRITE = 23.5
WPM_AV1 = 24.5


def emit(line: Dict[str, Any]) -> None:
    print(json.dumps(line, sort_keys=False), flush=True)


def floats_equal(a: Any, b: float) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool) and abs(a - b) < 1e-4


class Runner:
    """Runs steps, prints their JSON lines and remembers the failures."""

    def __init__(self, stack: str) -> None:
        self.stack = stack
        self.failed: List[str] = []

    async def step(self, name: str, fn: Callable[[], Awaitable[Dict[str, Any]]], **extra: Any) -> Dict[str, Any]:
        line: Dict[str, Any] = {"stack": self.stack, "step": name, **extra}
        try:
            result = await asyncio.wait_for(fn(), STEP_TIMEOUT)
            line.update(result)
            line.setdefault("ok", True)
        except asyncio.TimeoutError:
            line.update(ok=False, error=f"no answer within {STEP_TIMEOUT:.0f} s")
        except BaseException as exc:  # bacpypes3 errors are BaseException
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            line.update(ok=False, error=describe_exception(exc))
        # keep the order: stack, step, ok first
        ordered = {"stack": line.pop("stack"), "step": line.pop("step"), "ok": line.pop("ok")}
        ordered.update(line)
        emit(ordered)
        if not ordered["ok"]:
            label = name if "object" not in extra else f"{name} {extra['object']}"
            self.failed.append(label)
        return ordered

    def stop(self, why: str) -> None:
        """Give up on the remaining steps (the target is not answering)."""
        emit({"stack": self.stack, "step": "stopped", "ok": False, "error": why})
        self.failed.append("stopped")


def kebab(text: str) -> str:
    """"ObjectType.MULTI_STATE_INPUT" -> "multi-state-input"; "X.600" -> "600"."""
    m = re.fullmatch(r"[A-Za-z]+\.([A-Za-z0-9_]+)", text)
    if m:
        text = m.group(1)
    return text.lower().replace("_", "-")


# ---------------------------------------------------------------------------
# bacpypes3
# ---------------------------------------------------------------------------


def describe_exception(exc: BaseException) -> Any:
    try:
        from bacpypes3.apdu import AbortPDU, ErrorRejectAbortNack, RejectPDU

        if isinstance(exc, ErrorRejectAbortNack):
            if isinstance(exc, RejectPDU):
                return {"kind": "reject", "reason": str(exc.apduAbortRejectReason)}
            if isinstance(exc, AbortPDU):
                return {"kind": "abort", "reason": str(exc.apduAbortRejectReason)}
            ec = getattr(exc, "errorClass", None)
            code = getattr(exc, "errorCode", None)
            if ec is not None:
                return {"kind": "error", "class": str(ec), "code": str(code)}
            return {"kind": "error", "text": str(exc)}
    except ImportError:
        pass
    try:
        import rusty_bacnet as rb

        if isinstance(exc, rb.BacnetProtocolError):
            out: Dict[str, Any] = {
                "kind": "error",
                "class": kebab(repr(rb.ErrorClass.from_raw(exc.error_class))),
                "code": kebab(repr(rb.ErrorCode.from_raw(exc.error_code))),
            }
            if getattr(exc, "first_failed_write_attempt", None):
                f = exc.first_failed_write_attempt
                out["first_failed_write_attempt"] = {
                    "object": rusty_json(f["object_identifier"]),
                    "property": kebab(repr(f["property_identifier"])),
                    "index": f.get("property_array_index"),
                }
            return out
        if isinstance(exc, rb.BacnetRejectError):
            return {"kind": "reject", "reason": exc.reason}
        if isinstance(exc, rb.BacnetAbortError):
            return {"kind": "abort", "reason": exc.reason}
        if isinstance(exc, rb.BacnetTimeoutError):
            return {"kind": "timeout", "text": str(exc)}
    except ImportError:
        pass
    return {"kind": "exception", "type": type(exc).__name__, "text": str(exc), "where": traceback.format_exc(limit=3)[-600:]}


def bp_json(v: Any) -> Any:
    """A bacpypes3 value as JSON."""
    from bacpypes3.basetypes import ErrorType
    from bacpypes3.constructeddata import Any as BAny, Choice, Sequence
    from bacpypes3.primitivedata import (
        BitString,
        Boolean,
        CharacterString,
        Date,
        Enumerated,
        Null,
        ObjectIdentifier,
        ObjectType,
        OctetString,
        Time,
    )

    if v is None or isinstance(v, Null):
        return None
    if isinstance(v, ErrorType):
        return {"error": {"class": str(v.errorClass), "code": str(v.errorCode)}}
    if isinstance(v, Choice):
        choice = getattr(v, "_choice", None)
        if choice is None:
            for name, _ in getattr(v, "_elements", {}).items() if isinstance(getattr(v, "_elements", None), dict) else []:
                if getattr(v, name, None) is not None:
                    choice = name
                    break
        return bp_json(getattr(v, choice)) if choice else None
    if isinstance(v, Boolean):
        return bool(v)
    if isinstance(v, ObjectIdentifier):
        return f"{v[0]},{v[1]}"
    if isinstance(v, (Enumerated, ObjectType)):
        return str(v)
    if isinstance(v, BitString):
        return [int(b) for b in v]
    if isinstance(v, (Date, Time)):
        return str(v)
    if isinstance(v, CharacterString):
        return str(v)
    if isinstance(v, OctetString):
        return bytes(v).hex()
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        return float(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [bp_json(x) for x in v]
    if isinstance(v, BAny):
        return {"any": repr(v)}
    if isinstance(v, Sequence):
        out = {}
        for name in getattr(v, "_order", ()):
            out[name] = bp_json(getattr(v, name, None))
        return out
    return repr(v)


async def run_bacpypes3(args: argparse.Namespace, r: Runner) -> None:
    from bacpypes3.apdu import (
        ErrorRejectAbortNack,
        SimpleAckPDU,
        WritePropertyMultipleRequest,
    )
    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.basetypes import BinaryPV, ErrorType, PropertyValue, WriteAccessSpecification
    from bacpypes3.constructeddata import Any as BAny
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import Null, ObjectIdentifier, PropertyIdentifier, Real

    bp_args = SimpleArgumentParser().parse_args(
        ["--address", f"127.0.0.1/8:{args.port}", "--instance", str(args.client_instance), "--name", "trellis-probe"]
    )
    app = Application.from_args(bp_args)
    await asyncio.sleep(0.3)  # let the sockets bind
    target = Address(args.target)
    dev = args.device

    def rp(objid: str, prop: str, index: Optional[int] = None):
        return app.read_property(target, ObjectIdentifier(objid), PropertyIdentifier(prop), index)

    def wp(objid: str, prop: str, value: Any, priority: Optional[int] = None):
        return app.write_property(target, ObjectIdentifier(objid), PropertyIdentifier(prop), value, None, priority)

    async def whois():
        iams = await app.who_is(dev, dev, address=target, timeout=5)
        found = [
            {
                "device": int(i.iAmDeviceIdentifier[1]),
                "max_apdu": int(i.maxAPDULengthAccepted),
                "segmentation": str(i.segmentationSupported),
                "vendor_id": int(i.vendorID),
                "source": str(i.pduSource),
            }
            for i in iams
        ]
        if not any(f["device"] == dev for f in found):
            return {"ok": False, "found": found, "error": "no I-Am for the device within 5 s"}
        return {"ok": True, "found": found}

    async def read(objid: str, prop: str, index: Optional[int] = None, expect: Any = "any"):
        v = bp_json(await rp(objid, prop, index))
        ok = True
        if expect != "any":
            ok = floats_equal(v, expect) if isinstance(expect, float) else v == expect
        return {"ok": ok, "value": v} if expect == "any" else {"ok": ok, "value": v, "expected": expect}

    async def write(objid: str, prop: str, value: Any, priority: Optional[int]):
        ack = await wp(objid, prop, value, priority)
        return {"ack": "simple-ack" if ack is None or isinstance(ack, SimpleAckPDU) else repr(ack)}

    async def read_pa():
        v = bp_json(await rp("analog-value,1", "priority-array"))
        ok = isinstance(v, list) and len(v) == 16 and floats_equal(v[7], AV1_WRITE)
        return {"ok": ok, "value": v, "slot8": v[7] if isinstance(v, list) and len(v) >= 8 else None}

    if not (await r.step("whois", whois))["ok"]:
        r.stop(f"no I-Am from device {dev} at {args.target}: not running the other steps")
        app.close()
        return
    await r.step("read-ai1-pv", lambda: read("analog-input,1", "present-value"))
    await r.step("write-av1-pv-p8", lambda: write("analog-value,1", "present-value", Real(AV1_WRITE), 8))
    await r.step("read-av1-pv-after-write", lambda: read("analog-value,1", "present-value", expect=AV1_WRITE))
    await r.step("read-av1-priority-array", read_pa)
    await r.step("read-av1-priority-array-8", lambda: read("analog-value,1", "priority-array", 8, expect=AV1_WRITE))
    await r.step("relinquish-av1-p8", lambda: write("analog-value,1", "present-value", Null(()), 8))
    await r.step("read-av1-pv-after-relinquish", lambda: read("analog-value,1", "present-value"))
    await r.step(
        "read-av1-priority-array-8-after-relinquish", lambda: read("analog-value,1", "priority-array", 8, expect=None)
    )

    objects: List[str] = []

    async def object_list():
        v = bp_json(await rp(f"device,{dev}", "object-list"))
        objects.extend(v)
        return {"ok": f"device,{dev}" in v, "count": len(v), "objects": v}

    await r.step("read-object-list", object_list)

    for obj in objects:

        async def rpm_all(obj: str = obj):
            res = await app.read_property_multiple(target, [obj, ["all"]])
            if isinstance(res, ErrorRejectAbortNack):
                raise res
            if res is None:
                return {"ok": False, "error": "no ReadPropertyMultiple-ACK"}
            props, values, errors, undecoded, others = [], {}, [], [], []
            for oid, pid, idx, value in res:
                if f"{oid[0]},{oid[1]}" != obj:
                    others.append(f"{oid[0]},{oid[1]}")
                name = str(pid) if idx is None else f"{pid}[{idx}]"
                props.append(name)
                if isinstance(value, ErrorType):
                    errors.append({"property": name, "class": str(value.errorClass), "code": str(value.errorCode)})
                elif value is None:
                    undecoded.append(name)
                else:
                    values[name] = bp_json(value)
            out = {
                "ok": not errors and not others,
                "count": len(props),
                "properties": props,
                "values": values,
                "errors": errors,
                "undecoded": undecoded,
            }
            if others:
                out["error"] = f"answer names other objects {others}"
            return out

        await r.step("rpm-all", rpm_all, object=obj)

    def wpm_request(av: Any, bv: Any, priority: int) -> WritePropertyMultipleRequest:
        req = WritePropertyMultipleRequest(
            listOfWriteAccessSpecs=[
                WriteAccessSpecification(
                    objectIdentifier=ObjectIdentifier("analog-value,1"),
                    listOfProperties=[PropertyValue(propertyIdentifier="presentValue", value=BAny(av), priority=priority)],
                ),
                WriteAccessSpecification(
                    objectIdentifier=ObjectIdentifier("binary-value,1"),
                    listOfProperties=[PropertyValue(propertyIdentifier="presentValue", value=BAny(bv), priority=priority)],
                ),
            ]
        )
        req.pduDestination = target
        return req

    async def wpm():
        ack = await app.request(wpm_request(Real(WPM_AV1), BinaryPV("active"), 9))
        if isinstance(ack, ErrorRejectAbortNack):
            raise ack
        av = bp_json(await rp("analog-value,1", "present-value"))
        bv = bp_json(await rp("binary-value,1", "present-value"))
        return {
            "ok": floats_equal(av, WPM_AV1) and bv == "active",
            "ack": "simple-ack" if isinstance(ack, SimpleAckPDU) else repr(ack),
            "av1": av,
            "bv1": bv,
        }

    async def wpm_relinquish():
        ack = await app.request(wpm_request(Null(()), Null(()), 9))
        if isinstance(ack, ErrorRejectAbortNack):
            raise ack
        av9 = bp_json(await rp("analog-value,1", "priority-array", 9))
        bv9 = bp_json(await rp("binary-value,1", "priority-array", 9))
        return {"ok": av9 is None and bv9 is None, "av1_slot9": av9, "bv1_slot9": bv9}

    await r.step("wpm", wpm)
    await r.step("wpm-relinquish", wpm_relinquish)

    async def unknown_object():
        try:
            v = await rp("analog-value,99", "present-value")
        except ErrorRejectAbortNack as exc:
            err = describe_exception(exc)
            return {"ok": err == {"kind": "error", "class": "object", "code": "unknown-object"}, "error": err}
        return {"ok": False, "value": bp_json(v), "error": "expected Error object/unknown-object, got a value"}

    await r.step("read-unknown-object", unknown_object)

    await asyncio.sleep(0.2)
    app.close()


# ---------------------------------------------------------------------------
# rusty-bacnet
# ---------------------------------------------------------------------------


def rusty_json(v: Any) -> Any:
    """A rusty-bacnet value (PropertyValue or a plain element) as JSON."""
    import rusty_bacnet as rb

    if isinstance(v, rb.PropertyValue):
        tag = v.tag
        if tag == "null":
            return None
        if tag == "bit_string":
            d = v.value
            bits = []
            for byte in d["data"]:
                bits.extend((byte >> (7 - i)) & 1 for i in range(8))
            return bits[: len(bits) - d["unused_bits"]] if d["unused_bits"] else bits
        if tag == "octet_string":
            return bytes(v.value).hex()
        return rusty_json(v.value)
    if isinstance(v, rb.ObjectIdentifier):
        return f"{kebab(repr(v.object_type))},{v.instance}"
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, (list, tuple)):
        return [rusty_json(x) for x in v]
    if isinstance(v, dict):
        return {str(k): rusty_json(x) for k, x in v.items()}
    return repr(v)


async def run_rusty(args: argparse.Namespace, r: Runner) -> None:
    import rusty_bacnet as rb
    from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier, PropertyValue

    host, _, port = args.target.rpartition(":")
    if not host.startswith("127."):
        raise SystemExit("loopback targets only")
    target = args.target
    dev = args.device

    def oid(text: str) -> ObjectIdentifier:
        t, _, inst = text.partition(",")
        return ObjectIdentifier(getattr(ObjectType, t.upper().replace("-", "_")), int(inst))

    def pid(text: str) -> PropertyIdentifier:
        return getattr(PropertyIdentifier, text.upper().replace("-", "_"))

    def oid_from_json(text: str) -> ObjectIdentifier:
        t, _, inst = text.partition(",")
        if t.isdigit():
            return ObjectIdentifier(ObjectType.from_raw(int(t)), int(inst))
        return oid(text)

    async with BACnetClient(
        interface="127.0.0.1",
        port=args.port,
        broadcast_address="127.255.255.255",
        apdu_timeout_ms=10000,
        share_port_by_address=True,  # bind 127.0.0.1 itself, not 0.0.0.0
    ) as c:

        async def whois():
            await c.who_is_directed(target, dev, dev)
            found = None
            for _ in range(50):
                found = await c.get_device(dev)
                if found is not None:
                    break
                await asyncio.sleep(0.1)
            if found is None:
                return {"ok": False, "found": [], "error": "no I-Am within 5 s"}
            return {
                "ok": True,
                "found": [
                    {
                        "device": found.object_identifier.instance,
                        "max_apdu": found.max_apdu_length,
                        "segmentation": kebab(repr(found.segmentation_supported)),
                        "vendor_id": found.vendor_id,
                        "mac": bytes(found.mac_address).hex(),
                    }
                ],
            }

        async def read(objid: str, prop: str, index: Optional[int] = None, expect: Any = "any"):
            v = rusty_json(await c.read_property(target, oid(objid), pid(prop), index))
            if expect == "any":
                return {"value": v}
            ok = floats_equal(v, expect) if isinstance(expect, float) else v == expect
            return {"ok": ok, "value": v, "expected": expect}

        async def write(objid: str, prop: str, value: PropertyValue, priority: Optional[int]):
            await c.write_property(target, oid(objid), pid(prop), value, priority)
            return {"ack": "simple-ack"}

        async def read_pa():
            v = rusty_json(await c.read_property(target, oid("analog-value,1"), pid("priority-array")))
            ok = isinstance(v, list) and len(v) == 16 and floats_equal(v[7], AV1_WRITE)
            return {"ok": ok, "value": v, "slot8": v[7] if isinstance(v, list) and len(v) >= 8 else None}

        if not (await r.step("whois", whois))["ok"]:
            r.stop(f"no I-Am from device {dev} at {args.target}: not running the other steps")
            return
        await r.step("read-ai1-pv", lambda: read("analog-input,1", "present-value"))
        await r.step("write-av1-pv-p8", lambda: write("analog-value,1", "present-value", PropertyValue.real(AV1_WRITE), 8))
        await r.step("read-av1-pv-after-write", lambda: read("analog-value,1", "present-value", expect=AV1_WRITE))
        await r.step("read-av1-priority-array", read_pa)
        await r.step("read-av1-priority-array-8", lambda: read("analog-value,1", "priority-array", 8, expect=AV1_WRITE))
        await r.step("relinquish-av1-p8", lambda: write("analog-value,1", "present-value", PropertyValue.null(), 8))
        await r.step("read-av1-pv-after-relinquish", lambda: read("analog-value,1", "present-value"))
        await r.step(
            "read-av1-priority-array-8-after-relinquish",
            lambda: read("analog-value,1", "priority-array", 8, expect=None),
        )

        objects: List[str] = []

        async def object_list():
            v = rusty_json(await c.read_property(target, oid(f"device,{dev}"), pid("object-list")))
            objects.extend(v)
            return {"ok": f"device,{dev}" in v, "count": len(v), "objects": v}

        await r.step("read-object-list", object_list)

        for obj in objects:

            async def rpm_all(obj: str = obj):
                res = await c.read_property_multiple(target, [(oid_from_json(obj), [(PropertyIdentifier.ALL, None)])])
                props, values, errors, others = [], {}, [], []
                for access in res:
                    got = rusty_json(access["object_id"])
                    if got != obj:
                        others.append(got)
                    for item in access["results"]:
                        name = kebab(repr(item["property_id"]))
                        if item["array_index"] is not None:
                            name += f"[{item['array_index']}]"
                        props.append(name)
                        if item["error"] is not None:
                            ec, code = item["error"]
                            errors.append({"property": name, "class": kebab(repr(ec)), "code": kebab(repr(code))})
                        else:
                            values[name] = rusty_json(item["value"])
                out = {
                    "ok": not errors and not others,
                    "count": len(props),
                    "properties": props,
                    "values": values,
                    "errors": errors,
                }
                if others:
                    out["error"] = f"answer names other objects {others}"
                return out

            await r.step("rpm-all", rpm_all, object=obj)

        def wpm_specs(av: PropertyValue, bv: PropertyValue, priority: int):
            return [
                (oid("analog-value,1"), [(PropertyIdentifier.PRESENT_VALUE, av, priority, None)]),
                (oid("binary-value,1"), [(PropertyIdentifier.PRESENT_VALUE, bv, priority, None)]),
            ]

        async def wpm():
            await c.write_property_multiple(target, wpm_specs(PropertyValue.real(WPM_AV1), PropertyValue.enumerated(1), 9))
            av = rusty_json(await c.read_property(target, oid("analog-value,1"), PropertyIdentifier.PRESENT_VALUE))
            bv = rusty_json(await c.read_property(target, oid("binary-value,1"), PropertyIdentifier.PRESENT_VALUE))
            return {"ok": floats_equal(av, WPM_AV1) and bv == 1, "ack": "simple-ack", "av1": av, "bv1": bv}

        async def wpm_relinquish():
            await c.write_property_multiple(target, wpm_specs(PropertyValue.null(), PropertyValue.null(), 9))
            av9 = rusty_json(await c.read_property(target, oid("analog-value,1"), PropertyIdentifier.PRIORITY_ARRAY, 9))
            bv9 = rusty_json(await c.read_property(target, oid("binary-value,1"), PropertyIdentifier.PRIORITY_ARRAY, 9))
            return {"ok": av9 is None and bv9 is None, "av1_slot9": av9, "bv1_slot9": bv9}

        await r.step("wpm", wpm)
        await r.step("wpm-relinquish", wpm_relinquish)

        async def unknown_object():
            try:
                v = await c.read_property(target, oid("analog-value,99"), PropertyIdentifier.PRESENT_VALUE)
            except rb.BacnetError as exc:
                err = describe_exception(exc)
                return {"ok": err == {"kind": "error", "class": "object", "code": "unknown-object"}, "error": err}
            return {"ok": False, "value": rusty_json(v), "error": "expected Error object/unknown-object, got a value"}

        await r.step("read-unknown-object", unknown_object)


# ---------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", choices=["bacpypes3", "rusty"], required=True)
    p.add_argument("--target", required=True, help="IP:PORT of the device (loopback)")
    p.add_argument("--device", type=int, required=True, help="device instance expected at the target")
    p.add_argument("--port", type=int, required=True, help="this client's own UDP port")
    p.add_argument("--client-instance", type=int, default=599, help="bacpypes3 client's own device instance")
    args = p.parse_args()
    host = args.target.rpartition(":")[0]
    if not host.startswith("127."):
        p.error("--target must be a 127.0.0.0/8 address")

    r = Runner(args.stack)
    try:
        asyncio.run(run_bacpypes3(args, r) if args.stack == "bacpypes3" else run_rusty(args, r))
    except BaseException as exc:  # the stack itself failed (bind, import, ...)
        if isinstance(exc, KeyboardInterrupt):
            raise
        emit({"stack": args.stack, "step": "setup", "ok": False, "error": describe_exception(exc)})
        r.failed.append("setup")
    emit({"stack": args.stack, "step": "summary", "ok": not r.failed, "failed": r.failed})
    return 0 if not r.failed else 1


if __name__ == "__main__":
    sys.exit(main())
