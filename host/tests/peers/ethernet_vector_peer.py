#!/usr/bin/env python3
"""A BACnet Ethernet station made of raw frames: replays bacnet-stack's
golden capture (``ethernet-bacnet-stack-whois-iam.pcapng``) on a network
interface and decodes the answers with its own parser, independent of
Trellis's codec. Linux only (``AF_PACKET``), needs CAP_NET_RAW.

Steps, one JSON line each:

* ``noise``: the capture's IPv6 frame (EtherType 0x86DD) sent as it is:
  not BACnet, to be ignored by every BACnet station.
* ``who-is-golden``: the capture's Who-Is frame sent octet for octet
  (25 octets, not padded, source MAC 76:4a:ac:d4:06:a2); the I-Ams heard
  within ``--wait`` seconds are decoded (802.3 length, LLC 82 82 03, NPDU,
  I-Am) and their device instances listed.
* ``who-is-padded``: the same Who-Is padded to the 60-octet minimum frame
  (as a NIC pads it) from another source MAC: padding must not be taken
  for part of the NPDU.
* ``who-is-from-a-group-address``: the Who-Is with a multicast source MAC,
  which no station has: nobody may answer it.

The last line is ``{"step": "summary", "ok": ..., "failed": [...]}``; exit
0 when every step heard every device in ``--devices``.

    python ethernet_vector_peer.py --interface v0 --pcapng PATH --devices 7501,7502
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import struct
import sys
import time
from typing import Dict, List, Optional, Tuple

ETH_P_ALL = 0x0003
BROADCAST = b"\xff" * 6


def pcapng_frames(path: str) -> List[bytes]:
    """The packet data of every Enhanced Packet Block (little-endian files)."""
    data = open(path, "rb").read()
    frames, at = [], 0
    while at + 12 <= len(data):
        block_type, block_len = struct.unpack_from("<II", data, at)
        if block_len < 12 or at + block_len > len(data):
            raise ValueError(f"bad pcapng block at {at}")
        if block_type == 6:  # Enhanced Packet Block
            captured = struct.unpack_from("<I", data, at + 20)[0]
            frames.append(data[at + 28 : at + 28 + captured])
        at += block_len
    return frames


def decode_i_am(frame: bytes) -> Optional[Tuple[bytes, int, str]]:
    """(destination MAC, device instance, problem-or-empty) of a BACnet
    I-Am frame; None for anything else. Written from Clause 7 and 20.1,
    not from any stack's code."""
    if len(frame) < 17:
        return None
    destination, length = frame[0:6], struct.unpack_from(">H", frame, 12)[0]
    if length >= 0x0600:  # an EtherType: not 802.3
        return None
    body = frame[14 : 14 + length]
    if len(body) != length:
        return (destination, -1, f"length field {length} runs past the frame ({len(frame)} octets)")
    if body[0:2] != b"\x82\x82":
        return None
    if body[2] != 0x03:
        return (destination, -1, f"LLC control {body[2]:#x}, not UI")
    npdu = body[3:]
    if len(npdu) < 2 or npdu[0] != 0x01:
        return (destination, -1, "not an NPDU of version 1")
    control, at = npdu[1], 2
    if control & 0x80:
        return None  # a network-layer message
    if control & 0x20:  # DNET, DLEN, DADR
        dlen = npdu[at + 2]
        at += 3 + dlen
    if control & 0x08:  # SNET, SLEN, SADR
        slen = npdu[at + 2]
        at += 3 + slen
    if control & 0x20:
        at += 1  # hop count
    apdu = npdu[at:]
    if len(apdu) < 7 or apdu[0] != 0x10 or apdu[1] != 0x00:
        return None
    if apdu[2] != 0xC4:  # application tag 12 (object identifier), length 4
        return (destination, -1, "I-Am without an object identifier first")
    oid = struct.unpack_from(">I", apdu, 3)[0]
    if oid >> 22 != 8:
        return (destination, -1, f"I-Am of object type {oid >> 22}")
    return (destination, oid & 0x3FFFFF, "")


def listen(sock: socket.socket, seconds: float, ours: bytes) -> Tuple[Dict[int, str], List[str]]:
    """I-Ams heard for `seconds`: instance → how it was addressed."""
    heard: Dict[int, str] = {}
    problems: List[str] = []
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return heard, problems
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            continue
        frame, address = sock.recvfrom(65535)
        if address[2] == socket.PACKET_OUTGOING:
            continue
        decoded = decode_i_am(frame)
        if decoded is None:
            continue
        destination, instance, problem = decoded
        if problem:
            problems.append(problem)
        elif destination in (BROADCAST, ours):
            heard[instance] = "broadcast" if destination == BROADCAST else "unicast"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interface", required=True)
    parser.add_argument("--pcapng", required=True)
    parser.add_argument("--devices", required=True, help="device instances expected to answer, A,B,…")
    parser.add_argument("--wait", type=float, default=3.0)
    args = parser.parse_args()
    want = sorted(int(d) for d in args.devices.split(","))

    frames = pcapng_frames(args.pcapng)
    who_is = next(f for f in frames if f[14:17] == b"\x82\x82\x03" and f[17 + 6 : 17 + 8] == b"\x10\x08")
    noise = next(f for f in frames if f[12:14] == b"\x86\xdd")

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((args.interface, ETH_P_ALL))
    failed: List[str] = []

    def report(step: str, ok: bool, **fields: object) -> None:
        if not ok:
            failed.append(step)
        line = {"step": step, "ok": ok}
        line.update(fields)
        print(json.dumps(line), flush=True)

    sock.send(noise)
    report("noise", True, octets=len(noise))

    heard, problems = (sock.send(who_is), listen(sock, args.wait, who_is[6:12]))[1]
    report("who-is-golden", sorted(heard) == want and not problems, octets=len(who_is), heard=heard, problems=problems)

    other = bytes.fromhex("02000000fe01")
    padded = who_is[0:6] + other + who_is[12:]
    padded += bytes(60 - len(padded))
    heard, problems = (sock.send(padded), listen(sock, args.wait, other))[1]
    report("who-is-padded", sorted(heard) == want and not problems, octets=len(padded), heard=heard, problems=problems)

    group = bytes.fromhex("030000000001")
    spoofed = who_is[0:6] + group + who_is[12:]
    heard, problems = (sock.send(spoofed), listen(sock, args.wait, group))[1]
    report("who-is-from-a-group-address", not heard and not problems, heard=heard, problems=problems)

    report("summary", not failed, failed=failed)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
