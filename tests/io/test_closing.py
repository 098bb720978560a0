"""The one context-manager plumbing: ``with`` gives the object and closes it, errors or not."""

import pytest

from queryeval.io.closing import Closing


class _Held(Closing):
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_with_gives_the_object_and_closes_it_once():
    held = _Held()
    with held as got:
        assert got is held
        assert held.closed == 0
    assert held.closed == 1


def test_an_error_inside_still_closes_and_is_not_swallowed():
    held = _Held()
    with pytest.raises(ValueError, match="inside"), held:
        raise ValueError("inside")
    assert held.closed == 1


def test_a_subclass_without_close_is_told():
    with pytest.raises(NotImplementedError), Closing():
        pass
