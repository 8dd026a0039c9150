"""The asyncio BACnet client: Who-Is, the property services, COV, ReadRange
and device management, over the Rust client.

>>> async with trellis.Client() as client:
...     for device in await client.who_is():
...         print(device.instance, await client.read(device, "device,4194303", "object-name"))

Devices are addressed as ``IP[:PORT]`` (47808 by default), ``IP:PORT@NET:MAC``
for a device behind a router (MAC in hex), or by a ``Device`` that Who-Is
returned. Objects are ``"analog-value,1"``, ``("analog-value", 1)`` or
``(ObjectType.ANALOG_VALUE, 1)``; properties ``"present-value"``,
``PropertyIdentifier.PRESENT_VALUE`` or a number. BAC0's camelCase names
(``analogValue``, ``presentValue``) are accepted too.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import os
import weakref
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Mapping, NamedTuple, Sequence, Union

if TYPE_CHECKING:
    import asyncio

from . import _native
from ._errors import BACnetError, CommunicationError
from ._values import ObjectIdentifier

# Arguments accepted for objects and properties.
ObjectArg = Union[str, tuple[Union[str, int], int], ObjectIdentifier]
PropertyArg = Union[str, int]
AddressArg = Union[str, "Device"]

#: The B/IP port devices listen on unless told otherwise.
BACNET_PORT = 47808

_open_clients: weakref.WeakSet[Client] = weakref.WeakSet()
_started_in: int | None = None


def _check_process() -> None:
    """tokio's threads do not survive fork(): refuse to run in a child
    forked after the runtime started (use multiprocessing's "spawn")."""
    global _started_in
    pid = os.getpid()
    if _started_in is None:
        _started_in = pid
    elif _started_in != pid:
        raise RuntimeError(
            "trellis was started in process %d and this is a child forked from it: the runtime's threads "
            "did not survive the fork; start trellis in the child only, or use multiprocessing's "
            "'spawn' start method" % _started_in
        )


def _address(device: AddressArg) -> str:
    return device.address if isinstance(device, Device) else device


class Device(NamedTuple):
    """A device that answered Who-Is (its I-Am)."""

    instance: int
    address: str
    max_apdu: int
    segmentation: str
    vendor_id: int

    def __str__(self) -> str:
        return self.address


class CovNotification(NamedTuple):
    """A change-of-value notification: the monitored object's new values by
    property name (``"present-value"``, ``"status-flags"``)."""

    source: str
    device: int
    object: ObjectIdentifier
    time_remaining: int
    values: dict[str, Any]
    confirmed: bool
    #: Notifications lost before this one because the reader fell behind.
    missed: int = 0


class ReadRangeResult(NamedTuple):
    """A ReadRange answer: the items (for a Log_Buffer, dicts with
    ``timestamp``, ``kind``, ``value`` and ``status_flags``) and where they sit."""

    items: list[Any]
    item_count: int
    first_sequence_number: int | None
    first_item: bool
    last_item: bool
    more_items: bool


class CovSubscription:
    """A COV subscription, renewed while it is open and cancelled when it
    closes; iterate it for its notifications.

    >>> async with client.subscribe_cov(device, "analog-value,1", lifetime=300) as sub:
    ...     async for n in sub:
    ...         print(n.values["present-value"])
    """

    def __init__(
        self,
        client: Client,
        device: AddressArg,
        obj: ObjectArg,
        *,
        process_id: int,
        confirmed: bool,
        lifetime: int,
        property: PropertyArg | None,
        increment: float | None,
    ) -> None:
        self._client = client
        self._device = _address(device)
        self._object = obj
        self.process_id = process_id
        self._confirmed = confirmed
        self._lifetime = lifetime
        self._property = property
        self._increment = increment
        self._listener: _native.CovListener | None = None
        self._renewal: asyncio.Task[None] | None = None
        self._waiting: asyncio.Future[Any] | None = None
        self._monitored: ObjectIdentifier | None = None

    async def _request(self, cancel: bool = False) -> None:
        await self._client._native_client().subscribe_cov(
            self._device,
            self._object,
            self.process_id,
            self._confirmed,
            self._lifetime,
            self._property,
            self._increment,
            cancel,
        )

    async def open(self) -> CovSubscription:
        """Subscribe (listening first, so the initial notification is not missed)."""
        native = self._client._native_client()
        self._listener = native.cov_listener()
        await self._request()
        if self._lifetime > 0:
            import asyncio

            self._renewal = asyncio.get_running_loop().create_task(self._renew())
        return self

    async def _renew(self) -> None:
        # At half the lifetime, as the standard's subscribers do; a failed
        # renewal is retried at the next period (the subscription may lapse).
        import asyncio

        while True:
            await asyncio.sleep(max(self._lifetime / 2, 1.0))
            try:
                await self._request()
            except (BACnetError, RuntimeError):  # RuntimeError: the client was closed
                pass

    async def close(self) -> None:
        """Stop renewing and cancel the subscription at the device. A reader
        waiting in ``async for`` ends its loop."""
        import asyncio

        if self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        if self._listener is not None:
            self._listener = None
            if self._waiting is not None and not self._waiting.done():
                self._waiting.cancel()
            # Shielded: a second cancellation of the closing task must not
            # leave the subscription at the device (for ever, with lifetime 0).
            try:
                await asyncio.shield(self._request(cancel=True))
            except (BACnetError, RuntimeError):
                pass

    async def __aenter__(self) -> CovSubscription:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __aiter__(self) -> CovSubscription:
        return self

    async def __anext__(self) -> CovNotification:
        import asyncio

        while True:
            if self._listener is None:
                raise StopAsyncIteration
            self._waiting = asyncio.ensure_future(self._listener.next())
            try:
                source, confirmed, pid, device, obj, remaining, missed, values = await self._waiting
            except asyncio.CancelledError:
                # close() cancelled the wait: the iteration is over. Any
                # other cancellation is the reader's task being cancelled.
                if self._listener is None and self._waiting.cancelled() and not _task_cancelling():
                    raise StopAsyncIteration from None
                raise
            finally:
                self._waiting = None
            if pid != self.process_id:
                continue
            return CovNotification(
                source=source,
                device=device,
                object=obj,
                time_remaining=remaining,
                values={_key(p, i): v for p, i, v in values},
                confirmed=confirmed,
                missed=missed,
            )


def _task_cancelling() -> bool:
    """The current task has been asked to cancel (Python ≥ 3.11 can tell)."""
    import asyncio

    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling()) if cancelling is not None else False


def _key(prop: str, index: int | None) -> str:
    return prop if index is None else f"{prop}[{index}]"


class Client:
    """A BACnet/IP client.

    ``bind`` is the local IPv4 address (optionally ``/prefix`` for the
    broadcast address), ``port`` the UDP port: by default 47808 when it is
    free (devices broadcast their I-Am there), else any. Broadcasts (Who-Is)
    go to ``broadcast_port``, the network's UDP port, whatever the local
    one. ``timeout`` is the
    APDU timeout in seconds, ``retries`` the retransmissions after it.
    ``bbmd`` (``IP:PORT``) registers as a foreign device with that BBMD.
    """

    def __init__(
        self,
        bind: str = "0.0.0.0",
        port: int | None = None,
        *,
        broadcast: str | None = None,
        broadcast_port: int = BACNET_PORT,
        timeout: float = 3.0,
        retries: int = 3,
        max_in_flight: int | None = None,
        bbmd: str | None = None,
        ttl: int = 300,
    ) -> None:
        self._settings = (bind, port, broadcast, broadcast_port, timeout, retries, max_in_flight, bbmd, ttl)
        self._native: _native.NativeClient | None = None
        self._process_ids = itertools.count(1)

    async def open(self) -> Client:
        """Bind the port."""
        _check_process()
        bind, port, broadcast, broadcast_port, timeout, retries, max_in_flight, bbmd, ttl = self._settings
        if port is None:
            try:
                self._native = await _native.NativeClient.bind(
                    bind, BACNET_PORT, broadcast, broadcast_port, timeout, retries, max_in_flight, bbmd, ttl
                )
            except CommunicationError:
                port = 0
        if self._native is None:
            self._native = await _native.NativeClient.bind(
                bind, port or 0, broadcast, broadcast_port, timeout, retries, max_in_flight, bbmd, ttl
            )
        _open_clients.add(self)
        return self

    async def aclose(self) -> None:
        """Shut down: calls in flight fail with ``ClientClosedError``, and the
        port is closed when this returns."""
        native, self._native = self._native, None
        _open_clients.discard(self)
        if native is not None:
            await native.shutdown()

    def close(self) -> None:
        """Let go of the port once the calls in flight end (for code without
        an event loop; ``aclose()`` waits until the port is closed)."""
        if self._native is not None:
            self._native.close()
            self._native = None
        _open_clients.discard(self)

    async def __aenter__(self) -> Client:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _native_client(self) -> _native.NativeClient:
        if self._native is None:
            raise RuntimeError("the client is not open: use `async with Client() as c` or `await c.open()`")
        return self._native

    @property
    def local_address(self) -> str:
        """Our B/IP address."""
        return self._native_client().local_address

    async def who_is(
        self,
        low: int | None = None,
        high: int | None = None,
        *,
        target: AddressArg | None = None,
        timeout: float = 3.0,
        global_broadcast: bool = False,
    ) -> list[Device]:
        """Who-Is (to ``target``, else broadcast; globally with
        ``global_broadcast``): the devices that answer within ``timeout``."""
        found = await self._native_client().who_is(
            low, high, None if target is None else _address(target), timeout, global_broadcast
        )
        return [Device(*d) for d in found]

    async def discover(
        self,
        low: int | None = None,
        high: int | None = None,
        *,
        target: AddressArg | None = None,
        timeout: float = 3.0,
    ) -> list[dict[str, Any]]:
        """Who-Is, then each device's objects with their names: a dict per
        device (``device``, ``address``, ``vendor_id``, ``objects``: dicts
        with ``object``, ``object_type``, ``instance``, ``name``)."""
        text = await self._native_client().discover(
            low, high, None if target is None else _address(target), timeout
        )
        reports: list[dict[str, Any]] = json.loads(text)
        return reports

    async def read(
        self, device: AddressArg, obj: ObjectArg, prop: PropertyArg = "present-value", index: int | None = None
    ) -> Any:
        """ReadProperty: the value as a Python value."""
        return await self._native_client().read(_address(device), obj, prop, index)

    async def read_multiple(
        self,
        device: AddressArg,
        request: Mapping[ObjectArg, PropertyArg | Sequence[PropertyArg | tuple[PropertyArg, int]]],
    ) -> dict[str, dict[str, Any]]:
        """ReadPropertyMultiple: ``{object: [properties]}`` (or ``"all"``,
        ``"required"``, ``"optional"``) to ``{"analog-value,1":
        {"present-value": 21.5, …}}``. A property the device could not read
        has its ``DeviceError`` as its value (not raised)."""
        specs: list[tuple[ObjectArg, list[tuple[PropertyArg, int | None]]]] = []
        for obj, props in request.items():
            if isinstance(props, (str, int)):
                props = [props]
            refs: list[tuple[PropertyArg, int | None]] = []
            for p in props:
                refs.append((p[0], p[1]) if isinstance(p, tuple) else (p, None))
            specs.append((obj, refs))
        results = await self._native_client().read_multiple(_address(device), specs)
        return {str(obj): {_key(p, i): v for p, i, v in values} for obj, values in results}

    async def write(
        self,
        device: AddressArg,
        obj: ObjectArg,
        prop: PropertyArg,
        value: Any,
        *,
        priority: int | None = None,
        index: int | None = None,
    ) -> None:
        """WriteProperty. ``None`` with a ``priority`` relinquishes that
        priority. The object type and property choose the datatype (a number
        to an analog Present_Value is a Real, ``"active"`` or ``True`` to a
        binary one the enumeration); ``"real:1.5"``, ``"unsigned:3"``,
        ``"enum:2"``… force one."""
        await self._native_client().write(_address(device), obj, prop, value, priority, index)

    async def write_multiple(
        self,
        device: AddressArg,
        request: Mapping[ObjectArg, Mapping[PropertyArg, Any]],
        *,
        priority: int | None = None,
    ) -> None:
        """WritePropertyMultiple: ``{object: {property: value}}``, all at
        ``priority``. A failure is ``WriteFailed`` naming the first write
        that failed."""
        specs: list[tuple[Any, list[tuple[Any, Any, int | None, int | None]]]] = [
            (obj, [(p, v, None, priority) for p, v in values.items()]) for obj, values in request.items()
        ]
        await self._native_client().write_multiple(_address(device), specs)

    def subscribe_cov(
        self,
        device: AddressArg,
        obj: ObjectArg,
        *,
        confirmed: bool = False,
        lifetime: int = 300,
        property: PropertyArg | None = None,
        increment: float | None = None,
        process_id: int | None = None,
    ) -> CovSubscription:
        """A COV subscription to open with ``async with`` (SubscribeCOV, or
        SubscribeCOVProperty with ``property``); renewed at half its
        ``lifetime`` (seconds; 0 = indefinite, never renewed) and cancelled
        on exit."""
        return CovSubscription(
            self,
            device,
            obj,
            process_id=process_id if process_id is not None else next(self._process_ids),
            confirmed=confirmed,
            lifetime=lifetime,
            property=property,
            increment=increment,
        )

    async def read_range(
        self,
        device: AddressArg,
        obj: ObjectArg,
        prop: PropertyArg = "log-buffer",
        *,
        index: int | None = None,
        position: int | None = None,
        sequence: int | None = None,
        time: _dt.datetime | None = None,
        count: int = 0,
    ) -> ReadRangeResult:
        """ReadRange: every item, or ``count`` items (negative: before) from
        ``position`` (1 = oldest), ``sequence`` number or ``time``."""
        by: Literal["position", "sequence", "time"] | None = None
        reference: Any = None
        chosen = [(n, v) for n, v in (("position", position), ("sequence", sequence), ("time", time)) if v is not None]
        if len(chosen) > 1:
            raise ValueError("give one of position, sequence and time")
        if chosen:
            name, reference = chosen[0]
            by = name  # type: ignore[assignment]
            if count == 0:
                raise ValueError(f"a ReadRange by {name} needs a non-zero count")
        r = await self._native_client().read_range(_address(device), obj, prop, index, by, reference, count)
        return ReadRangeResult(**r)

    async def device_communication_control(
        self,
        device: AddressArg,
        state: str | int = "disable-initiation",
        *,
        duration: int | _dt.timedelta | None = None,
        password: str | None = None,
    ) -> None:
        """DeviceCommunicationControl: ``enable``, ``disable`` or
        ``disable-initiation``, for ``duration`` minutes (or a timedelta)."""
        if isinstance(duration, _dt.timedelta):
            if duration.total_seconds() <= 0:
                raise ValueError("a DeviceCommunicationControl duration must be positive (or None: until told otherwise)")
            # Whole minutes, rounded up: 0 would mean "indefinite" to some devices.
            minutes: int | None = -(-int(duration.total_seconds()) // 60)
        else:
            minutes = duration
        await self._native_client().device_communication_control(_address(device), state, minutes, password)

    async def reinitialize(
        self, device: AddressArg, state: str | int = "warmstart", *, password: str | None = None
    ) -> None:
        """ReinitializeDevice (``coldstart``, ``warmstart``, ``activate-changes``, …)."""
        await self._native_client().reinitialize(_address(device), state, password)

    async def time_sync(
        self, device: AddressArg | None = None, when: _dt.datetime | None = None, *, utc: bool = False
    ) -> None:
        """TimeSynchronization (local time) or, with ``utc``,
        UTCTimeSynchronization, to ``device`` or broadcast; ``when`` is now
        by default. An aware ``when`` is converted to local time or UTC."""
        if when is None:
            when = _dt.datetime.now(_dt.timezone.utc) if utc else _dt.datetime.now()
        elif when.tzinfo is not None:
            when = when.astimezone(_dt.timezone.utc) if utc else when.astimezone()
        await self._native_client().time_sync(None if device is None else _address(device), when, utc)


async def connect(bind: str = "0.0.0.0", port: int | None = None, **settings: Any) -> Client:
    """An open ``Client`` (see its arguments); close it with ``close()``."""
    return await Client(bind, port, **settings).open()
