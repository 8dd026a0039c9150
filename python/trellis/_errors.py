"""Why a request failed, as exceptions a caller can catch by kind.

``BACnetError`` is the base of them all:

- ``DeviceError``: the device answered with an Error PDU (``error_class``,
  ``error_code``: the standard's names, e.g. ``"object"``,
  ``"unknown-object"``); ``WriteFailed`` for WritePropertyMultiple, with
  the first write that failed.
- ``RejectError`` and ``AbortError``: the device (or, for an abort, this
  client) refused the request (``reason``).
- ``BACnetTimeoutError``: no answer after every retry. It is also a
  ``TimeoutError``.
- ``CommunicationError``: the request could not be sent or the answer did
  not decode; ``ClientClosedError``: the client was closed.
"""

from __future__ import annotations

from typing import Any


class BACnetError(Exception):
    """A BACnet request did not succeed."""


class DeviceError(BACnetError):
    """The device answered with a BACnet Error."""

    def __init__(
        self,
        message: str,
        error_class: str,
        error_code: str,
        error_class_number: int,
        error_code_number: int,
    ) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.error_code = error_code
        self.error_class_number = error_class_number
        self.error_code_number = error_code_number


class WriteFailed(DeviceError):
    """A WritePropertyMultiple failed at ``first_failed`` (object, property,
    array index); the writes before it were applied."""

    def __init__(
        self,
        message: str,
        error_class: str,
        error_code: str,
        error_class_number: int,
        error_code_number: int,
        first_failed: tuple[Any, str, int | None],
    ) -> None:
        super().__init__(message, error_class, error_code, error_class_number, error_code_number)
        self.first_failed = first_failed


class RejectError(BACnetError):
    """The device rejected the request (``reason``: the standard's name)."""

    def __init__(self, message: str, reason: str, reason_number: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.reason_number = reason_number


class AbortError(BACnetError):
    """The transaction was aborted, by the device when ``from_server``."""

    def __init__(self, message: str, reason: str, reason_number: int, from_server: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.reason_number = reason_number
        self.from_server = from_server


class BACnetTimeoutError(BACnetError, TimeoutError):
    """No answer after ``attempts`` transmissions of ``timeout`` seconds each."""

    def __init__(self, message: str, attempts: int, timeout: float) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.timeout = timeout


class CommunicationError(BACnetError):
    """The request could not be sent, or its answer made no sense."""


class ClientClosedError(CommunicationError):
    """The client was closed."""
