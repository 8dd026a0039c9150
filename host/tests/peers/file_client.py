#!/usr/bin/env python3
"""Transfer a file to and from a BACnet device as a third-party CLIENT.

One of two real client stacks, bacpypes3 or rusty-bacnet's BACnetClient,
replaces the contents of a stream File object with --size octets (a fixed
pseudo-random pattern) in AtomicWriteFile requests of --chunk octets from
position 0, reads the file back in AtomicReadFile requests of --chunk
octets until end-of-file, and compares. A chunk larger than one APDU travels
in segments. A chunk the device refuses with Abort out-of-resources (its
budget of answer octets per requester) is asked again after 0.2 s, up to 50
times. Then, when --record-file is given, it appends one record to that
record File object and reads it back.

rusty-bacnet 0.14's client does not Segment-ACK the first segment of a
segmented answer (Clause 5.4.4.3 asks it to, and the server sends that
segment alone until it does): each segmented read waits for the server's
segment timeout (2 s) and the resend. Run it with large chunks (60 KiB) so
a megabyte takes 18 reads, not 256.

Prints one JSON line on stdout:

    {"stack": "rusty", "ok": true, "written": 1048576, "read": 1048576,
     "equal": true, "refusals": 3, "record": "…"}

Exit status 0 when the contents read back equal those written (and the
record came back), 1 otherwise.

Loopback only.

    .venv-peers/bin/python host/tests/peers/file_client.py --stack rusty \
        --target 127.0.0.1:47808 --device 389005 --port 47921 --file 1 --size 1048576
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from typing import Any, Awaitable, Callable, Dict, Optional

RETRIES = 50
PAUSE = 0.2


def pattern(size: int) -> bytes:
    """The same octets as host/tests/it/files.rs's `megabyte()`."""
    return bytes(((i * 2654435761) & 0xFFFFFFFF) >> 13 & 0xFF for i in range(size))


class Refusals:
    count = 0


async def retrying(call: Callable[[], Awaitable[Any]], is_refusal: Callable[[BaseException], bool]) -> Any:
    for attempt in range(RETRIES + 1):
        try:
            return await call()
        except Exception as e:  # noqa: BLE001 - the stacks raise their own types
            if attempt == RETRIES or not is_refusal(e):
                raise
            Refusals.count += 1
            await asyncio.sleep(PAUSE)


async def run_bacpypes3(args: argparse.Namespace, data: bytes) -> Dict[str, Any]:
    from bacpypes3.apdu import AbortPDU, AtomicReadFileRequest, AtomicWriteFileRequest
    from bacpypes3.app import Application
    from bacpypes3.argparse import SimpleArgumentParser
    from bacpypes3.basetypes import (
        AtomicReadFileRequestAccessMethodChoice,
        AtomicReadFileRequestAccessMethodChoiceRecordAccess,
        AtomicReadFileRequestAccessMethodChoiceStreamAccess,
        AtomicWriteFileRequestAccessMethodChoice,
        AtomicWriteFileRequestAccessMethodChoiceRecordAccess,
        AtomicWriteFileRequestAccessMethodChoiceStreamAccess,
    )
    from bacpypes3.pdu import Address
    from bacpypes3.primitivedata import ObjectIdentifier, OctetString, PropertyIdentifier, Unsigned

    bp_args = SimpleArgumentParser().parse_args(
        ["--address", f"127.0.0.1/8:{args.port}", "--instance", "3999001", "--name", "trellis-file-client"]
    )
    app = Application.from_args(bp_args)
    await asyncio.sleep(0.3)
    target = Address(args.target)
    # Learn the device's segmentation and APDU size, as a front end does.
    await app.who_is(args.device, args.device, address=target, timeout=5)
    file_id = ObjectIdentifier(f"file,{args.file}")

    def refusal(e: BaseException) -> bool:
        return "out-of-resources" in str(e) or "outOfResources" in str(e) or isinstance(e, AbortPDU)

    await app.write_property(target, file_id, PropertyIdentifier("file-size"), Unsigned(0))
    for at in range(0, len(data), args.chunk):
        req = AtomicWriteFileRequest(
            fileIdentifier=file_id,
            accessMethod=AtomicWriteFileRequestAccessMethodChoice(
                streamAccess=AtomicWriteFileRequestAccessMethodChoiceStreamAccess(
                    fileStartPosition=at, fileData=OctetString(data[at : at + args.chunk])
                )
            ),
            destination=target,
        )
        ack = await retrying(lambda: app.request(req), refusal)
        if int(ack.fileStartPosition) != at:
            raise RuntimeError(f"written at {ack.fileStartPosition}, not {at}")

    back = bytearray()
    while True:
        req = AtomicReadFileRequest(
            fileIdentifier=file_id,
            accessMethod=AtomicReadFileRequestAccessMethodChoice(
                streamAccess=AtomicReadFileRequestAccessMethodChoiceStreamAccess(
                    fileStartPosition=len(back), requestedOctetCount=args.chunk
                )
            ),
            destination=target,
        )
        ack = await retrying(lambda: app.request(req), refusal)
        back.extend(bytes(ack.accessMethod.streamAccess.fileData))
        if ack.endOfFile or len(back) > len(data):
            break

    record: Optional[str] = None
    if args.record_file is not None:
        log_id = ObjectIdentifier(f"file,{args.record_file}")
        line = b"bacpypes3,was,here"
        req = AtomicWriteFileRequest(
            fileIdentifier=log_id,
            accessMethod=AtomicWriteFileRequestAccessMethodChoice(
                recordAccess=AtomicWriteFileRequestAccessMethodChoiceRecordAccess(
                    fileStartRecord=-1, recordCount=1, fileRecordData=[OctetString(line)]
                )
            ),
            destination=target,
        )
        ack = await app.request(req)
        at = int(ack.fileStartRecord)
        req = AtomicReadFileRequest(
            fileIdentifier=log_id,
            accessMethod=AtomicReadFileRequestAccessMethodChoice(
                recordAccess=AtomicReadFileRequestAccessMethodChoiceRecordAccess(
                    fileStartRecord=at, requestedRecordCount=1
                )
            ),
            destination=target,
        )
        ack = await app.request(req)
        record = bytes(ack.accessMethod.recordAccess.fileRecordData[0]).decode()
    app.close()
    return {"written": len(data), "read": len(back), "equal": bytes(back) == data, "record": record}


# rusty-bacnet's client hands back an ACK's service data as it came: decoded
# here, tag by tag (Clause 20.2.1).


def read_tag(buf: bytes, i: int) -> tuple[int, bool, str, int, int]:
    """(number, context, kind, length or boolean, index after the header)."""
    b = buf[i]
    number, context, lvt = b >> 4, bool(b & 0x08), b & 0x07
    i += 1
    if number == 15:
        number, i = buf[i], i + 1
    if context and lvt == 6:
        return number, context, "opening", 0, i
    if context and lvt == 7:
        return number, context, "closing", 0, i
    if not context and number == 1:  # Boolean: the value is the LVT
        return number, context, "primitive", lvt, i
    length = lvt
    if lvt == 5:
        length, i = buf[i], i + 1
        if length == 254:
            length, i = int.from_bytes(buf[i : i + 2], "big"), i + 2
        elif length == 255:
            length, i = int.from_bytes(buf[i : i + 4], "big"), i + 4
    return number, context, "primitive", length, i


def rusty_read_ack(buf: bytes) -> Dict[str, Any]:
    """AtomicReadFile-ACK: end-of-file, then the stream's or records' data."""
    _, _, _, eof, i = read_tag(buf, 0)
    method, _, kind, _, i = read_tag(buf, i)
    assert kind == "opening", buf[:16]
    _, _, _, n, i = read_tag(buf, i)
    start, i = int.from_bytes(buf[i : i + n], "big", signed=True), i + n
    out: Dict[str, Any] = {"end_of_file": bool(eof), "start": start}
    if method == 0:
        _, _, _, n, i = read_tag(buf, i)
        out["file_data"] = buf[i : i + n]
        return out
    _, _, _, n, i = read_tag(buf, i)
    i += n  # returnedRecordCount
    records = []
    while True:
        _, _, kind, n, j = read_tag(buf, i)
        if kind == "closing":
            break
        records.append(buf[j : j + n])
        i = j + n
    out["file_record_data"] = records
    return out


def rusty_write_ack(buf: bytes) -> int:
    """AtomicWriteFile-ACK: the position or record written at."""
    _, _, _, n, i = read_tag(buf, 0)
    return int.from_bytes(buf[i : i + n], "big", signed=True)


async def run_rusty(args: argparse.Namespace, data: bytes) -> Dict[str, Any]:
    from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier, PropertyValue

    target = args.target
    file_id = ObjectIdentifier(ObjectType.FILE, args.file)

    def refusal(e: BaseException) -> bool:
        return "out-of-resources" in str(e).lower().replace("_", "-") or "outofresources" in str(e).lower()

    async with BACnetClient(
        interface="127.0.0.1",
        port=args.port,
        broadcast_address="127.255.255.255",
        apdu_timeout_ms=10000,
        share_port_by_address=True,
    ) as c:
        # Learn the device's segmentation and APDU size, as a front end does.
        await c.who_is_directed(target, args.device, args.device)
        for _ in range(50):
            if await c.get_device(args.device) is not None:
                break
            await asyncio.sleep(0.1)
        await c.write_property(target, file_id, PropertyIdentifier.FILE_SIZE, PropertyValue.unsigned(0))
        for at in range(0, len(data), args.chunk):
            chunk = data[at : at + args.chunk]
            written = rusty_write_ack(
                await retrying(
                    lambda: c.atomic_write_file(target, file_id, "stream", start_position=at, file_data=chunk),
                    refusal,
                )
            )
            if written != at:
                raise RuntimeError(f"written at {written!r}, not {at}")
        back = bytearray()
        while True:
            ack = rusty_read_ack(
                await retrying(
                    lambda: c.atomic_read_file(
                        target, file_id, "stream", start_position=len(back), requested_octet_count=args.chunk
                    ),
                    refusal,
                )
            )
            back.extend(bytes(ack["file_data"]))
            if ack["end_of_file"] or len(back) > len(data):
                break
        record: Optional[str] = None
        if args.record_file is not None:
            log_id = ObjectIdentifier(ObjectType.FILE, args.record_file)
            line = b"rusty,was,here"
            at = rusty_write_ack(
                await c.atomic_write_file(
                    target, log_id, "record", start_record=-1, record_count=1, file_record_data=[line]
                )
            )
            ack = rusty_read_ack(
                await c.atomic_read_file(target, log_id, "record", start_record=at, requested_record_count=1)
            )
            record = bytes(ack["file_record_data"][0]).decode()
    return {"written": len(data), "read": len(back), "equal": bytes(back) == data, "record": record}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stack", choices=["bacpypes3", "rusty"], required=True)
    p.add_argument("--target", required=True, help="IP:PORT of the device (loopback)")
    p.add_argument("--device", type=int, required=True)
    p.add_argument("--port", type=int, required=True, help="the client's own UDP port")
    p.add_argument("--file", type=int, required=True, help="instance of a writable stream File object")
    p.add_argument("--record-file", type=int, help="instance of a writable record File object")
    p.add_argument("--size", type=int, default=1 << 20)
    p.add_argument("--chunk", type=int, default=4096)
    args = p.parse_args()
    if not args.target.startswith("127."):
        print("loopback targets only", file=sys.stderr)
        return 2
    data = pattern(args.size)
    runner = run_rusty if args.stack == "rusty" else run_bacpypes3
    try:
        result = asyncio.run(asyncio.wait_for(runner(args, data), 300))
        ok = result["equal"] and (args.record_file is None or result["record"] is not None)
        result.update({"stack": args.stack, "ok": ok, "refusals": Refusals.count})
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        result = {"stack": args.stack, "ok": False, "error": f"{type(e).__name__}: {e}", "refusals": Refusals.count}
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
