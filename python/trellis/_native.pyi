# The native module's types (python/src/*.rs). Its methods return asyncio
# futures; trellis.Client and trellis.Gateway wrap them in coroutines.
from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime
from typing import Any

from ._values import ObjectIdentifier

__version__: str

def enum_tables() -> list[tuple[str, list[tuple[str, int]]]]: ...

class Canceller:
    def __call__(self, future: Any) -> None: ...

class CovListener:
    def next(
        self,
    ) -> Awaitable[tuple[str, bool, int, int, ObjectIdentifier, int, int, list[tuple[str, int | None, Any]]]]: ...

class NativeClient:
    @staticmethod
    def bind(
        bind: str,
        port: int,
        broadcast: str | None,
        broadcast_port: int,
        timeout: float,
        retries: int,
        max_in_flight: int | None,
        bbmd: str | None,
        ttl: int,
    ) -> Awaitable[NativeClient]: ...
    @property
    def local_address(self) -> str: ...
    def close(self) -> None: ...
    def shutdown(self) -> Awaitable[None]: ...
    def who_is(
        self, low: int | None, high: int | None, target: str | None, timeout: float, global_broadcast: bool
    ) -> Awaitable[list[tuple[int, str, int, str, int]]]: ...
    def discover(self, low: int | None, high: int | None, target: str | None, timeout: float) -> Awaitable[str]: ...
    def read(self, device: str, object: Any, property: Any, index: int | None = None) -> Awaitable[Any]: ...
    def read_multiple(
        self, device: str, specs: list[tuple[Any, list[tuple[Any, int | None]]]]
    ) -> Awaitable[list[tuple[ObjectIdentifier, list[tuple[str, int | None, Any]]]]]: ...
    def write(
        self,
        device: str,
        object: Any,
        property: Any,
        value: Any,
        priority: int | None = None,
        index: int | None = None,
    ) -> Awaitable[None]: ...
    def write_multiple(
        self, device: str, specs: list[tuple[Any, list[tuple[Any, Any, int | None, int | None]]]]
    ) -> Awaitable[None]: ...
    def subscribe_cov(
        self,
        device: str,
        object: Any,
        process_id: int,
        confirmed: bool,
        lifetime: int,
        property: Any | None = None,
        increment: float | None = None,
        cancel: bool = False,
    ) -> Awaitable[None]: ...
    def cov_listener(self) -> CovListener: ...
    def read_range(
        self,
        device: str,
        object: Any,
        property: Any,
        index: int | None,
        by: str | None,
        reference: Any | None,
        count: int,
    ) -> Awaitable[dict[str, Any]]: ...
    def device_communication_control(
        self, device: str, state: str | int, duration: int | None = None, password: str | None = None
    ) -> Awaitable[None]: ...
    def reinitialize(self, device: str, state: str | int, password: str | None = None) -> Awaitable[None]: ...
    def time_sync(self, target: str | None, when: datetime, utc: bool) -> Awaitable[None]: ...

class NativeGateway:
    @staticmethod
    def serve(
        config: str | None,
        plugin: str | None,
        bind: str | None,
        port: int | None,
        device_id: int | None,
        data_dir: str | None,
        http: str | None,
        admin_socket: str | None,
    ) -> Awaitable[NativeGateway]: ...
    @property
    def devices(self) -> list[int]: ...
    @property
    def console_url(self) -> str | None: ...
    @property
    def running(self) -> bool: ...
    def counters(self) -> str: ...
    def status(self) -> Awaitable[str]: ...
    def swap(self, device: int, path: str) -> Awaitable[str]: ...
    def stop(self) -> Awaitable[None]: ...
    def stop_blocking(self) -> None: ...
