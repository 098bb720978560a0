"""Seed 002's case selection: every relevant chunk checked against ``--corpus`` (a chunk
named twice, or by an id the corpus lacks, is one InputError naming the record and field),
then the ``--dataset`` filter and the seed's stratified sampling; the selected questions are
kept for the built-in system's ``run_info`` (e.g. the HNSW index's recall on them).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from queryeval.errors import ConfigError, InputError
from queryeval.suite.models import Case


class RetrievalSelection:
    """Mixed into :class:`~queryeval.tasks.retrieval.task.RetrievalTask` (it gives ``options``,
    ``corpus()``, ``_corpus``; ``Task`` gives ``target_of`` and ``scored_turns``, found after
    this class in the method order, so they are not declared here)."""

    options: Any
    _corpus: Any
    _questions: list[str]

    def corpus(self) -> Any:  # pragma: no cover - the task's own
        raise NotImplementedError

    def select_cases(self, cases: Iterable[Case]) -> Iterable[Case]:
        """The cases checked (:meth:`_checked`), filtered and sampled (:meth:`_select`); with
        ``--corpus`` (the built-in system's input) their questions are kept for its
        ``run_info``. Without it no built-in system can run, so nothing is kept."""
        checked = self._checked(cases)
        chosen = self._select(list(checked) if isinstance(cases, list) else checked)
        if not self.options.corpus:
            return chosen
        if isinstance(chosen, list):
            self._questions = [q for c in chosen for q in self._questions_of(c)]
            return chosen
        return self._remember(chosen)  # type: ignore[return-value] - a stream stays a stream

    def _questions_of(self, case: Case) -> list[str]:
        return [case.conversation[i].content for i in self.scored_turns(case)]

    def _remember(self, cases: Iterable[Case]) -> Iterable[Case]:
        """Pass the cases through, keeping their questions (for the system's run_info) once
        a pass is complete (a pass stopped part-way leaves the last complete one)."""
        questions: list[str] = []
        for c in cases:
            questions.extend(self._questions_of(c))
            yield c
        self._questions = questions

    def _checked(self, cases: Iterable[Case]) -> Iterable[Case]:
        """The cases, refusing one that lists a relevant chunk twice, or whose relevant chunk
        is named by a chunk id (no content hash) that is not in ``--corpus``."""
        if self.options.corpus:
            self.corpus()
        corpus = self.options.corpus
        target = self.target_of
        for case in cases:
            t = target(case)
            if not t.relevant:  # the seed's one relevant chunk: nothing can repeat
                if corpus and not t.content_hash and self._corpus.position(t.chunk_id) is None:
                    raise InputError(f"chunk {t.chunk_id!r} is not in the corpus {corpus} "
                                     "(give its content_hash, or the chunk's id in the corpus)",
                                     record=case.id, field="target.retrieval.chunk_id")
                yield case
                continue
            listed = [(f"relevant[{i}]", r.chunk_id, r.content_hash)
                      for i, r in enumerate(t.relevant)]
            seen: dict[str, str] = {}
            for where, chunk_id, digest in listed:
                field = f"target.retrieval.{where + '.' if where else ''}"
                key = f"hash:{digest.lower()}" if digest else f"id:{chunk_id}"
                if key in seen:
                    raise InputError(f"the same relevant chunk as {seen[key]}", record=case.id,
                                     field=field + ("content_hash" if digest else "chunk_id"))
                seen[key] = where
                if self.options.corpus and not digest and self._corpus.position(chunk_id) is None:
                    raise InputError(f"chunk {chunk_id!r} is not in the corpus {self.options.corpus} "
                                     "(give its content_hash, or the chunk's id in the corpus; "
                                     f"question {case.name[:80]!r})",
                                     record=case.id, field=field + "chunk_id")
            yield case

    def _select(self, cases: Iterable[Case]) -> Iterable[Case]:
        wanted = set(self.options.dataset)
        if wanted:
            cases = list(cases)
            known = {self.target_of(c).dataset for c in cases}
            unknown = [d for d in self.options.dataset if d not in known]
            if unknown:
                raise ConfigError(
                    f"--dataset {', '.join(map(repr, unknown))}: no case of the suite is in "
                    f"{'that dataset' if len(unknown) == 1 else 'those datasets'}; its datasets: "
                    f"{', '.join(map(repr, sorted(known))) or '(none)'}")
            cases = [c for c in cases if self.target_of(c).dataset in wanted]
        frac = self.options.sampling
        if frac is None or frac >= 1.0:
            return cases
        rng = random.Random(self.options.random_seed)  # noqa: S311 - reproducible sampling
        groups: dict[str, list[Case]] = defaultdict(list)
        for c in cases:
            groups[self.target_of(c).dataset].append(c)
        sampled: list[Case] = []
        for group in groups.values():
            sampled.extend(rng.sample(group, max(1, int(len(group) * frac))))
        rng.shuffle(sampled)
        return sampled
