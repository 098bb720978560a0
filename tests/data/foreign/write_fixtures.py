"""Writes the committed fixtures beside this script with the libraries' own writers:
DeepEval 4.3.1 (``EvaluationDataset.save_as``) and ragas 0.4.3 (``Testset`` and
``EvaluationDataset``: ``to_csv`` / ``to_jsonl``, ``to_hf_dataset().save_to_disk``).

Run from this folder with a venv holding them (not the test extra):
    python -m venv /tmp/v && /tmp/v/bin/pip install deepeval==4.3.1 ragas==0.4.3
    /tmp/v/bin/python write_fixtures.py

The data is the corpus in ``corpus.jsonl`` (written here too) and five questions:
four retrieval questions (reference contexts = chunks; recorded retrieved contexts, best
first) and one answer-only sample (a reference, no contexts), in every file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHUNKS = {
    "c1": "Paris is the capital of France.",
    "c2": "Berlin is the capital of Germany.",
    "c3": "Madrid is the capital of Spain.",
    "c4": "Rome is the capital of Italy.",
    "c5": "Lisbon is the capital of Portugal.",
    "c6": "Vienna is the capital of Austria.",
}
C = CHUNKS
# (question, reference contexts, reference answer, retrieved contexts, response)
ROWS = [
    ("Capital of France?", [C["c1"]], "Paris", [C["c3"], C["c1"], C["c2"]], "Paris"),
    ("Capitals of Germany and Spain?", [C["c2"], C["c3"]], "Berlin and Madrid",
     [C["c2"], C["c4"], C["c5"], C["c3"]], "Berlin and Madrid"),
    ("Capital of Italy?", [C["c4"]], "Rome", [C["c6"], C["c5"], C["c2"]], "Vienna"),
    # an empty retrieval: DeepEval's JSONL and CSV write it as ""
    ("Capital of Portugal?", [C["c5"]], "Lisbon", [], "I do not know"),
]
ANSWER_ONLY = ("Largest planet?", "Jupiter", "Jupiter")


def deepeval_files(out: Path) -> None:
    from deepeval.dataset import EvaluationDataset, Golden

    goldens = [Golden(input=q, context=ref, expected_output=a, retrieval_context=got,
                      actual_output=resp) for q, ref, a, got, resp in ROWS]
    goldens.append(Golden(input=ANSWER_ONLY[0], expected_output=ANSWER_ONLY[1],
                          actual_output=ANSWER_ONLY[2]))
    ds = EvaluationDataset(goldens=goldens)
    for kind in ("json", "jsonl", "csv"):
        ds.save_as(file_type=kind, directory=str(out), file_name="deepeval_goldens")


PIPE_CHUNKS = {"t1": "2020 | 5 million", "t2": "Revenue grew in 2021."}


def deepeval_pipe_file(out: Path) -> None:
    """A context holding ``|`` (a markdown table row): DeepEval's JSONL joins it with the
    next context, and no reader can tell where one ends."""
    from deepeval.dataset import EvaluationDataset, Golden

    (out / "corpus_pipe.jsonl").write_text("".join(
        json.dumps({"chunk_id": k, "content": v}) + "\n" for k, v in PIPE_CHUNKS.items()))
    ds = EvaluationDataset(goldens=[Golden(input="Revenue by year?",
                                           context=list(PIPE_CHUNKS.values()),
                                           expected_output="It grew")])
    ds.save_as(file_type="jsonl", directory=str(out), file_name="deepeval_pipe")


BRACKET_CHUNKS = {"b1": "[1] Paris is the capital of France.",
                  "b2": "[2] Berlin is the capital of Germany.",
                  "b3": "[3] Madrid is the capital of Spain."}


def deepeval_bracket_file(out: Path) -> None:
    """Contexts that begin with ``[`` (numbered citations): DeepEval's CSV holds them as
    ``[1] ...|[2] ...``, a text beginning with ``[`` that is no list."""
    from deepeval.dataset import EvaluationDataset, Golden

    (out / "corpus_bracket.jsonl").write_text("".join(
        json.dumps({"chunk_id": k, "content": v}) + "\n" for k, v in BRACKET_CHUNKS.items()))
    b = BRACKET_CHUNKS
    ds = EvaluationDataset(goldens=[
        Golden(input="Capital of France?", context=[b["b1"]], expected_output="Paris",
               retrieval_context=[b["b3"], b["b1"]], actual_output="Paris"),
        Golden(input="Capital of Germany?", context=[b["b2"]], expected_output="Berlin",
               retrieval_context=[b["b3"]], actual_output="Madrid")])
    ds.save_as(file_type="csv", directory=str(out), file_name="deepeval_bracket")


def ragas_files(out: Path) -> None:
    from ragas import EvaluationDataset
    from ragas.dataset_schema import SingleTurnSample
    from ragas.testset.synthesizers.testset_schema import Testset, TestsetSample

    samples = [SingleTurnSample(user_input=q, reference_contexts=ref, reference=a,
                                retrieved_contexts=got, response=resp)
               for q, ref, a, got, resp in ROWS]
    answer = SingleTurnSample(user_input=ANSWER_ONLY[0], reference=ANSWER_ONLY[1],
                              response=ANSWER_ONLY[2])
    mixed = EvaluationDataset(samples=[*samples, answer])
    mixed.to_jsonl(str(out / "ragas_mixed.jsonl"))
    mixed.to_csv(str(out / "ragas_mixed.csv"))
    folder = out / "ragas_mixed_hf"
    shutil.rmtree(folder, ignore_errors=True)
    mixed.to_hf_dataset().save_to_disk(str(folder))
    testset = Testset(samples=[
        TestsetSample(eval_sample=SingleTurnSample(user_input=q, reference_contexts=ref,
                                                   reference=a),
                      synthesizer_name="single_hop_specifc_query_synthesizer")
        for q, ref, a, _got, _resp in ROWS])
    testset.to_csv(str(out / "ragas_testset.csv"))
    testset.to_jsonl(str(out / "ragas_testset.jsonl"))


def main() -> None:
    (HERE / "corpus.jsonl").write_text("".join(
        json.dumps({"chunk_id": k, "content": v}) + "\n" for k, v in CHUNKS.items()))
    deepeval_files(HERE)
    deepeval_pipe_file(HERE)
    deepeval_bracket_file(HERE)
    ragas_files(HERE)


if __name__ == "__main__":
    main()
