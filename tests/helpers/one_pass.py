"""A list that can be iterated once: tests check with it that an aggregate reads its records
once, as it must to work on a stream."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class OnePass:
    """Wraps a list so that iterating it a second time raises: tests use it to check that an
    aggregate reads its records once (as it must to work on a stream)."""

    def __init__(self, items: Iterable) -> None:
        self._items = items
        self._used = False

    def __iter__(self) -> Iterator:
        if self._used:
            raise AssertionError("records iterated twice; an aggregate must read them once")
        self._used = True
        return iter(self._items)
