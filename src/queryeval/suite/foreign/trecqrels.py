"""TREC qrels (``qid iter docid relevance``, read by trec_eval's rules:
:func:`queryeval.suite.trec.read_qrels`) with a queries file, as retrieval questions.

The queries file is the suite, the qrels its ``--labels``: a TSV of ``qid<TAB>text`` (MS
MARCO's ``queries.tsv``, TREC topics as ir_datasets writes them), or JSONL of ``{_id | id |
query_id, text}``. Every judged query becomes a question, in the queries file's order; its
relevant chunks are the judged documents with a relevance above 0, graded. A query judged
only 0 is a question too, its judgements kept with relevance 0: it scores 0 on every ranking
figure and counts in the means, as trec_eval and ``queryeval trec`` count it. With a corpus
(``--corpus``), each document id must name a chunk and its content hash is filled in;
without one, the ids alone identify the chunks.
"""

from __future__ import annotations

from pathlib import Path

from queryeval.errors import InputError
from queryeval.suite.foreign import build
from queryeval.suite.foreign.contexts import ChunkIndex, relevant_from_ids
from queryeval.suite.foreign.records import read_jsonl_records, text
from queryeval.suite.models import Case

ID_FIELDS = ("_id", "id", "query_id", "qid")


def looks_like_qrels(path: Path) -> bool:
    """Whether the first non-comment line of ``path`` has 4 whitespace-separated fields with
    a numeric 4th (a DABench labels file is JSONL: it starts with '{')."""
    from queryeval.io.files import open_text

    try:
        with open_text(path, "suite-lines") as fh:
            for raw in fh:
                if not raw.strip() or raw.lstrip().startswith("#"):
                    continue
                cells = raw.split()
                return len(cells) == 4 and cells[3].lstrip("+-").isdigit()
    except (UnicodeDecodeError, InputError):
        return False
    return False


def read_queries(path: Path) -> list[tuple[str, str, int]]:
    """[(qid, text, line)] from a TSV or a JSONL queries file."""
    from queryeval.io.files import open_text

    out = []
    if path.suffix.lower() == ".jsonl":
        for rec in read_jsonl_records(path):
            key = next((k for k in ID_FIELDS if rec.data.get(k) not in (None, "")), None)
            if key is None:
                raise InputError(f"field required (one of {', '.join(ID_FIELDS)})", path=path,
                                 **rec.where)
            out.append((text(rec, key, path), text(rec, "text", path), rec.where["line"]))
        return out
    with open_text(path, "suite-lines") as fh:
        for line, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            cells = raw.rstrip("\r\n").split("\t")
            if len(cells) < 2 or not cells[0].strip() or not cells[1].strip():
                raise InputError("expected 'qid<TAB>text'", path=path, line=line)
            out.append((cells[0].strip(), "\t".join(cells[1:]).strip(), line))
    return out


def cases(queries_path: Path, qrels_path: Path, index: ChunkIndex | None) -> list[tuple[Case, dict]]:
    from queryeval.suite.trec import read_qrels

    qrels = read_qrels(qrels_path)
    queries = read_queries(queries_path)
    known = {q for q, _, _ in queries}
    missing = sorted(q for q, docs in qrels.items() if q not in known and any(r >= 0 for r in docs.values()))
    if missing:
        raise InputError(f"judged query {missing[0]!r} is not in {queries_path.name}",
                         path=qrels_path)
    out = []
    for qid, question, line in queries:
        judged = qrels.get(qid, {})
        graded = ([(d, r) for d, r in judged.items() if r > 0]
                  or [(d, r) for d, r in judged.items() if r == 0])
        if not graded:
            continue
        where = {"line": line}
        relevant = relevant_from_ids(graded, index, path=qrels_path, where={},
                                     field=f"query {qid}")
        out.append((build.make_case(qid, [{"role": "user", "content": question}],
                                    build.retrieval_target(relevant), path=queries_path,
                                    where=where), where))
    return out
