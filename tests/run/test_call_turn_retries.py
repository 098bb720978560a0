"""call_turn's retry rule (run/runner.py): a retryable SystemCallError is tried again after
the policy's wait while retries are left; a non-retryable one, or an adapter's exception,
ends the turn at once; an answer after retries counts its attempts."""

import pytest

from queryeval.errors import SystemCallError
from queryeval.run.runner import RetryPolicy, call_turn
from queryeval.tasks.base import get_task

TASK = get_task("indicator_selection")
REQUEST = {"case_id": "c", "turn": 0}


class _Scripted:
    """Raises or returns the scripted items in order."""

    def __init__(self, *script) -> None:
        self.script = list(script)
        self.calls = 0

    def call(self, request, timeout):
        self.calls += 1
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


def _busy() -> SystemCallError:
    return SystemCallError("http_status", "503", retryable=True, retry_after=4.0)


def test_retryable_failures_wait_then_the_answer_counts_its_attempts():
    waits = []
    system = _Scripted(_busy(), _busy(), {"indicator_selection": []})
    out = call_turn(system, TASK, REQUEST, timeout=None, policy=RetryPolicy(retries=2),
                    sleep=waits.append)
    assert (out.error, out.output, out.attempts) == (None, [], 3)
    assert waits == [4.0, 4.0]  # retry_after, under backoff_max 30


def test_retries_spent_end_the_turn_with_the_last_failure():
    waits = []
    system = _Scripted(_busy(), _busy())
    out = call_turn(system, TASK, REQUEST, timeout=None, policy=RetryPolicy(retries=1),
                    sleep=waits.append)
    assert (out.error, out.attempts, waits) == ({"kind": "http_status", "message": "503"}, 2,
                                                [4.0])


@pytest.mark.parametrize("failure, error", [
    (SystemCallError("http_status", "400"), {"kind": "http_status", "message": "400"}),
    (KeyError("x"), {"kind": "exception", "message": "KeyError: 'x'"}),
])
def test_a_final_failure_is_not_retried(failure, error):
    waits = []
    system = _Scripted(failure)
    out = call_turn(system, TASK, REQUEST, timeout=None, policy=RetryPolicy(retries=2),
                    sleep=waits.append)
    assert (out.error, out.attempts, waits, system.calls) == (error, 1, [], 1)
