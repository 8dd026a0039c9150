#!/usr/bin/env python3
"""Write bacnet/tests/it/vectors/standard.txt: ASHRAE 135 Annex F APDU examples.

Annex F ("Examples of APDU Encoding", informative) shows the octets of sample
service requests and acknowledgements. The octets below were taken from the
golden-vector tests of the MIT-licensed ela-compil/BACnet library, which cite
the Annex F clause of each example:
    Tests/Serialize/AshraeAnnexFTests.cs   (F.1 alarm/event, F.4 device management)
    Tests/Serialize/AshraeAnnexF2Tests.cs  (F.2 file access)
    Tests/Serialize/AshraeAnnexF3Tests.cs  (F.3 object access, one F.2)
Examples that file marks as adapted to its own API (F.1.4/F.1.5 event
notifications, the F.1.8 GetEventInformation ack) or whose comment and octets
disagree (F.3.3 CreateObject ack) are left out. That file's clause labels are
not always the standard's numbering (it uses F.1.5 for two different
services), so names here use the service, and the clause is quoted as the file
gives it.

Every APDU is wrapped in BVLL (Original-Unicast-NPDU) + NPDU (version 1;
control 0x04 for confirmed requests, else 0x00), written to a pcap with
text2pcap (UDP 47808 on 127.0.0.1, no traffic is sent) and dissected by
tshark; the block keeps the bare APDU (``layer: apdu``) and tshark's summary.

Usage: .venv-peers/bin/python host/tests/peers/standard_vectors.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capture_client import dissect, format_blocks  # noqa: E402

F = "ela-compil/BACnet Tests/Serialize/AshraeAnnexFTests.cs"
F2 = "ela-compil/BACnet Tests/Serialize/AshraeAnnexF2Tests.cs"
F3 = "ela-compil/BACnet Tests/Serialize/AshraeAnnexF3Tests.cs"

# (name, clause as labelled by the source test, source file, test method, APDU hex)
VECTORS = [
    # --- F.1 alarm and event services -----------------------------------
    ("acknowledgealarm-request", "F.1.5", F, "F_1_5_AcknowledgeAlarm_request",
     "00020700 09011c00000002290 33e19103f4c004d444c5e2ea45c061507b40d0329092f5f"),
    ("acknowledgealarm-simpleack", "F.1.5", F, "F_1_5_AcknowledgeAlarm_ack", "200700"),
    ("confirmedcovnotification-request", "F.1.2", F, "F_1_2_ConfirmedCOVNotification_request",
     "00020f01 09121c020000042c0000000a39004e09552e444282 00002f096f2e8204002f4f"),
    ("confirmedcovnotification-simpleack", "F.1.2", F, "F_1_2_ConfirmedCOVNotification_ack", "200f01"),
    ("unconfirmedcovnotification", "F.1.3", F, "F_1_3_UnconfirmedCOVNotification_request",
     "1002 09121c020000042c0000000a39004e09552e444282 00002f096f2e8204002f4f"),
    ("confirmedeventnotification-simpleack", "F.1.4", F, "F_1_4_ConfirmedEventNotification_ack", "201002"),
    ("getalarmsummary-request", "F.1.6", F, "F_1_6_GetAlarmSummary_request", "00020103"),
    ("getalarmsummary-ack", "F.1.6", F, "F_1_6_GetAlarmSummary_ack",
     "300103 c4000000029103820560 c4000000039104820 5e0"),
    ("geteventinformation-request", "F.1.8", F, "F_1_8_GetEventInformation_request", "0002011d"),
    ("lifesafetyoperation-request", "F.1.9", F, "F_1_9_LifeSafetyOperation_request",
     "00020f1b 09121c004d444c29043c05400001"),
    ("lifesafetyoperation-simpleack", "F.1.9", F, "F_1_9_LifeSafetyOperation_ack", "200f1b"),
    ("subscribecov-request", "F.1.10", F, "F_1_10_SubscribeCOV_request",
     "00020f05 09121c0000000a29013900"),
    ("subscribecov-simpleack", "F.1.10", F, "F_1_10_SubscribeCOV_ack", "200f05"),
    ("subscribecovproperty-request", "F.1.11", F, "F_1_11_SubscribeCOVProperty_request",
     "00020f1c 09121c0000000a2901393c4e09554f5c3f800000"),
    ("subscribecovproperty-simpleack", "F.1.11", F, "F_1_11_SubscribeCOVProperty_ack", "200f1c"),
    # --- F.2 file access services -------------------------------------------
    ("atomicreadfile-stream-request", "F.2.1", F3, "F_2_1_AtomicReadFile_stream_request",
     "00020006 c4028000010e3100211b0f"),
    ("atomicreadfile-stream-ack", "F.2.1", F2, "F_2_1_AtomicReadFile_stream_ack",
     "300006 100e3100651b" + b"Chiller01 On-Time=4.3 Hours".hex() + "0f"),
    ("atomicreadfile-record-request", "F.2.1", F2, "F_2_1_AtomicReadFile_record_request",
     "00021206 c4028000021e310e21031f"),
    ("atomicreadfile-record-ack", "F.2.1", F2, "F_2_1_AtomicReadFile_record_ack",
     "301206 111e310e2102 650a" + b"12:00,45.6".hex() + "650a" + b"12:15,44.8".hex() + "1f"),
    ("atomicwritefile-stream-request", "F.2.2", F2, "F_2_2_AtomicWriteFile_stream_request",
     "00025507 c4028000010e311e651b" + b"Chiller01 On-Time=4.3 Hours".hex() + "0f"),
    ("atomicwritefile-stream-ack", "F.2.2", F2, "F_2_2_AtomicWriteFile_stream_ack", "305507091e"),
    ("atomicwritefile-record-request", "F.2.2", F2, "F_2_2_AtomicWriteFile_record_request",
     "00025507 c4028000021e31ff2102 650a" + b"12:00,45.6".hex() + "650a" + b"12:15,44.8".hex() + "1f"),
    ("atomicwritefile-record-ack", "F.2.2", F2, "F_2_2_AtomicWriteFile_record_ack", "305507190e"),
    # --- F.3 object access services -----------------------------------------
    ("addlistelement-simpleack", "F.3.1", F3, "F_3_1_AddListElement_ack", "200108"),
    ("removelistelement-simpleack", "F.3.2", F3, "F_3_2_RemoveListElement_ack", "203409"),
    ("deleteobject-simpleack", "F.3.4", F3, "F_3_4_DeleteObject_ack", "20570b"),
    ("readproperty-request-ai5-pv", "F.3.5", F3, "F_3_5_ReadProperty_request",
     "0000010c 0c000000051955"),
    ("readproperty-ack-ai5-pv-72.3", "F.3.5", F3, "F_3_5_ReadProperty_ack",
     "30010c 0c0000000519553e444290999a3f"),
    ("readpropertymultiple-request-ai16-pv-reliability", "F.3.7", F3, "F_3_7_ReadPropertyMultiple_request",
     "0004f10e 0c000000101e095509671f"),
    ("readpropertymultiple-ack-ai16-pv-reliability", "F.3.7", F3, "F_3_7_ReadPropertyMultiple_ack",
     "30f10e 0c000000101e29554e444290999a4f29674e91004f1f"),
    ("readpropertymultiple-request-three-objects", "F.3.7", F3,
     "F_3_7_ReadPropertyMultiple_multipleObjects_request",
     "0004020e 0c000000211e09551f 0c000000321e09551f 0c000000231e09551f"),
    ("readpropertymultiple-ack-three-objects-one-unknown", "F.3.7", F3,
     "F_3_7_ReadPropertyMultiple_multipleObjects_ack",
     "30020e 0c000000211e29554e444229 33334f1f 0c000000321e29555e910191 1f5f1f"
     " 0c000000231e29554e4443d9d99a4f1f"),
    ("readrange-request-by-time", "F.3.8", F3, "F_3_8_ReadRange_request",
     "0202011a 0c050000011983 7ea462031701b41334220031047f"),
    ("readrange-ack-two-records", "F.3.8", F3, "F_3_8_ReadRange_ack",
     "30011a 0c0500000119833a05c049025e"
     " 0ea462031701b413361b000f1e2c419000001f2a0400"
     " 0ea462031701b413381b000f1e2c4190cccd1f2a0400 5f6b013561"),
    ("writeproperty-request-av1-pv-180", "F.3.9", F3, "F_3_9_WriteProperty_request",
     "0004590f 0c008000011955 3e44433400003f"),
    ("writeproperty-simpleack", "F.3.9", F3, "F_3_9_WriteProperty_ack", "20590f"),
    ("writepropertymultiple-request-three-avs", "F.3.10", F3, "F_3_10_WritePropertyMultiple_request",
     "00040110 0c008000051e09552e444286 00002f1f 0c008000061e09552e444286 00002f1f"
     " 0c008000071e09552e444290 00002f1f"),
    ("writepropertymultiple-simpleack", "F.3.10", F3, "F_3_10_WritePropertyMultiple_ack", "200110"),
    # --- F.4 remote device management services ------------------------------
    ("devicecommunicationcontrol-request", "F.4.1", F, "F_4_1_DeviceCommunicationControl_request",
     "00040511 090519012d0800" + b"#egbdf!".hex()),
    ("devicecommunicationcontrol-simpleack", "F.4.1", F, "F_4_1_DeviceCommunicationControl_ack", "200511"),
    ("confirmedprivatetransfer-request", "F.4.2", F, "F_4_2_ConfirmedPrivateTransfer_request",
     "00045512 091919082e444290cccd6216492f"),
    ("confirmedprivatetransfer-ack", "F.4.3", F, "F_4_3_ConfirmedPrivateTransfer_ack", "30551209191908"),
    ("unconfirmedprivatetransfer", "F.4.3", F, "F_4_3_UnconfirmedPrivateTransfer_request",
     "1004 091919082e444290cccd6216492f"),
    ("reinitializedevice-request-warmstart", "F.4.4", F, "F_4_4_ReinitializeDevice_request",
     "00010214 09011d0900" + b"AbCdEfGh".hex()),
    ("reinitializedevice-simpleack", "F.4.4", F, "F_4_4_ReinitializeDevice_ack", "200214"),
    ("timesynchronization", "F.4.7", F, "F_4_7_TimeSynchronization_request",
     "1006 a45c0b1102b4162d1e46"),
    ("who-has-by-name", "F.4.8", F, "F_4_8_WhoHas_by_name", "1007 3d0700" + b"OATemp".hex()),
    ("who-has-by-id", "F.4.8", F, "F_4_8_WhoHas_by_id", "1007 2c00000003"),
    ("i-have", "F.4.8", F, "F_4_8_IHave", "1001 c402000008c400000003750700" + b"OATemp".hex()),
    ("who-is-range-3-3", "F.4.9", F, "F_4_9_WhoIs_by_id", "1008 09031903"),
    ("who-is-all", "F.4.9", F, "F_4_9_WhoIs_all", "1008"),
    ("i-am-device-1-480-transmit-vendor-99", "F.4.9", F, "F_4_9_IAm (row 1)",
     "1000 c40200000 12201e091012163"),
    ("i-am-device-2-206-receive-vendor-33", "F.4.9", F, "F_4_9_IAm (row 2)",
     "1000 c40200000221ce91022121"),
    ("i-am-device-3-1024-none-vendor-99", "F.4.9", F, "F_4_9_IAm (row 3)",
     "1000 c4020000032204009103 2163"),
    ("i-am-device-4-128-both-vendor-66", "F.4.9", F, "F_4_9_IAm (row 4)",
     "1000 c402000004218091002142"),
]


def wrap(apdu: bytes) -> bytes:
    """BVLL Original-Unicast-NPDU + NPDU around a bare APDU."""
    confirmed_request = (apdu[0] >> 4) == 0
    npdu = bytes([0x01, 0x04 if confirmed_request else 0x00])
    body = npdu + apdu
    return bytes([0x81, 0x0A]) + (4 + len(body)).to_bytes(2, "big") + body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bacnet/tests/it/vectors/standard.txt"))
    parser.add_argument("--pcap", type=Path, default=None, help="also keep the pcap here")
    args = parser.parse_args()

    apdus = []
    for name, clause, src, test, hexstr in VECTORS:
        apdus.append(bytes.fromhex(hexstr.replace(" ", "")))

    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "frames.txt"
        pcap = Path(tmp) / "standard.pcap"
        lines = []
        for apdu in apdus:
            frame = wrap(apdu)
            for off in range(0, len(frame), 16):
                chunk = frame[off:off + 16]
                lines.append(f"{off:06x} " + " ".join(f"{b:02x}" for b in chunk))
            lines.append("")
        dump.write_text("\n".join(lines) + "\n")
        subprocess.run(
            ["text2pcap", "-q", "-4", "127.0.0.1,127.0.0.1", "-u", "47808,47808", str(dump), str(pcap)],
            check=True,
            capture_output=True,
        )
        frames = dissect(pcap, [47808])
        if args.pcap:
            args.pcap.write_bytes(pcap.read_bytes())

    if len(frames) != len(VECTORS):
        raise SystemExit(f"tshark saw {len(frames)} frames for {len(VECTORS)} vectors")

    tshark_ver = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.split()[2]
    blocks = []
    problems = 0
    for (name, clause, src, test, _), apdu, row in zip(VECTORS, apdus, frames):
        if row["udp.payload"].replace(":", "") != wrap(apdu).hex():
            raise SystemExit(f"{name}: payload mismatch")
        info = " ".join(row["_ws.col.Info"].split())
        # the BVLC function is our wrapper's, not part of the example
        extras = [e for e in row.get("extras", "").split("; ") if e and not e.startswith("BVLC ")]
        if extras:
            info = "; ".join([info, *extras])
        if row["problems"]:
            problems += 1
            print(f"{name}: tshark reports {row['problems']}: {info}", file=sys.stderr)
        blocks.append(
            {
                "name": f"ashrae-135-annex-f-{name}",
                "source": (
                    f"ASHRAE 135 Annex F example (clause {clause} as cited by {src}, {test}); "
                    f"checked with tshark {tshark_ver} 'bvlc' dissector inside BVLL 810a + NPDU "
                    f"{'0104' if (apdu[0] >> 4) == 0 else '0100'} (text2pcap, UDP 47808)"
                ),
                "tshark": info,
                "layer": "apdu",
                "hex": apdu.hex(),
            }
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(format_blocks(blocks))
    print(f"wrote {len(blocks)} blocks to {args.out}; {problems} with tshark problems", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
