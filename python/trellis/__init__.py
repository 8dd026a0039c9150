"""Trellis from Python: the Rust BACnet client and gateway, from asyncio.

>>> import asyncio, trellis
>>> async def main() -> None:
...     async with trellis.Client() as client:
...         for device in await client.who_is():
...             print(device.instance, await client.read(device, "analog-value,1", "present-value"))
>>> asyncio.run(main())

See the package README for the quick start and the BAC0 equivalents.
"""

from __future__ import annotations

import atexit

from . import _native
from ._enums import (
    AbortReason,
    EnableDisable,
    EngineeringUnits,
    ErrorClass,
    ErrorCode,
    EventState,
    ObjectType,
    PropertyIdentifier,
    ReinitializedState,
    RejectReason,
    Reliability,
    Segmentation,
)
from ._errors import (
    AbortError,
    BACnetError,
    BACnetTimeoutError,
    ClientClosedError,
    CommunicationError,
    DeviceError,
    RejectError,
    WriteFailed,
)
from ._values import Enumerated, ObjectIdentifier
from .client import (
    BACNET_PORT,
    Client,
    CovNotification,
    CovSubscription,
    Device,
    ReadRangeResult,
    _open_clients,
    connect,
)
from .gateway import Gateway, _running, serve

__version__: str = _native.__version__

__all__ = [
    "AbortError",
    "AbortReason",
    "BACNET_PORT",
    "BACnetError",
    "BACnetTimeoutError",
    "Client",
    "ClientClosedError",
    "CommunicationError",
    "CovNotification",
    "CovSubscription",
    "Device",
    "DeviceError",
    "EnableDisable",
    "EngineeringUnits",
    "Enumerated",
    "ErrorClass",
    "ErrorCode",
    "EventState",
    "Gateway",
    "ObjectIdentifier",
    "ObjectType",
    "PropertyIdentifier",
    "ReadRangeResult",
    "ReinitializedState",
    "RejectError",
    "RejectReason",
    "Reliability",
    "Segmentation",
    "WriteFailed",
    "connect",
    "serve",
]


@atexit.register
def _stop_everything() -> None:
    # The runtime's threads must not touch Python while the interpreter
    # finalizes: close every client and stop every gateway while it lives.
    for client in list(_open_clients):
        client.close()
    for gateway in list(_running):
        gateway.stop_blocking()
    # From here on no worker thread touches Python (CPython ends a thread
    # that takes the GIL during finalization, and that aborts the process).
    _native.shutdown()
