"""BACnet values the standard's way in Python: an Enumerated that knows its
name, and an object identifier that prints as ``analog-value,1``."""

from __future__ import annotations

from typing import NamedTuple


class Enumerated(int):
    """An Enumerated value: an ``int`` carrying its standard name when the
    property's enumeration is known (``Enumerated(1, "active")``).

    It compares equal to its number and to its name:
    ``value == 1`` and ``value == "active"`` are both true.
    """

    name: str | None

    def __new__(cls, value: int, name: str | None = None) -> Enumerated:
        self = super().__new__(cls, value)
        self.name = name
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.name == other
        return int(self) == other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = int.__hash__

    def __str__(self) -> str:
        return self.name if self.name is not None else str(int(self))

    def __repr__(self) -> str:
        if self.name is None:
            return f"Enumerated({int(self)})"
        return f"Enumerated({int(self)}, {self.name!r})"


class ObjectIdentifier(NamedTuple):
    """An object: its type (the standard's name, or the number of a type
    this library does not name) and its instance."""

    type: str | int
    instance: int

    def __str__(self) -> str:
        return f"{self.type},{self.instance}"
