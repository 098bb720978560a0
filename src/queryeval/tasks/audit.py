"""The suite health check (``queryeval audit``, ``qe.audit``) for every task kind.

Each check decides only what it can prove and says what it rests on (docs/audit.md):

* query cases: every gold runs twice in the sandboxed query workers, as a prediction is
  scored (:mod:`queryeval.tasks.query.audit`): ``gold_fails``,
  ``gold_timeout``, ``empty_gold``, ``row_limit``, ``gold_not_perfect`` (the second run scored
  against the first is not perfect, or the gold reads the clock or a random number),
  ``tie_order``, ``unordered_limit``, ``near_deadline``, ``under_constrained``;
* answers (``@name[value]``): the labels written as a response are read back and scored
  (``gold_fails`` when they do not read back, ``gold_not_perfect`` when they score below 1,
  ``empty_gold`` for an empty value);
* freeform: the reference answer as the response, through the task's own ladder
  (``gold_not_perfect`` when the ladder does not pass it; ``gold_fails`` when it raises);
* retrieval: ``empty_gold`` (no chunk marked relevant, or, with ``--corpus``, a relevant chunk
  the corpus lacks) and ``ambiguous_relevance`` (a relevant chunk whose text equals, after
  whitespace and letter case, or nearly equals, word 3-shingle Jaccard >= 0.9, a chunk not
  marked relevant);
* every kind: ``duplicates`` / ``conflicting_duplicates`` (the same normalised question on
  the same source; conflicting when the golds differ: query golds by their results),
  ``gold_drift`` (a pinned result fingerprint, ``<suite>.pins.json``, no longer matches) and,
  with runs, ``consensus_failure`` / ``not_discriminating``.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from queryeval.errors import ConfigError, InputError, OutputError
from queryeval.suite.models import Case
from queryeval.tasks.audit_model import AuditReport, Finding, summarise
from queryeval.tasks.query.audit import fingerprint

NEAR_JACCARD = 0.9
"""Two chunk texts whose word 3-shingle sets have a Jaccard index at least this are near-equal."""
SHINGLE = 3
PINS_SUFFIX = ".pins.json"

_STATUS_KIND = {"failed": "gold_fails", "refused": "gold_fails", "timeout": "gold_timeout",
                "empty": "empty_gold", "nondeterministic": "gold_not_perfect",
                "row_limit": "row_limit", "tie_order": "tie_order"}
_FIX = {
    "gold_fails": "fix the gold so it runs on the case's source (or drop the case)",
    "gold_timeout": "make the gold faster or raise --query-timeout",
    "empty_gold": "check the gold: an empty result cannot tell a wrong prediction from a "
                  "right one",
    "row_limit": "narrow the gold or raise --max-rows",
    "gold_not_perfect": "make the gold deterministic: a total ORDER BY, no clock or random "
                        "number",
    "tie_order": "add a tie-breaking key to ORDER BY (or list the tied rows as alternatives)",
    "unordered_limit": "add ORDER BY with a total order before LIMIT/OFFSET",
    "near_deadline": "make the gold faster or raise --query-timeout",
    "under_constrained": "tighten the question or drop the redundant clause",
}


# --- normalisation --------------------------------------------------------------------------

def normalise_text(text: str) -> str:
    """NFKC, letter case folded, whitespace collapsed, surrounding punctuation dropped."""
    text = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return text.strip(" .?!;:,")


PROMPT_METADATA = ("constraints", "format")
"""Metadata sent to the system with the question (DABench's constraints and answer format):
part of what is asked, so two cases that differ there ask different things."""


def question_of(case: Case) -> str:
    """The case's user turns, normalised (a multi-turn case is its whole conversation), and
    the :data:`PROMPT_METADATA` sent with them."""
    meta = case.metadata or {}
    return " || ".join([*(normalise_text(t.content) for t in case.conversation
                          if t.role == "user"),
                        *(normalise_text(str(meta[k])) for k in PROMPT_METADATA if meta.get(k))])


def target_of(case: Case) -> Any:
    """The target of the case's last scored turn (the one a run scores)."""
    scored = case.scored_turns()
    return case.conversation[scored[-1]].target if scored else None


def kind_of(case: Case) -> str | None:
    kinds = sorted(case.task_kinds())
    return kinds[0] if len(kinds) == 1 else (",".join(kinds) or None)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


# --- query ----------------------------------------------------------------------------------

def query_findings(golds: list[dict]) -> list[Finding]:
    """The findings of the per-gold audit entries (:func:`queryeval.tasks.query.audit.audit_cases`)."""
    out: list[Finding] = []
    for g in golds:
        cid, number = g["case_id"], g["gold"]
        base = {"gold": number, "query": g["query"]}
        kind = _STATUS_KIND.get(g["status"])
        volatile = g.get("volatile") or []
        if kind == "gold_not_perfect" or volatile:
            ev = {**base, "ceiling": g.get("ceiling")}
            if kind == "gold_not_perfect":
                ev["reason"] = g.get("reason")
            if volatile:
                ev["reads"] = volatile
            out.append(Finding.of(cid, "gold_not_perfect", ev, _FIX["gold_not_perfect"]))
        if kind is not None and kind != "gold_not_perfect":
            ev = {**base, "status": g["status"], "reason": g.get("reason")}
            if kind == "tie_order":
                ev["tie"] = g.get("tie_order")
            out.append(Finding.of(cid, kind, ev, _FIX[kind]))
        if "tie_order" in g and kind != "tie_order":
            out.append(Finding.of(cid, "tie_order", {**base, "tie": g["tie_order"]},
                                  _FIX["tie_order"]))
        if "LIMIT/OFFSET without ORDER BY" in g.get("warnings", []):
            out.append(Finding.of(cid, "unordered_limit", base, _FIX["unordered_limit"]))
        for name in ("near_deadline", "under_constrained"):
            if name in g:
                out.append(Finding.of(cid, name, {**base, **g[name]}, _FIX[name]))
    return out


# --- answers and freeform -------------------------------------------------------------------

def answers_findings(case: Case, target: Any, match: str = "numeric") -> list[Finding]:
    """The labels written as ``@name[value]`` and scored as the response."""
    from queryeval.metrics.answers import extract_answers, score_question

    labels = [(a.name, a.value) for a in (target.answers or [])]
    if not labels:
        return [Finding.of(case.id, "empty_gold", {"answers": []},
                           "give the case its labels (target.answers)")]
    out = []
    empty = [n for n, v in labels if not v.strip()]
    if empty:
        # an empty value is read back and scored (``@name[]``): a "none" answer the labels
        # may mean (DABench's "no outliers"), so a warning to check, not a defect
        out.append(Finding.of(case.id, "empty_gold", {"empty_labels": empty},
                              "check the label: an empty value means the answer is 'none'",
                              severity="warning"))
    text = " ".join(f"@{n}[{v}]" for n, v in labels)
    expected = dict(labels)
    read = extract_answers(text)
    unread = {n: v for n, v in expected.items() if read.get(n) != v}
    if unread:
        out.append(Finding.of(case.id, "gold_fails",
                              {"unreadable_labels": unread, "read_back": {n: read.get(n) for n in unread}},
                              "a value with ']' , '@' or a line break cannot be written as "
                              "@name[value]: reword the label"))
        return out
    try:
        score = score_question(labels, text, match=match)  # type: ignore[arg-type]
    except ValueError as exc:
        return [*out, Finding.of(case.id, "gold_fails", {"error": str(exc)},
                                 "fix the labels")]
    if score.correct < score.total:
        out.append(Finding.of(case.id, "gold_not_perfect",
                              {"score": f"{score.correct}/{score.total}",
                               "match": match},
                              "repeated label names keep their last value: rename or merge "
                              "them"))
    return out


def freeform_findings(case: Case, target: Any, options: Any) -> list[Finding]:
    """The reference answer as the response, through the freeform ladder."""
    from queryeval.metrics.freeform.ladder import decide

    ref = target.reference
    if not ref.answer.strip():
        return [Finding.of(case.id, "empty_gold", {"answer": ref.answer},
                           "give the case a reference answer")]
    question = next((t.content for t in reversed(case.conversation) if t.role == "user"), "")
    kwargs = {"aliases": ref.aliases, "abs_tol": ref.abs_tol, "rel_tol": ref.rel_tol,
              "unit": ref.unit, "question": question}
    if options is not None:
        kwargs.update(dayfirst=options.dayfirst, squad=options.squad)
    try:
        d = decide(ref.answer, ref.answer, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a reference the ladder cannot read is the finding
        return [Finding.of(case.id, "gold_fails", {"answer": ref.answer, "unit": ref.unit,
                                                   "error": f"{type(exc).__name__}: {exc}"},
                           "fix the reference (its unit or tolerances)")]
    if d.verdict != "pass":
        return [Finding.of(case.id, "gold_not_perfect",
                           {"answer": ref.answer, "rule": d.rule, "verdict": d.verdict,
                            "detail": d.detail},
                           "the reference does not pass as its own answer: reword it (the "
                           "question's own numbers are context, not an answer)")]
    return []


# --- retrieval ------------------------------------------------------------------------------

def shingles(text: str, k: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    words = normalise_text(text).split()
    if len(words) < k:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i:i + k]) for i in range(len(words) - k + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class _CorpusView:
    """The corpus's chunks by id and by content hash, their normalised texts and shingles,
    and an inverted index of shingles (so near-equal candidates are found without comparing
    every pair)."""

    def __init__(self, corpus: Any) -> None:
        self.ids: dict[str, int] = {}
        self.hashes: dict[str, int] = {}
        self.norm: list[str] = []
        self.shingles: list[frozenset] = []
        self.chunk_ids: list[str] = []
        self.by_norm: dict[str, list[int]] = {}
        self.index: dict[tuple, list[int]] = {}
        for i, chunk in enumerate(corpus):
            self.chunk_ids.append(chunk.chunk_id)
            self.ids.setdefault(chunk.chunk_id, i)
            self.hashes.setdefault(hashlib.md5(chunk.content.encode("utf-8")).hexdigest(), i)
            norm = normalise_text(chunk.content)
            self.norm.append(norm)
            self.by_norm.setdefault(norm, []).append(i)
            sh = shingles(chunk.content)
            self.shingles.append(sh)
            for s in sh:
                self.index.setdefault(s, []).append(i)

    def find(self, chunk_id: str, digest: str) -> int | None:
        if digest and digest.lower() in self.hashes:
            return self.hashes[digest.lower()]
        return self.ids.get(chunk_id) if chunk_id else None

    def near(self, i: int) -> list[tuple[int, float]]:
        """Chunks whose shingle Jaccard with chunk ``i`` is >= NEAR_JACCARD. Two sets with
        Jaccard >= t share at least t * max(|A|, |B|) shingles, so a candidate must share
        one of chunk i's shingles (the index finds every such chunk)."""
        mine = self.shingles[i]
        if not mine:
            return []
        counts: dict[int, int] = {}
        for s in mine:
            postings = self.index.get(s, ())
            if len(postings) > 2000:  # a boilerplate shingle: the rest decide
                continue
            for j in postings:
                if j != i:
                    counts[j] = counts.get(j, 0) + 1
        out = []
        for j, shared in counts.items():
            other = self.shingles[j]
            if shared < NEAR_JACCARD * max(len(mine), len(other)) - 1e-9:
                # with boilerplate postings skipped, recount exactly before refusing
                shared = len(mine & other)
            score = shared / (len(mine) + len(other) - shared)
            if score >= NEAR_JACCARD:
                out.append((j, score))
        return out


def retrieval_findings(case: Case, target: Any, view: _CorpusView | None) -> list[Finding]:
    relevant = ([c for c in target.relevant if c.relevance > 0] if target.relevant is not None
                else ([{"chunk_id": target.chunk_id, "content_hash": target.content_hash}]
                      if (target.chunk_id or target.content_hash) else []))
    pairs = [(c["chunk_id"], c["content_hash"]) if isinstance(c, dict)
             else (c.chunk_id, c.content_hash) for c in relevant]
    if not pairs:
        return [Finding.of(case.id, "empty_gold", {"relevant": []},
                           "mark at least one chunk relevant (or drop the case)")]
    if view is None:
        return []
    out = []
    found, missing = [], []
    for chunk_id, digest in pairs:
        i = view.find(chunk_id, digest)
        (missing.append({"chunk_id": chunk_id, "content_hash": digest}) if i is None
         else found.append(i))
    if missing:
        out.append(Finding.of(case.id, "empty_gold", {"missing_from_corpus": missing},
                              "the target names chunks the corpus lacks: fix the ids or the "
                              "corpus"))
    marked = set(found)
    ambiguous = []
    for i in found:
        exact = [j for j in view.by_norm.get(view.norm[i], []) if j not in marked]
        for j in exact:
            ambiguous.append({"relevant": view.chunk_ids[i], "other": view.chunk_ids[j],
                              "match": "exact", "jaccard": 1.0})
        for j, score in view.near(i):
            if j not in marked and j not in exact:
                ambiguous.append({"relevant": view.chunk_ids[i], "other": view.chunk_ids[j],
                                  "match": "near", "jaccard": round(score, 4)})
    if ambiguous:
        out.append(Finding.of(case.id, "ambiguous_relevance",
                              {"pairs": ambiguous[:20], "count": len(ambiguous)},
                              "mark the other chunk relevant too, or deduplicate the corpus"))
    return out


# --- duplicates -----------------------------------------------------------------------------

def _context(case: Case, target: Any) -> str:
    """What else a question is asked about: the query's source, the retrieval dataset, the
    answers' table file."""
    if target is None:
        return ""
    if target.query is not None:
        return str(target.query.source or "")
    if target.retrieval is not None:
        return target.retrieval.dataset
    meta = case.metadata or {}
    return _canonical(meta.get("file_name") or meta.get("tables") or meta.get("table") or "")


def _gold_key(case: Case, target: Any, results: dict[str, list[str | None]]) -> str:
    """What the case expects: a query gold's result fingerprints (its text when it did not
    run), or the target itself."""
    if target.query is not None:
        prints = results.get(case.id)
        if prints and all(p is not None for p in prints):
            return _canonical(sorted(set(prints)))
        return _canonical([target.query.gold, *target.query.alternatives])
    return _canonical(target.model_dump(mode="json", exclude_none=True))


def duplicate_findings(cases: list[Case], results: dict[str, list[str | None]]) -> list[Finding]:
    groups: dict[tuple, list[Case]] = {}
    for case in cases:
        target = target_of(case)
        if target is None:
            continue
        groups.setdefault((kind_of(case), _context(case, target), question_of(case)),
                          []).append(case)
    out = []
    for (_kind, _ctx, question), members in groups.items():
        if len(members) < 2:
            continue
        keys = {c.id: _gold_key(c, target_of(c), results) for c in members}
        conflicting = len(set(keys.values())) > 1
        for c in members:
            others = [o.id for o in members if o.id != c.id]
            if conflicting:
                differing = [o for o in others if keys[o] != keys[c.id]]
                out.append(Finding.of(c.id, "conflicting_duplicates",
                                      {"question": question, "others": others,
                                       "different_gold": differing},
                                      "decide which gold is right; keep one case"))
            else:
                out.append(Finding.of(c.id, "duplicates", {"question": question,
                                                            "others": others},
                                      "keep one of the repeated cases"))
    return out


# --- pins -----------------------------------------------------------------------------------

def pins_path(suite: Path) -> Path:
    suite = Path(suite)
    return suite.with_name(suite.name.rstrip("/") + PINS_SUFFIX)


def read_pins(path: Path) -> dict[str, list[str | None]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from exc
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not JSON ({exc})", path=path) from exc
    pins = doc.get("pins") if isinstance(doc, dict) else None
    if not isinstance(pins, dict) or not all(
            isinstance(v, list) and all(p is None or isinstance(p, str) for p in v)
            for v in pins.values()):
        raise InputError("not a pins file: expected {\"pins\": {case_id: [sha256 or null, "
                         "...]}}", path=path, field="pins")
    return pins


def write_pins(path: Path, results: dict[str, list[str | None]]) -> None:
    from queryeval.io.atomic import write_text_atomic

    doc = {"format": "queryeval-pins/1", "hash": "sha256 of the canonical sorted result",
           "pins": results}
    try:
        write_text_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror})") from exc


def drift_findings(pins: dict[str, list[str | None]],
                   results: dict[str, list[str | None]]) -> list[Finding]:
    """A gold whose result ran and whose fingerprint differs from the pinned one. A gold that
    did not run now (or was not pinned) proves nothing about drift."""
    out = []
    for cid, now in results.items():
        old = pins.get(cid)
        if old is None:
            continue
        for number, (was, is_) in enumerate(zip(old, now, strict=False)):
            if was is not None and is_ is not None and was != is_:
                out.append(Finding.of(cid, "gold_drift", {"gold": number, "pinned": was,
                                                          "now": is_},
                                      "the data or the engine changed: check the gold and "
                                      "pin again (--pin)"))
    return out


# --- runs -----------------------------------------------------------------------------------

def prediction_key(record: dict) -> str | None:
    """What a run's record predicted, canonical, so two runs' predictions compare: a query's
    predicted result fingerprint (else its text), the answers read from a response, the
    retrieved chunk ids, the response text. ``None`` when the record has no prediction."""
    if record.get("pred_fingerprint"):
        return "result:" + str(record["pred_fingerprint"])
    if record.get("predicted_query"):
        return "query:" + " ".join(str(record["predicted_query"]).split())
    if isinstance(record.get("extracted"), dict):
        return "answers:" + _canonical(record["extracted"])
    retrieved = record.get("retrieved_chunks") or record.get("retrieved")
    if isinstance(retrieved, list):
        return "chunks:" + _canonical([c.get("chunk_id") or c.get("content_hash")
                                       if isinstance(c, dict) else c for c in retrieved])
    if isinstance(record.get("response"), str) and record["response"].strip():
        from queryeval.metrics.answers import extract_answers

        pairs = extract_answers(record["response"])
        if pairs:
            return "answers:" + _canonical(pairs)
        return "text:" + normalise_text(record["response"])
    return None


def consensus_findings(runs: list[Any], case_ids: Iterable[str],
                       result_of: Any = None) -> list[Finding]:
    """``consensus_failure`` for a case every run has, every run fails, and every run
    predicted the same way; ``not_discriminating`` (a note) for one every run passes.
    ``result_of(record)``: the fingerprint of a query record's predicted result (its
    prediction run again on the case's source), so "the same way" is the same result, not
    the same text; ``None`` when it did not run (then the case proves nothing)."""
    if len(runs) < 2:
        raise ConfigError("--runs needs two runs or more (a consensus is of several systems)")
    per_run, per_record = [], []
    for run in runs:
        task = run.task
        records = {r["case_id"]: r for r in run.records if "case_id" in r}
        per_record.append(records)
        per_run.append({cid: (bool(task.case_passed(r)), prediction_key(r))
                        for cid, r in records.items()})
    out = []
    for cid in case_ids:
        seen = [p.get(cid) for p in per_run]
        if any(s is None for s in seen):
            continue
        if all(passed for passed, _ in seen):
            out.append(Finding.of(cid, "not_discriminating", {"runs": len(runs)},
                                  "every run gets it right: it does not rank the systems"))
        elif not any(passed for passed, _ in seen):
            if result_of is not None and any(
                    k is not None and k.startswith("query:") for _, k in seen):
                records = [p_records[cid] for p_records in per_record]
                seen = [(False, None if (fp := result_of(r)) is None else "result:" + fp)
                        for r in records]
            keys = {k for _, k in seen}
            if len(keys) == 1 and None not in keys:
                out.append(Finding.of(cid, "consensus_failure",
                                      {"runs": len(runs), "prediction": next(iter(keys))[:500]},
                                      "every run predicts the same thing: check the gold "
                                      "against it"))
    return out


# --- platinum -------------------------------------------------------------------------------

def write_platinum(path: Path, cases: list[Case], flagged: set[str]) -> int:
    """The cases with no defect or warning, as a suite the loader reads (JSONL of cases for
    ``.jsonl``, else YAML documents). Returns how many were written."""
    from queryeval.io.atomic import write_text_atomic

    kept = [c for c in cases if c.id not in flagged]
    docs = [c.model_dump(mode="json", exclude_defaults=True) for c in kept]
    for d, c in zip(docs, kept, strict=True):
        d["id"], d["conversation"] = c.id, [t.model_dump(mode="json", exclude_defaults=True)
                                            for t in c.conversation]
    if Path(path).suffix.lower() == ".jsonl":
        text = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    else:
        import yaml

        text = "".join("---\n" + yaml.safe_dump(d, allow_unicode=True, sort_keys=False)
                       for d in docs)
    try:
        write_text_atomic(Path(path), text)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror})") from exc
    return len(kept)


# --- the whole audit ------------------------------------------------------------------------

def audit_suite(suite: str | Path, *, labels: str | Path | None = None,
                corpus: str | Path | None = None, query_options: dict | None = None,
                neighbours: int = 0, runs: list[Any] | None = None, pin: bool = False,
                platinum: str | Path | None = None, cache: bool = True) -> AuditReport:
    """Audit every case of ``suite`` (see the module's docstring); ``runs``: loaded runs
    (``qe.Run``: ``.task`` and ``.records``) for the consensus check; ``pin``: write the query golds' result
    fingerprints to ``<suite>.pins.json`` (else compare with it when it exists);
    ``platinum``: write the cases with no finding there; ``cache`` False: every gold
    executed now, its cached result refreshed (``--no-cache``)."""
    import time

    from queryeval.suite import load_suite

    started = time.perf_counter()
    loaded = load_suite(suite, labels=labels, corpus=corpus)
    cases = list(loaded.iter_cases())
    query_task = None
    try:
        findings, golds, results = _case_findings(cases, corpus, query_options, neighbours)
        if any(target_of(c) is not None and target_of(c).query is not None for c in cases):
            from queryeval.tasks.query.task import QueryTask

            query_task = QueryTask(query_options or {})
            golds = _audit_golds(query_task, cases, neighbours, cache)
            findings += query_findings(golds)
            for g in golds:
                results.setdefault(g["case_id"], []).append(g.get("fingerprint"))
        findings += duplicate_findings(cases, results)
        pins_file = pins_path(Path(suite))
        if pin:
            write_pins(pins_file, results)
        elif pins_file.is_file():
            findings += drift_findings(read_pins(pins_file), results)
        if runs:
            loaded_runs = list(runs)
            result_of = None
            if query_task is not None:
                task = query_task

                def result_of(record: dict) -> str | None:
                    """The fingerprint of the prediction's result; None when it did not run
                    or returned no rows (runs that all find nothing agree on no answer)."""
                    table, info = task._execute(record["source"], record["predicted_query"])
                    return None if table is None or not info.get("rows") else fingerprint(table)
            findings += consensus_findings(loaded_runs, [c.id for c in cases], result_of)
    finally:
        if query_task is not None:
            query_task.close()
    order = {c.id: i for i, c in enumerate(cases)}
    findings.sort(key=lambda f: (order.get(f.case_id, len(order)), f.case_id))
    report = AuditReport(findings=findings, golds=golds)
    extra: dict[str, Any] = {"seconds": round(time.perf_counter() - started, 3)}
    if pin:
        extra["pinned"] = str(pins_file)
    if runs:
        extra["runs"] = len(runs)
    if platinum is not None:
        extra["platinum"] = {"path": str(platinum),
                             "cases": write_platinum(Path(platinum), cases, report.flagged())}
    report.summary = summarise([c.id for c in cases], findings, **extra)
    return report


def _audit_golds(task: Any, cases: list[Case], neighbours: int, cache: bool = True
                 ) -> list[dict]:
    from queryeval.tasks.query.audit import audit_cases

    return audit_cases(task, [c for c in cases if (t := target_of(c)) is not None
                              and t.query is not None], neighbours, read_cache=cache)


def _case_findings(cases: list[Case], corpus: str | Path | None, query_options: dict | None,
                   neighbours: int) -> tuple[list[Finding], list[dict], dict]:
    """The findings of the answers, freeform and retrieval targets (no execution)."""
    findings: list[Finding] = []
    view = None
    if corpus is not None and any(target_of(c) is not None and target_of(c).retrieval
                                  is not None for c in cases):
        from queryeval.suite.corpus_stream import open_corpus

        opened = open_corpus(str(corpus))
        try:
            view = _CorpusView(opened)
        finally:
            close = getattr(opened, "close", None)
            if close is not None:
                close()
    freeform_options = None
    for case in cases:
        target = target_of(case)
        if target is None:
            continue
        if target.answers is not None:
            findings += answers_findings(case, target)
        if target.reference is not None:
            if freeform_options is None:
                from queryeval.tasks.freeform.task import FreeformTask

                freeform_options = FreeformTask().options
            findings += freeform_findings(case, target, freeform_options)
        if target.retrieval is not None:
            findings += retrieval_findings(case, target.retrieval, view)
    return findings, [], {}
