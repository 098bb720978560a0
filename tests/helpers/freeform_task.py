"""What the tests of freeform task share with other test files: ``FakeJudge`` (moved here from test_freeform_task.py)."""

from __future__ import annotations

import threading

from queryeval.engines.judge import JudgeItem, JudgeVerdict


class FakeJudge:
    """Says pass for the case ids in ``passes``, fail otherwise; records what it was asked."""

    def __init__(self, passes=(), error=None, raises=None):
        self.passes, self.error, self.raises = set(passes), error, raises
        self.asked: list[JudgeItem] = []
        self.closed = False
        self._lock = threading.Lock()

    def judge(self, item: JudgeItem) -> JudgeVerdict:
        with self._lock:
            self.asked.append(item)
        if self.raises:
            raise self.raises
        if self.error:
            return JudgeVerdict(None, error=dict(self.error), model="fake-judge")
        verdict = "pass" if item.case_id in self.passes else "fail"
        return JudgeVerdict(verdict, reason=f"{verdict} for {item.case_id}", model="fake-judge",
                            prompt_version="p1")

    def close(self) -> None:
        self.closed = True
