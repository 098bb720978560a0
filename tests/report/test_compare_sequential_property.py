"""``qe.compare(...).sequential``: the sequential decisions of the compared runs as typed
objects (issue 38), the same ones the compare's ``sequential_note`` prints: a two-run
compare's B, an N-way compare's runs by index, with the baseline's index when it is compared."""

from __future__ import annotations

import queryeval as qe
from queryeval.api.compare import SequentialDecision


def _same(d: SequentialDecision, seq: dict) -> None:
    assert d.decision == seq["decision"]
    assert d.interval == tuple(seq["interval"])
    assert (d.cases_used, d.cases, d.calls_saved) == (seq["cases_used"], seq["cases"],
                                                      seq["calls_saved"])
    assert (d.metric, d.alpha, d.margin, d.baseline) == (seq["metric"], seq["alpha"],
                                                         seq["margin"], seq["baseline"])


def test_nway_decisions_by_run_with_the_baseline_compared(lab, decided):
    comp = qe.compare(lab["base"], decided["good"], decided["bad"], resamples=200)
    got = comp.sequential
    assert [(d.run, d.letter, d.decision, d.baseline_run) for d in got] == \
        [(1, "b", "better", 0), (2, "c", "worse", 0)]
    _same(got[0], decided["seq"]["good"])
    _same(got[1], decided["seq"]["bad"])
    assert got[0].interval[0] > 0 > got[1].interval[1]  # b better, c worse than a
    assert got[0].cases_used + got[0].calls_saved == got[0].cases
    assert [d.note for d in got] == [w for w in comp.warnings if "stopped when decided" in w]
    assert got[1].label == comp.labels[2]


def test_nway_baseline_not_compared_and_no_decision(lab, decided):
    comp = qe.compare(decided["bad"], decided["good"], decided["bad"], resamples=200)
    got = comp.sequential
    assert [(d.run, d.letter, d.baseline_run) for d in got] == [(0, "a", None), (1, "b", None),
                                                                (2, "c", None)]
    assert f"its baseline was {decided['seq']['good']['baseline']}, not a" in got[1].note
    assert qe.compare(lab["base"], lab["base"], lab["base"], resamples=200).sequential == []


def test_two_run_compare_names_b(lab, decided):
    two = qe.compare(lab["base"], decided["good"], resamples=200)
    d = two.sequential
    assert (d.run, d.letter, d.decision, d.baseline_run) == (1, "B", "better", 0)
    _same(d, decided["seq"]["good"])
    assert d.note in two.warnings and d.note.startswith("B stopped when decided: ")
    assert qe.compare(decided["good"], lab["base"], resamples=200).sequential is None
