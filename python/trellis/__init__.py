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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_ENUMS = {
    "AbortReason",
    "EnableDisable",
    "EngineeringUnits",
    "ErrorClass",
    "ErrorCode",
    "EventState",
    "ObjectType",
    "PropertyIdentifier",
    "ReinitializedState",
    "RejectReason",
    "Reliability",
    "Segmentation",
}


def __getattr__(name: str) -> Any:
    # The enumerations (about 1,400 members) load on first use: most
    # programs name objects and properties by text, and import time matters.
    if name in _ENUMS:
        from . import _enums

        value = getattr(_enums, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'trellis' has no attribute {name!r}")


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
    # Stop every gateway (closing its ports, ending its threads) and let go
    # of every client's port while the interpreter still runs.
    for client in list(_open_clients):
        client.close()
    for gateway in list(_running):
        gateway.stop_blocking()
