"""What the tests of repeats share with other test files: ``CASES``, ``seeded_bot`` (moved here from test_repeats.py)."""

from __future__ import annotations

MEX = ("MEX", "Mexico")


def sel(*terms: tuple[str, str]) -> list[dict]:
    return [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": i, "name": n} for i, n in terms]}]}]


N_CASES = 40


PROBS = {f"c{i:02d}": i / (N_CASES - 1) for i in range(N_CASES)}  # 0, 1/39, ..., 1


CASES = [{"id": cid, "conversation": [
    {"role": "user", "content": f"question {cid}", "target": {"indicator_selection": sel(MEX)}}]}
    for cid in PROBS]


def seeded_bot(req: dict) -> dict:
    import random

    rng = random.Random(f"seed-11:{req['case_id']}:{req.get('repeat', 0)}")
    return {"indicator_selection": sel(MEX) if rng.random() < PROBS[req["case_id"]] else []}
