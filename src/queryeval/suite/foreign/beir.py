"""BEIR folders: ``corpus.jsonl`` (``{_id, title, text}``), ``queries.jsonl`` (``{_id,
text}``) and ``qrels/<split>.tsv`` (a ``query-id  corpus-id  score`` header, then one
tab-separated judgement a line; the score is the graded relevance, 0 = not relevant).

Every query judged in the qrels becomes a retrieval question, in ``queries.jsonl`` order;
its relevant chunks are the judged documents with a score above 0, their scores as
relevance, each identified by its id and the MD5 of its ``text`` (the chunk's content; the
title is its document name). A query judged only 0 is a question too, its judgements kept
with relevance 0: nothing in it is relevant, so it scores 0 on every ranking figure and
counts in the means, as trec_eval, pytrec_eval and BEIR count it (``queryeval trec`` too). The split: ``qrels/test.tsv``, else the folder's only qrels
file; a suite path naming a qrels file (``FOLDER/qrels/dev.tsv``) picks that one.
"""

from __future__ import annotations

from pathlib import Path

from queryeval.errors import InputError
from queryeval.suite.foreign import build
from queryeval.suite.foreign.contexts import ChunkIndex, relevant_from_ids
from queryeval.suite.foreign.records import Record, inside_folder, read_jsonl_records, text
from queryeval.suite.models import Case
from queryeval.suite.retrieval import Chunk


def is_beir_folder(path: Path) -> bool:
    """queries.jsonl and qrels/, or queries.jsonl and corpus.jsonl (qrels missing: said so
    by :func:`qrels_of` instead of reading the folder as YAML suites)."""
    return path.is_dir() and (path / "queries.jsonl").is_file() and (
        (path / "qrels").is_dir() or (path / "corpus.jsonl").is_file())


def qrels_of(path: Path) -> tuple[Path, Path]:
    """(folder, qrels file) for a BEIR folder or a qrels file inside one."""
    if path.is_file():
        return path.parent.parent, path
    files = sorted(p for p in (path / "qrels").glob("*.tsv") if p.is_file())
    test = path / "qrels" / "test.tsv"
    if test.is_file():
        return path, test
    if len(files) == 1:
        return path, files[0]
    if not files:
        raise InputError("a BEIR folder needs qrels/<split>.tsv", path=path / "qrels")
    raise InputError("several qrels files and no test.tsv: give one as the suite ("
                     + ", ".join(str(f) for f in files) + ")", path=path)


def is_beir_qrels(path: Path) -> bool:
    return (path.suffix.lower() == ".tsv" and path.parent.name == "qrels"
            and is_beir_folder(path.parent.parent))


def read_qrels_tsv(path: Path) -> dict[str, list[tuple[str, int, int]]]:
    """query id -> [(corpus id, score, line)], in file order: the scores above 0, or a
    query's scores of 0 when it has no score above 0 (judged only non-relevant); negative
    scores are dropped."""
    from queryeval.io.files import open_text

    out: dict[str, list[tuple[str, int, int]]] = {}
    zeros: dict[str, list[tuple[str, int, int]]] = {}
    seen: dict[tuple[str, str], int] = {}
    with open_text(path, "suite-lines") as fh:
        for line, raw in enumerate(fh, start=1):
            cells = raw.rstrip("\r\n").split("\t")
            if not raw.strip():
                continue
            if line == 1 and cells[:2] == ["query-id", "corpus-id"]:
                continue
            if len(cells) != 3:
                raise InputError(f"expected 3 tab-separated fields (query-id, corpus-id, score), "
                                 f"got {len(cells)}", path=path, line=line)
            qid, doc, score = (c.strip() for c in cells)
            try:
                grade = int(score)
            except ValueError:
                raise InputError(f"score must be an integer, got {score!r}", path=path,
                                 line=line, field="score") from None
            if (qid, doc) in seen:
                raise InputError(f"query {qid!r} judges {doc!r} twice (first at line "
                                 f"{seen[qid, doc]})", path=path, line=line)
            seen[qid, doc] = line
            if grade > 0:
                out.setdefault(qid, []).append((doc, grade, line))
            elif grade == 0:
                zeros.setdefault(qid, []).append((doc, grade, line))
    return {q: out.get(q) or zeros[q] for q in dict.fromkeys([*out, *zeros])}


def read_corpus(path: Path) -> list[Chunk]:
    chunks = []
    for rec in read_jsonl_records(path):
        chunks.append(Chunk(chunk_id=text(rec, "_id", path), content=text(rec, "text", path,
                                                                           required=False),
                            document_name=text(rec, "title", path, required=False)))
    return chunks


def cases(path: Path) -> tuple[list[tuple[Case, dict]], list[Path], Path]:
    """The cases of a BEIR folder (or of one of its qrels files), its source files, its root."""
    folder, qrels_path = qrels_of(path)
    corpus_path, queries_path = folder / "corpus.jsonl", folder / "queries.jsonl"
    if not corpus_path.is_file():
        raise InputError("a BEIR folder needs corpus.jsonl", path=folder)
    # only the folder's own files: a downloaded folder's link to another file is refused
    for part in (corpus_path, queries_path, qrels_path):
        inside_folder(folder, part.relative_to(folder).as_posix()
                      if part.is_relative_to(folder) else str(part), "file")
    index = ChunkIndex(read_corpus(corpus_path))
    qrels = read_qrels_tsv(qrels_path)
    queries: dict[str, tuple[str, Record]] = {}
    for rec in read_jsonl_records(queries_path):
        queries[text(rec, "_id", queries_path)] = (text(rec, "text", queries_path), rec)
    missing = [q for q in qrels if q not in queries]
    if missing:
        line = qrels[missing[0]][0][2]
        raise InputError(f"query {missing[0]!r} is not in {queries_path.name}", path=qrels_path,
                         line=line, field="query-id")
    out = []
    for qid, (question, rec) in queries.items():
        judged = qrels.get(qid)
        if not judged:
            continue
        for doc, _grade, line in judged:
            if doc not in index.by_id:
                raise InputError(f"document {doc!r} is not in {corpus_path.name}",
                                 path=qrels_path, line=line, field="corpus-id")
        relevant = relevant_from_ids([(d, g) for d, g, _ in judged], index, path=qrels_path,
                                     where={}, field="corpus-id")
        out.append((build.make_case(qid, [{"role": "user", "content": question}],
                                    build.retrieval_target(relevant), path=queries_path,
                                    where=rec.where), {"line": rec.where["line"]}))
    return out, [corpus_path, queries_path, qrels_path], folder
