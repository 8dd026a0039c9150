#!/usr/bin/env python3
"""Writes mstp-extended-frames.pcap: extended (COBS-encoded) MS/TP frames made
by this script, an implementation independent of the Rust codec, from the
procedures the standard prints (Annex G.3 CalcCRC32K, Annex T COBS encode).
tshark 4.0.17 dissects every frame with "Header CRC [correct]" and
"Data CRC [correct]" (Wireshark checks the CRC-32K of extended frames):

    python3 mstp-extended-frames.py && tshark -r mstp-extended-frames.pcap -V | grep CRC

Frames (all 5 -> 7):
 1. BACnet Extended Data Not Expecting Reply, data "Hello World\\n\\0" (Annex T's example data)
 2. BACnet Extended Data Expecting Reply, a 609-octet NPDU: WriteProperty AV1 PV, octet string of 590
 3. the same with a 518-octet NPDU ending in exactly two 254-octet COBS blocks
 4. the same with the largest NPDU, 1497 octets
"""
import struct

T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0xEB31D82E if c & 1 else c >> 1
    T.append(c)


def crc32k(data, c=0xFFFFFFFF):
    for d in data:
        c = (c >> 8) ^ T[(c ^ d) & 0xFF]
    return c


def cobs(data):
    out, ci, code, last = bytearray([0]), 0, 1, 0
    for b in data:
        if b:
            out.append(b ^ 0x55)
            code += 1
            if code != 255:
                continue
        last = code
        out[ci] = code ^ 0x55
        ci = len(out)
        out.append(0)
        code = 1
    if last == 255 and code == 1:
        out.pop()
    else:
        out[ci] = code ^ 0x55
    return bytes(out)


def header_crc(h):
    c = 0xFF
    for d in h:
        c ^= d
        for _ in range(8):
            c = (c >> 1) ^ 0x81 if c & 1 else c >> 1
    return (~c) & 0xFF


def frame(frame_type, dest, src, data):
    enc = cobs(data)
    field = enc + cobs(struct.pack("<I", (~crc32k(enc)) & 0xFFFFFFFF))
    length = len(field) - 2
    h = bytes([frame_type, dest, src, length >> 8, length & 0xFF])
    return b"\x55\xff" + h + bytes([header_crc(h)]) + field


def write_property_npdu(value_len):
    """NPDU 01 04, WriteProperty analog-value,1 present-value, an octet string."""
    val = bytes((i * 7 + 1) % 256 for i in range(value_len))
    if value_len == 499:  # all non-zero, so the NPDU ends with a 508-octet run
        val = bytes((i % 255) + 1 for i in range(value_len))
    apdu = bytes([0x00, 0x05, 0x01, 0x0F, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55, 0x3E, 0x65, 0xFE])
    return bytes([0x01, 0x04]) + apdu + struct.pack(">H", value_len) + val + bytes([0x3F])


frames = [
    frame(33, 7, 5, b"Hello World\n\0"),
    frame(32, 7, 5, write_property_npdu(590)),
    frame(32, 7, 5, write_property_npdu(499)),
    frame(32, 7, 5, write_property_npdu(1478)),
]
with open("mstp-extended-frames.pcap", "wb") as o:
    o.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 165))
    for i, f in enumerate(frames):
        o.write(struct.pack("<IIII", i, 0, len(f), len(f)))
        o.write(f)
