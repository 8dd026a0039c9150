"""A Trellis gateway served from this process.

>>> gateway = await trellis.serve(plugin="demo-building", port=47809)
>>> print(gateway.devices, gateway.counters()["ports"])
>>> await gateway.stop()

The gateway runs on threads of its own (its devices on their shard
threads, as ``trellis run`` does): it never holds the GIL and keeps serving
while Python code runs or blocks.
"""

from __future__ import annotations

import json
import os
import weakref
from types import TracebackType
from typing import Any

from . import _native
from .client import _check_process

_running: weakref.WeakSet[Gateway] = weakref.WeakSet()


class Gateway:
    """A gateway serving; stop it with ``await stop()`` or ``async with``."""

    def __init__(self, native: _native.NativeGateway) -> None:
        self._native = native
        _running.add(self)

    @property
    def devices(self) -> list[int]:
        """The device instances served."""
        return self._native.devices

    @property
    def console_url(self) -> str | None:
        """The operator's console, when ``http`` was given."""
        return self._native.console_url

    @property
    def running(self) -> bool:
        """True until stopped."""
        return self._native.running

    def counters(self) -> dict[str, Any]:
        """Counters: ``devices`` (per instance: requests refused, aborted,
        timed out…, plugin restarts and failures), ``ports`` (datagrams,
        malformed…, MS/TP token counters) and ``cov`` (subscriptions and
        notifications)."""
        counters: dict[str, Any] = json.loads(self._native.counters())
        return counters

    async def status(self) -> dict[str, Any]:
        """Each device's plugin and its health (``trellis plugin status``)."""
        status: dict[str, Any] = json.loads(await self._native.status())
        return status

    async def swap(self, device: int, plugin: str | os.PathLike[str]) -> dict[str, Any]:
        """Hot swap ``device``'s plugin for the component file ``plugin``
        (vetted by the signature and capability policy as at start-up); no
        request is dropped. Returns the plugin now serving and the pause."""
        swapped: dict[str, Any] = json.loads(await self._native.swap(device, os.fspath(plugin)))
        return swapped

    async def stop(self) -> None:
        """Stop serving: every port is closed and every thread ended when this returns."""
        await self._native.stop()
        _running.discard(self)

    def stop_blocking(self) -> None:
        """``stop()`` for code without an event loop (and for interpreter exit)."""
        self._native.stop_blocking()
        _running.discard(self)

    async def __aenter__(self) -> Gateway:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


async def serve(
    config: str | os.PathLike[str] | None = None,
    *,
    plugin: str | None = None,
    bind: str | None = None,
    port: int | None = None,
    device_id: int | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    http: str | None = None,
    admin_socket: str | os.PathLike[str] | None = None,
) -> Gateway:
    """Start a gateway: from ``config`` (a TOML file, or TOML text), or one
    device served from ``plugin`` (``"demo-building"``, ``"bulk-objects"``
    or a ``.wasm`` file) on ``bind``:``port`` (127.0.0.1:47808 by default).

    ``http`` (``"127.0.0.1:0"``) starts the console and REST API there;
    ``admin_socket`` a local socket for ``trellis plugin swap``. Returns once
    every port is bound; fails with ``RuntimeError`` naming what did not
    start."""
    _check_process()
    native = await _native.NativeGateway.serve(
        None if config is None else (config if isinstance(config, str) else os.fspath(config)),
        plugin,
        bind,
        port,
        device_id,
        None if data_dir is None else os.fspath(data_dir),
        http,
        None if admin_socket is None else os.fspath(admin_socket),
    )
    return Gateway(native)
