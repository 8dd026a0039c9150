#!/usr/bin/env python3
"""Capture golden BACnet/IP wire vectors from real peers on loopback.

A bacpypes3 client drives a fixed list of exchanges against each peer server
(bacpypes3_server.py and rusty_server.py) while tshark captures on ``lo``
(filtered on this run's ports only). Afterwards every captured UDP payload (a
full BVLL frame) is written as a named block with tshark's one-line summary:

    name: bacpypes3-client-readproperty-av1-pv-to-rusty
    source: bacpypes3 0.0.110 client -> rusty-bacnet 0.14.0 server, loopback capture 2026-11-30, tshark 4.0.17 'bvlc' dissector
    tshark: Confirmed-REQ   readProperty[  3] analog-value,1 present-value
    hex: 810a0011...

Frames are named by the step whose time window they fall in, the sender
(bacpypes3-client, raw-client, bacpypes3-server, rusty-server) and the APDU
kind. A few malformed requests go out from a plain UDP socket (raw-client) to
provoke Reject/Abort.

Loopback only: every address used is 127.0.0.1 or 127.255.255.255.

Usage (needs root or CAP_NET_RAW for tshark on lo):
    .venv-peers/bin/python host/tests/peers/capture_client.py \
        --vectors bacnet/tests/it/vectors/captured.txt \
        --pcap-dir host/tests/peers/captures
Only the client part against an already running server:
    .venv-peers/bin/python host/tests/peers/capture_client.py client \
        --server-port 47901 --server-kind bacpypes3
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import inspect
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from importlib.metadata import version as _pkg_version
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from bacpypes3.apdu import (
    DeviceCommunicationControlRequest,
    ErrorRejectAbortNack,
    ReadRangeRequest,
    ReinitializeDeviceRequest,
    TimeSynchronizationRequest,
    UTCTimeSynchronizationRequest,
    WritePropertyMultipleRequest,
    WritePropertyRequest,
)
from bacpypes3.app import Application
from bacpypes3.argparse import SimpleArgumentParser
from bacpypes3.basetypes import (
    PropertyValue,
    Range,
    RangeByPosition,
    WriteAccessSpecification,
    DateTime,
)
from bacpypes3.constructeddata import Any as BAny
from bacpypes3.pdu import Address
from bacpypes3.primitivedata import (
    Date,
    Null,
    ObjectIdentifier,
    PropertyIdentifier,
    Real,
    Time,
)

HERE = Path(__file__).resolve().parent
PY = sys.executable

DEFAULT_PORTS = {
    "bacpypes3": 47901,  # bacpypes3_server.py
    "rusty": 47902,      # rusty_server.py
    "client": 47911,     # this bacpypes3 client
    "raw": 47912,        # plain UDP socket for malformed requests
}
SERVER_DEVICE_ID = {"bacpypes3": 3001, "rusty": 4001}
SERVER_SCRIPT = {"bacpypes3": "bacpypes3_server.py", "rusty": "rusty_server.py"}
SERVER_LABEL = {
    "bacpypes3": "bacpypes3 {bp} server",
    "rusty": "rusty-bacnet {rb} server",
}
CLIENT_DEVICE_ID = 599
DCC_PASSWORD = "trellis"

# ---------------------------------------------------------------------------
# client side
# ---------------------------------------------------------------------------


class StepLog:
    """Time windows of the exchanges, to name the captured frames."""

    def __init__(self) -> None:
        self.steps: List[Dict[str, Any]] = []

    def start(self, name: str) -> None:
        self.steps.append({"name": name, "t0": time.time(), "result": None})

    def result(self, value: Any) -> None:
        self.steps[-1]["result"] = value


def _short(value: Any) -> str:
    if isinstance(value, ErrorRejectAbortNack):
        parts = [type(value).__name__]
        for attr in ("errorClass", "errorCode", "apduAbortRejectReason"):
            v = getattr(value, attr, None)
            if v is not None:
                parts.append(f"{attr}={v}")
        return " ".join(parts)
    text = repr(value)
    return text if len(text) < 400 else text[:400] + "..."


def make_client_app(client_port: int) -> Application:
    bp_args = SimpleArgumentParser().parse_args(
        [
            "--address", f"127.0.0.1/8:{client_port}",
            "--instance", str(CLIENT_DEVICE_ID),
            "--name", "trellis-capture-client",
        ]
    )
    return Application.from_args(bp_args)


def point_broadcasts_at(app: Application, port: int) -> None:
    """Send this client's local/global broadcasts to 127.255.255.255:port.

    Every peer has its own UDP port on loopback, so a broadcast to the
    client's own port would reach nobody; the bytes bacpypes3 builds are
    unchanged, only the destination port differs."""
    for link in app.link_layers.values():
        link.server.broadcast_address = ("127.255.255.255", port)


async def run_client(
    kind: str,
    server_port: int,
    client_port: int,
    raw_port: int,
    log: StepLog,
    pace: float = 0.25,
) -> None:
    app = make_client_app(client_port)
    await asyncio.sleep(0.3)  # let the sockets bind
    point_broadcasts_at(app, server_port)
    target = Address(f"127.0.0.1:{server_port}")
    dev_id = SERVER_DEVICE_ID[kind]
    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    raw.bind(("127.0.0.1", raw_port))
    raw.settimeout(1.0)

    async def step(name: str, fn: Callable[[], Any], timeout: float = 3.0) -> None:
        await asyncio.sleep(pace)
        log.start(name)
        try:
            res = fn()
            if inspect.isawaitable(res):
                res = await asyncio.wait_for(res, timeout)
            log.result(_short(res))
        except (Exception, ErrorRejectAbortNack) as exc:  # errors/rejects/aborts are results here
            log.result("EXC " + _short(exc))
        print(f"  {name}: {log.steps[-1]['result']}", file=sys.stderr)

    async def raw_step(name: str, frame: bytes) -> None:
        await asyncio.sleep(pace)
        log.start(name)
        raw.sendto(frame, ("127.0.0.1", server_port))
        try:
            data, _ = await asyncio.get_running_loop().run_in_executor(
                None, lambda: raw.recvfrom(2048)
            )
            log.result("reply " + data.hex())
        except socket.timeout:
            log.result("no reply")
        print(f"  {name}: {log.steps[-1]['result']}", file=sys.stderr)

    def rp(objid: str, prop: str, index: Optional[int] = None):
        return lambda: app.read_property(target, ObjectIdentifier(objid), PropertyIdentifier(prop), index)

    def wp(objid: str, prop: str, value: Any, priority: Optional[int] = None):
        return lambda: app.write_property(
            target, ObjectIdentifier(objid), PropertyIdentifier(prop), value, None, priority
        )

    def confirmed(apdu):
        apdu.pduDestination = target
        return lambda: app.request(apdu)

    def unconfirmed(apdu):
        apdu.pduDestination = target
        return lambda: app.request(apdu)

    # --- device and object discovery -------------------------------------
    await step("whois-global", lambda: app.who_is(timeout=1), timeout=3)
    await step("whois-range-0-4194303", lambda: app.who_is(0, 4194303, timeout=1), timeout=3)
    await step(f"whois-range-{dev_id}-{dev_id}", lambda: app.who_is(dev_id, dev_id, timeout=1), timeout=3)
    await step("whois-unicast", lambda: app.who_is(address=target, timeout=1), timeout=3)
    await step("whohas-name-av1", lambda: app.who_has(object_name="av1", timeout=1), timeout=3)
    await step(
        "whohas-id-analog-input-1",
        lambda: app.who_has(object_identifier=ObjectIdentifier("analog-input,1"), timeout=1),
        timeout=3,
    )

    # --- ReadProperty ------------------------------------------------------
    await step("readproperty-av1-pv", rp("analog-value,1", "present-value"))
    await step("readproperty-av1-object-name", rp("analog-value,1", "object-name"))
    await step("readproperty-av1-units", rp("analog-value,1", "units"))
    await step("readproperty-av1-status-flags", rp("analog-value,1", "status-flags"))
    await step("readproperty-ai1-pv", rp("analog-input,1", "present-value"))
    await step("readproperty-bv1-pv", rp("binary-value,1", "present-value"))
    await step("readproperty-msv1-pv", rp("multi-state-value,1", "present-value"))
    await step("readproperty-msv1-state-text", rp("multi-state-value,1", "state-text"))
    await step("readproperty-csv1-pv", rp("characterstring-value,1", "present-value"))
    await step("readproperty-device-object-name", rp(f"device,{dev_id}", "object-name"))
    await step("readproperty-device-object-list-0", rp(f"device,{dev_id}", "object-list", 0))
    await step("readproperty-device-object-list-1", rp(f"device,{dev_id}", "object-list", 1))
    await step("readproperty-device-object-list", rp(f"device,{dev_id}", "object-list"))
    await step("readproperty-device-max-apdu", rp(f"device,{dev_id}", "max-apdu-length-accepted"))
    await step("readproperty-device-segmentation", rp(f"device,{dev_id}", "segmentation-supported"))
    await step("readproperty-device-wildcard-object-name", rp("device,4194303", "object-name"))
    await step("readproperty-unknown-object", rp("analog-value,99", "present-value"))
    await step("readproperty-unknown-property", rp("analog-input,1", "number-of-states"))
    await step("readproperty-av1-pv-index-on-non-array", rp("analog-value,1", "present-value", 1))
    await step("readproperty-object-list-index-out-of-range", rp(f"device,{dev_id}", "object-list", 999))

    # --- ReadPropertyMultiple ----------------------------------------------
    await step(
        "readpropertymultiple-av1-ai1",
        lambda: app.read_property_multiple(
            target,
            [
                "analog-value,1", ["present-value", "status-flags", "units", "object-name"],
                "analog-input,1", ["present-value", "units"],
            ],
        ),
    )
    await step(
        "readpropertymultiple-av1-all",
        lambda: app.read_property_multiple(target, ["analog-value,1", ["all"]]),
    )
    await step(
        "readpropertymultiple-av1-required",
        lambda: app.read_property_multiple(target, ["analog-value,1", ["required"]]),
    )
    await step(
        "readpropertymultiple-mixed-errors",
        lambda: app.read_property_multiple(
            target,
            [
                "analog-value,1", ["present-value", "number-of-states"],
                "analog-value,99", ["present-value"],
            ],
        ),
    )

    # The client announces max-APDU 206 (and segmented-both) in this one
    # request, so the device's whole property set needs a segmented answer.
    async def rpm_device_all_small_apdu():
        saved = app.device_object.maxApduLengthAccepted
        app.device_object.maxApduLengthAccepted = 206
        try:
            return await app.read_property_multiple(target, [f"device,{dev_id}", ["all"]])
        finally:
            app.device_object.maxApduLengthAccepted = saved

    await step("readpropertymultiple-device-all-max-apdu-206", rpm_device_all_small_apdu, timeout=8)

    # --- WriteProperty -----------------------------------------------------
    await step("writeproperty-av1-pv-55.5-p8", wp("analog-value,1", "present-value", Real(55.5), 8))
    await step("readproperty-av1-pv-after-write", rp("analog-value,1", "present-value"))
    await step("readproperty-av1-priority-array", rp("analog-value,1", "priority-array"))
    await step("readproperty-av1-priority-array-8", rp("analog-value,1", "priority-array", 8))
    await step("writeproperty-av1-null-p8", wp("analog-value,1", "present-value", Null(()), 8))
    await step("readproperty-av1-pv-after-relinquish", rp("analog-value,1", "present-value"))
    await step("writeproperty-av1-pv-no-priority", wp("analog-value,1", "present-value", Real(43.0)))
    await step("writeproperty-av1-null-p16", wp("analog-value,1", "present-value", Null(()), 16))
    await step("writeproperty-ai1-pv-denied", wp("analog-input,1", "present-value", Real(1.0)))
    await step(
        "writeproperty-av1-object-name-wrong-type",
        confirmed(
            WritePropertyRequest(
                objectIdentifier=ObjectIdentifier("analog-value,1"),
                propertyIdentifier=PropertyIdentifier("object-name"),
                propertyValue=BAny(Real(1.0)),
            )
        ),
    )
    await step("writeproperty-unknown-object", wp("analog-value,99", "present-value", Real(1.0), 8))

    # --- WritePropertyMultiple --------------------------------------------
    def wpm(value_av, value_bv, priority):
        return WritePropertyMultipleRequest(
            listOfWriteAccessSpecs=[
                WriteAccessSpecification(
                    objectIdentifier=ObjectIdentifier("analog-value,1"),
                    listOfProperties=[
                        PropertyValue(
                            propertyIdentifier="presentValue",
                            value=BAny(value_av),
                            priority=priority,
                        )
                    ],
                ),
                WriteAccessSpecification(
                    objectIdentifier=ObjectIdentifier("binary-value,1"),
                    listOfProperties=[
                        PropertyValue(
                            propertyIdentifier="presentValue",
                            value=BAny(value_bv),
                            priority=priority,
                        )
                    ],
                ),
            ]
        )

    from bacpypes3.basetypes import BinaryPV

    await step("writepropertymultiple-av1-bv1-p9", confirmed(wpm(Real(33.0), BinaryPV("active"), 9)))
    await step("readproperty-av1-pv-after-wpm", rp("analog-value,1", "present-value"))
    await step("writepropertymultiple-av1-bv1-null-p9", confirmed(wpm(Null(()), Null(()), 9)))

    # --- ReadRange ---------------------------------------------------------
    rr_obj = "trend-log,1" if kind == "rusty" else f"device,{dev_id}"
    rr_prop = "log-buffer" if kind == "rusty" else "object-list"
    await step(
        f"readrange-{'trend-log-1-log-buffer' if kind == 'rusty' else 'device-object-list'}-by-position",
        confirmed(
            ReadRangeRequest(
                objectIdentifier=ObjectIdentifier(rr_obj),
                propertyIdentifier=PropertyIdentifier(rr_prop),
                range=Range(byPosition=RangeByPosition(referenceIndex=1, count=3)),
            )
        ),
    )

    # --- COV ---------------------------------------------------------------
    # confirmed notifications on av1
    log.start("placeholder")  # replaced by the first step below
    log.steps.pop()
    await asyncio.sleep(pace)
    log.start("subscribecov-av1-confirmed")
    try:
        async with app.change_of_value(
            target, ObjectIdentifier("analog-value,1"), 17, True, 300
        ) as scm:
            try:
                first = await collect(scm)
                log.result(_short(first))
            except (Exception, ErrorRejectAbortNack) as exc:
                log.result("EXC " + _short(exc))
            print(f"  subscribecov-av1-confirmed: {log.steps[-1]['result']}", file=sys.stderr)
            await asyncio.sleep(pace)
            log.start("cov-av1-write-66-p8")
            await app.write_property(
                target, ObjectIdentifier("analog-value,1"), PropertyIdentifier("present-value"), Real(66.0), None, 8
            )
            try:
                notif = await collect(scm)
                log.result(_short(notif))
            except (Exception, ErrorRejectAbortNack) as exc:
                log.result("EXC " + _short(exc))
            print(f"  cov-av1-write-66-p8: {log.steps[-1]['result']}", file=sys.stderr)
            await asyncio.sleep(pace)
            log.start("cov-av1-relinquish-p8")
            await app.write_property(
                target, ObjectIdentifier("analog-value,1"), PropertyIdentifier("present-value"), Null(()), None, 8
            )
            try:
                notif = await collect(scm)
                log.result(_short(notif))
            except (Exception, ErrorRejectAbortNack) as exc:
                log.result("EXC " + _short(exc))
            print(f"  cov-av1-relinquish-p8: {log.steps[-1]['result']}", file=sys.stderr)
            await asyncio.sleep(pace)
            log.start("subscribecov-av1-cancel")
        await asyncio.sleep(0.3)
        log.result("exited")
    except (Exception, ErrorRejectAbortNack) as exc:
        log.result("EXC " + _short(exc))
    print(f"  {log.steps[-1]['name']}: {log.steps[-1]['result']}", file=sys.stderr)

    # unconfirmed notifications on bv1
    await asyncio.sleep(pace)
    log.start("subscribecov-bv1-unconfirmed")
    try:
        async with app.change_of_value(
            target, ObjectIdentifier("binary-value,1"), 18, False, 300
        ) as scm:
            try:
                first = await collect(scm)
                log.result(_short(first))
            except (Exception, ErrorRejectAbortNack) as exc:
                log.result("EXC " + _short(exc))
            print(f"  subscribecov-bv1-unconfirmed: {log.steps[-1]['result']}", file=sys.stderr)
            await asyncio.sleep(pace)
            log.start("cov-bv1-write-active-p8")
            await app.write_property(
                target, ObjectIdentifier("binary-value,1"), PropertyIdentifier("present-value"),
                BinaryPV("active"), None, 8,
            )
            try:
                notif = await collect(scm)
                log.result(_short(notif))
            except (Exception, ErrorRejectAbortNack) as exc:
                log.result("EXC " + _short(exc))
            print(f"  cov-bv1-write-active-p8: {log.steps[-1]['result']}", file=sys.stderr)
            await asyncio.sleep(pace)
            log.start("cov-bv1-relinquish-p8")
            await app.write_property(
                target, ObjectIdentifier("binary-value,1"), PropertyIdentifier("present-value"), Null(()), None, 8
            )
            try:
                notif = await collect(scm)
                log.result(_short(notif))
            except (Exception, ErrorRejectAbortNack) as exc:
                log.result("EXC " + _short(exc))
            await asyncio.sleep(pace)
            log.start("subscribecov-bv1-cancel")
        await asyncio.sleep(0.3)
        log.result("exited")
    except (Exception, ErrorRejectAbortNack) as exc:
        log.result("EXC " + _short(exc))
    print(f"  {log.steps[-1]['name']}: {log.steps[-1]['result']}", file=sys.stderr)

    await step("subscribecov-unknown-object", lambda: _subscribe_once(app, target, "analog-value,99"))

    # --- time synchronization (unconfirmed) --------------------------------
    fixed = DateTime(date=Date((2026 - 1900, 11, 30, 1)), time=Time((12, 34, 56, 78)))
    await step("timesynchronization", unconfirmed(TimeSynchronizationRequest(time=fixed)))
    await step("utctimesynchronization", unconfirmed(UTCTimeSynchronizationRequest(time=fixed)))

    # --- DeviceCommunicationControl / ReinitializeDevice -------------------
    await step(
        "dcc-disable-wrong-password",
        confirmed(DeviceCommunicationControlRequest(timeDuration=1, enableDisable="disable", password="wrong")),
    )
    await step(
        "dcc-disable-1min",
        confirmed(DeviceCommunicationControlRequest(timeDuration=1, enableDisable="disable", password=DCC_PASSWORD)),
    )
    # a plain-socket ReadProperty: a bacpypes3 client request that goes
    # unanswered would hold later requests to this device behind its retries
    await raw_step(
        "readproperty-av1-pv-while-dcc-disabled",
        bytes.fromhex("810a0011" "0104" "0005070c" "0c00800001" "1955"),
    )
    await step(
        "dcc-enable",
        confirmed(DeviceCommunicationControlRequest(enableDisable="enable", password=DCC_PASSWORD)),
    )
    await step("readproperty-av1-pv-after-dcc-enable", rp("analog-value,1", "present-value"))
    await step(
        "dcc-disable-initiation-1min",
        confirmed(
            DeviceCommunicationControlRequest(
                timeDuration=1, enableDisable="disableInitiation", password=DCC_PASSWORD
            )
        ),
    )
    await step("readproperty-av1-pv-while-initiation-disabled", rp("analog-value,1", "present-value"))
    await step(
        "dcc-enable-after-disable-initiation",
        confirmed(DeviceCommunicationControlRequest(enableDisable="enable", password=DCC_PASSWORD)),
    )
    await step(
        "reinitializedevice-warmstart-wrong-password",
        confirmed(ReinitializeDeviceRequest(reinitializedStateOfDevice="warmstart", password="wrong")),
    )
    await step(
        "reinitializedevice-warmstart",
        confirmed(ReinitializeDeviceRequest(reinitializedStateOfDevice="warmstart", password=DCC_PASSWORD)),
    )

    # --- hand-built requests from a plain UDP socket: Reject / Abort -------
    await raw_step(
        # readProperty whose object identifier (context 0, length 4) has 2 octets
        "readproperty-truncated",
        bytes.fromhex("810a000d" "0104" "0005010c" "0c0080"),
    )
    await raw_step(
        # readProperty missing its property identifier
        "readproperty-missing-property",
        bytes.fromhex("810a000f" "0104" "0005020c" "0c00800001"),
    )
    await raw_step(
        # confirmed service choice 0x3f is unassigned
        "unknown-confirmed-service",
        bytes.fromhex("810a000a" "0104" "0005033f"),
    )
    await raw_step(
        # readProperty flagged as segment 0 of a segmented request, window 1,
        # more-follows set: the servers do not accept segmented requests here
        "segmented-request",
        bytes.fromhex("810a0013" "0104" "0c0504" "0001" "0c0c00800001" "1955"),
    )
    await raw_step(
        # readProperty with trailing garbage after the last tag
        "readproperty-extra-octets",
        bytes.fromhex("810a0013" "0104" "0005060c" "0c00800001" "1955" "ffff"),
    )

    raw.close()
    await asyncio.sleep(0.5)
    app.close()


async def collect(scm) -> list:
    """Values of the next COV notification: wait for the first, then drain."""
    values = [await asyncio.wait_for(scm.get_value(), 3)]
    await asyncio.sleep(0.2)
    while not scm.queue.empty():
        values.append(await scm.get_value())
    return values


async def _subscribe_once(app: Application, target: Address, objid: str):
    from bacpypes3.apdu import SubscribeCOVRequest

    req = SubscribeCOVRequest(
        subscriberProcessIdentifier=19,
        monitoredObjectIdentifier=ObjectIdentifier(objid),
        issueConfirmedNotifications=True,
        lifetime=60,
        destination=target,
    )
    return await app.request(req)


# ---------------------------------------------------------------------------
# orchestration: server + tshark + client, then extraction
# ---------------------------------------------------------------------------


def start_server(kind: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [PY, str(HERE / SERVER_SCRIPT[kind]), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=sys.stderr,
        text=True,
    )
    deadline = time.time() + 20
    line = ""
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line.strip() == "READY" or not line:
            break
    if line.strip() != "READY":
        stop_process(proc)
        raise RuntimeError(f"{kind} server did not print READY")
    return proc


def stop_process(proc: Optional[subprocess.Popen], sig: int = signal.SIGTERM) -> Optional[int]:
    if proc is None or proc.poll() is not None:
        return None if proc is None else proc.returncode
    proc.send_signal(sig)
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)


def start_tshark(pcap: Path, ports: List[int]) -> subprocess.Popen:
    bpf = " or ".join(f"udp port {p}" for p in ports)
    proc = subprocess.Popen(
        ["tshark", "-i", "lo", "-f", bpf, "-w", str(pcap), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 15
    while time.time() < deadline:
        line = proc.stderr.readline()
        if "Capturing on" in line or not line:
            break
    time.sleep(0.5)
    return proc


CONFIRMED_NAMES = {
    0: "acknowledgealarm", 1: "confirmedcovnotification", 5: "subscribecov",
    12: "readproperty", 14: "readpropertymultiple", 15: "writeproperty",
    16: "writepropertymultiple", 17: "devicecommunicationcontrol",
    20: "reinitializedevice", 26: "readrange",
}
UNCONFIRMED_NAMES = {
    0: "i-am", 1: "i-have", 2: "unconfirmedcovnotification", 6: "timesynchronization",
    7: "who-has", 8: "who-is", 9: "utctimesynchronization",
}
TYPE_SUFFIX = {
    0: "", 1: "", 2: "simpleack", 3: "ack", 4: "segmentack", 5: "error", 6: "reject", 7: "abort",
}


def dissect(pcap: Path, ports: List[int]) -> List[Dict[str, Any]]:
    decode = []
    for p in ports:
        decode += ["-d", f"udp.port=={p},bvlc"]
    fields = [
        "frame.number", "frame.time_epoch", "udp.srcport", "udp.dstport", "ip.dst",
        "udp.payload", "bacapp.type", "bacapp.confirmed_service",
        "bacapp.unconfirmed_service", "_ws.col.Info",
    ]
    cmd = ["tshark", "-r", str(pcap), *decode, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    frames = []
    for line in out.splitlines():
        parts = line.split("\t")
        parts += [""] * (len(fields) - len(parts))
        row = dict(zip(fields, parts))
        frames.append(row)
    # verbose dissection per frame, to flag malformed / error expert info
    verbose = subprocess.run(
        ["tshark", "-r", str(pcap), *decode, "-V"], capture_output=True, text=True, check=True
    ).stdout
    chunks = re.split(r"(?m)^(?=Frame \d+: )", verbose)
    flags: Dict[str, List[str]] = {}
    extras: Dict[str, str] = {}
    for chunk in chunks:
        m = re.match(r"Frame (\d+): ", chunk)
        if not m:
            continue
        extras[m.group(1)] = _summary_extras(chunk)
        bad = []
        if "[Malformed Packet" in chunk:
            bad.append("Malformed Packet")
        if "Expert Info (Error" in chunk:
            bad.append("Expert Info (Error")
        flags[m.group(1)] = bad
    for row in frames:
        row["problems"] = flags.get(row["frame.number"], [])
        row["extras"] = extras.get(row["frame.number"], "")
    return frames


def _summary_extras(verbose_frame: str) -> str:
    """Facts from tshark -V that the Info column leaves out: error class and
    code of an Error PDU, the I-Am parameters, and the BVLC function."""
    apdu = verbose_frame.split("Building Automation and Control Network APDU", 1)
    apdu_text = apdu[1] if len(apdu) > 1 else ""
    parts = []
    if re.search(r"APDU Type: Error \(5\)", apdu_text):
        for label in ("Error Class", "Error Code"):
            m = re.search(rf"^\s*{label}: (.+)$", apdu_text, re.M)
            if m:
                parts.append(f"{label}: {m.group(1).strip()}")
    if "Unconfirmed Service Choice: i-Am (0)" in apdu_text:
        for pat in (r"Maximum ADPU Length Accepted: \(Unsigned\) (\d+)",
                    r"Segmentation Supported:\s+(.+)",
                    r"Vendor ID: (.+)"):
            m = re.search(pat, apdu_text)
            if m:
                parts.append(m.group(0).strip())
    m = re.search(r"^\s*Function: (.+?) \(0x[0-9a-f]+\)$", verbose_frame, re.M)
    if m:
        parts.append(f"BVLC {m.group(1)}")
    return "; ".join(re.sub(r"\s+", " ", p) for p in parts)


def name_frames(
    kind: str, frames: List[Dict[str, Any]], steps: List[Dict[str, Any]], ports: Dict[str, int]
) -> List[Dict[str, Any]]:
    server_port = str(ports[kind])
    sender_of = {
        server_port: f"{kind}-server",
        str(ports["client"]): "bacpypes3-client",
        str(ports["raw"]): "raw-client",
    }
    bp, rb = _pkg_version("bacpypes3"), _pkg_version("rusty-bacnet")
    server_label = SERVER_LABEL[kind].format(bp=bp, rb=rb)
    client_label = {
        "bacpypes3-client": f"bacpypes3 {bp} client",
        "raw-client": "hand-built frame from a plain UDP socket (capture_client.py)",
    }
    tshark_ver = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.split()[2]
    day = _dt.date.today().isoformat()
    tail = f"loopback capture {day}, tshark {tshark_ver} 'bvlc' dissector"

    starts = [s["t0"] for s in steps]
    used: Dict[str, int] = {}
    blocks = []
    for row in frames:
        t = float(row["frame.time_epoch"])
        idx = -1
        for i, t0 in enumerate(starts):
            if t >= t0:
                idx = i
        if idx < 0:
            step_name = "before-first-step"
        else:
            step_name = steps[idx]["name"]
        sender = sender_of.get(row["udp.srcport"], f"port{row['udp.srcport']}")
        apdu_type = int(row["bacapp.type"]) if row["bacapp.type"] else None
        if sender.endswith("-server"):
            if apdu_type == 0 and row["bacapp.confirmed_service"]:
                suffix = CONFIRMED_NAMES.get(int(row["bacapp.confirmed_service"]), "confirmed")
            elif apdu_type == 1 and row["bacapp.unconfirmed_service"]:
                suffix = UNCONFIRMED_NAMES.get(int(row["bacapp.unconfirmed_service"]), "unconfirmed")
            else:
                suffix = TYPE_SUFFIX.get(apdu_type, "npdu")
            name = f"{sender}-{step_name}-{suffix}"
            to_broadcast = row["ip.dst"].endswith(".255")
            if to_broadcast:
                name += "-broadcast"
            source = f"{server_label} -> {client_label['bacpypes3-client']}, {tail}"
        else:
            suffix = TYPE_SUFFIX.get(apdu_type, "npdu") if apdu_type is not None else "npdu"
            name = f"{sender}-{step_name}" + (f"-{suffix}" if suffix else "") + f"-to-{kind}"
            source = f"{client_label.get(sender, sender)} -> {server_label}, {tail}"
        n = used.get(name, 0) + 1
        used[name] = n
        if n > 1:
            name = f"{name}-{n}"
        info = re.sub(r"\s+", " ", row["_ws.col.Info"]).strip()
        if row.get("extras"):
            info = f"{info}; {row['extras']}"
        blocks.append(
            {
                "name": name,
                "source": source,
                "tshark": info,
                "hex": row["udp.payload"].replace(":", ""),
                "problems": row["problems"],
                "frame": row["frame.number"],
            }
        )
    return blocks


def format_blocks(blocks: List[Dict[str, Any]]) -> str:
    out = []
    for b in blocks:
        lines = [f"name: {b['name']}", f"source: {b['source']}", f"tshark: {b['tshark']}"]
        if b.get("layer") and b["layer"] != "bvll":
            lines.append(f"layer: {b['layer']}")
        lines.append(f"hex: {b['hex']}")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def capture(kind: str, ports: Dict[str, int], pcap_dir: Path, work: Path) -> Tuple[List[Dict[str, Any]], Path, List[Dict[str, Any]]]:
    pcap = pcap_dir / f"bacpypes3-client-vs-{kind}.pcapng"
    work_pcap = work / pcap.name
    port_list = [ports[kind], ports["client"], ports["raw"]]
    server = tshark = None
    log = StepLog()
    try:
        tshark = start_tshark(work_pcap, port_list)
        server = start_server(kind, ports[kind])
        print(f"{kind} server up; running client", file=sys.stderr)
        asyncio.run(run_client(kind, ports[kind], ports["client"], ports["raw"], log))
        time.sleep(1.0)
    finally:
        rc = stop_process(server)
        print(f"{kind} server exit code: {rc}", file=sys.stderr)
        time.sleep(0.5)
        stop_process(tshark, signal.SIGINT)
    frames = dissect(work_pcap, port_list)
    blocks = name_frames(kind, frames, log.steps, ports)
    pcap_dir.mkdir(parents=True, exist_ok=True)
    if work_pcap.stat().st_size < 100 * 1024:
        pcap.write_bytes(work_pcap.read_bytes())
    else:
        print(f"{work_pcap} is {work_pcap.stat().st_size} bytes: not kept", file=sys.stderr)
    return blocks, work_pcap, log.steps


def main() -> int:
    parser = argparse.ArgumentParser(description="capture golden BACnet/IP vectors on loopback")
    sub = parser.add_subparsers(dest="cmd")
    c = sub.add_parser("client", help="only run the client steps against a running server")
    c.add_argument("--server-port", type=int, required=True)
    c.add_argument("--server-kind", choices=["bacpypes3", "rusty"], required=True)
    c.add_argument("--client-port", type=int, default=DEFAULT_PORTS["client"])
    c.add_argument("--raw-port", type=int, default=DEFAULT_PORTS["raw"])
    parser.add_argument("--vectors", type=Path, default=Path("bacnet/tests/it/vectors/captured.txt"))
    parser.add_argument("--pcap-dir", type=Path, default=HERE / "captures")
    parser.add_argument("--steps-json", type=Path, default=None,
                        help="also write each step's client-side result here")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/trellis-capture"))
    parser.add_argument("--only", choices=["bacpypes3", "rusty"], default=None)
    args = parser.parse_args()

    if args.cmd == "client":
        log = StepLog()
        asyncio.run(run_client(args.server_kind, args.server_port, args.client_port, args.raw_port, log))
        print(json.dumps(log.steps, indent=1))
        return 0

    args.work_dir.mkdir(parents=True, exist_ok=True)
    all_blocks: List[Dict[str, Any]] = []
    all_steps: Dict[str, Any] = {}
    kinds = [args.only] if args.only else ["rusty", "bacpypes3"]
    for kind in kinds:
        blocks, pcap, steps = capture(kind, DEFAULT_PORTS, args.pcap_dir, args.work_dir)
        all_blocks += blocks
        all_steps[kind] = steps
        bad = [b for b in blocks if b["problems"]]
        print(f"{kind}: {len(blocks)} frames, {len(bad)} with tshark problems", file=sys.stderr)
        for b in bad:
            print(f"   {b['name']}: {b['problems']} :: {b['tshark']}", file=sys.stderr)
    args.vectors.parent.mkdir(parents=True, exist_ok=True)
    args.vectors.write_text(format_blocks(all_blocks))
    if args.steps_json:
        args.steps_json.write_text(json.dumps(all_steps, indent=1))
    print(f"wrote {len(all_blocks)} blocks to {args.vectors}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
