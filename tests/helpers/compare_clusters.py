"""What the tests of compare clusters share with other test files: ``_runs`` (moved here from test_compare_clusters.py)."""

from __future__ import annotations

import queryeval as qe

CLUSTERS, SIZE = 20, 10


A_PASSES = set(range(12))            # A passes every case of clusters 0..11


B_PASSES = set(range(8)) | {12}      # B: 0..7 and 12 (4 clusters lost, 1 won)


def _cases(cluster: str | None):
    out = []
    for g in range(CLUSTERS):
        for k in range(SIZE):
            case = {"id": f"c{g:02d}-{k}", "conversation": [{
                "role": "user", "content": f"question {k} about file {g}?",
                "target": {"reference": {"answer": "Paris"}}}]}
            if cluster == "shared":
                case["cluster"] = f"file{g:02d}.csv"
            elif cluster == "own":
                case["cluster"] = f"c{g:02d}-{k}"
            out.append(case)
    return out


def _responses(passes: set[int]):
    return [{"id": f"c{g:02d}-{k}", "response": "Paris" if g in passes else "Rome"}
            for g in range(CLUSTERS) for k in range(SIZE)]


def _runs(tmp_path, cluster):
    out = tmp_path / cluster if cluster else tmp_path / "none"
    a = qe.evaluate(_cases(cluster), responses=_responses(A_PASSES), out=out / "a")
    b = qe.evaluate(_cases(cluster), responses=_responses(B_PASSES), out=out / "b")
    return a.path, b.path
