"""The one context-manager plumbing for objects that hold something to close."""

from __future__ import annotations

from typing import TypeVar

_C = TypeVar("_C", bound="Closing")


class Closing:
    """``with obj:`` gives ``obj`` and calls ``obj.close()`` on the way out, errors or not.

    A subclass defines ``close``; the exception, if any, is not swallowed."""

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError
