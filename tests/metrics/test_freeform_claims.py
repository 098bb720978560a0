"""The free-form ladder passes only what it proves (docs/freeform.md, "What a rule can
prove"): a response whose figure is negated, bounded, compared, hedged or re-scaled is never
a rule's pass; every Unicode minus, vulgar fractions, per mille, basis points and the scale
words are read or leave the case inconclusive; plain restatements still pass.

A template product builds, for each reference form, responses of each family; a hypothesis
test draws the reference's value; the examples of issue 35 are explicit cases; a
``queryeval run`` in tmp_path shows the pass rate and names the undecided cases."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.freeform import decide
from queryeval.metrics.freeform.numbers import extract_numbers, vulgar_value

# reference form -> (answer, the number as written, what follows it, other plain spellings)
FORMS = {
    "integer": ("42", "42", "", ["42"]),
    "decimal": ("3.25", "3.25", "", ["3.25"]),
    "negative": ("-7", "-7", "", ["-7", "\u22127", "\u20137", "\u20127", "\uff0d7"]),
    "percent": ("12%", "12", "%", ["12%", "12 percent", "12 per cent"]),
    "unit": ("3.5 km", "3.5", " km", ["3.5 km", "3,500 m", "3500 metres"]),
    "date": ("2020-01-05", None, None, ["2020-01-05", "January 5, 2020", "5 January 2020"]),
    "text": ("Paris", None, None, ["Paris"]),
}
# plain restatements: every one must pass (for a text answer only the bare forms: a
# sentence around a text answer is a paraphrase, which no rule decides)
BARE = ["{r}", "{r}.", "  {r}  ", "**{r}**", "{r}!"]
SENTENCES = ["The answer is {r}.", "It is {r}.", "It's {r}.", "Answer: {r}", "It was {r}.",
             "- {r}", "That is {r}, as the report says.", "It is <b>{r}</b>.<br/>"]
NEGATION = [
    "It is not {r}.", "It isn't {r}", "It isn\u2019t {r}", "No, {r} is wrong.",
    "{r} is incorrect.", "Not {r}.", "\u2260 {r}", "\u00ac{r}", "{r}? No.", "It can't be {r}.",
    "Definitely not {r}", "never {r}", "{r} is false", "anything but {r}", "other than {r}",
    "except {r}", "It wasn't {r}", "{r} != the answer", "It cannot be {r}", "nothing like {r}",
    "It isnt {r}", "{r} is untrue", "Nope: {r} is mistaken", "{r}, unlike what you think",
    "Negative, {r}.", "all but {r}", "{r} \u2717", "\u274c {r}", "<s>{r}</s>", "<del>{r}</del>",
    "~~{r}~~", "{r}. Just kidding.", "It used to be {r}.", "The opposite of {r}",
    "n\u200bot {r}", "{r} is a myth", "{r} is no longer right", "Some claim {r}",
    "n\u043et {r}", "\u043d\u0435\u0442, {r}",  # a Cyrillic o in 'not'; Russian 'no'
    "Ce n'est pas {r}", "Es ist nicht {r}", "N\u00e3o \u00e9 {r}",
]
COMPARISON = [
    "fewer than {r}", "less than {r}", "more than {r}", "over {r}", "under {r}", "above {r}",
    "below {r}", "at least {r}", "at most {r}", "up to {r}", "<{r}", ">{r}", "\u2264 {r}",
    "\u2265{r}", "{r} or more", "{r} or less", "no more than {r}", "exceeds {r}",
    "greater than {r}", "higher than {r}", "within {r}", "before {r}", "after {r}",
    "since {r}", "until {r}", "{r} or later", "{r} or earlier", "as many as {r}",
    "beyond {r}", "upwards of {r}", "in excess of {r}", "north of {r}", "just shy of {r}",
    "{r} at the latest", "{r} at most", "no later than {r}", "{r} and above", "past {r}",
    "\uff1c{r}", "\u2a7d{r}", "{r} and up", "up from {r}", "from {r}", "{r} and counting",
]
DATE_BOUNDS = ["by {r}", "from {r}", "as of {r}", "through {r}", "starting {r}",
               "{r} or before", "on or before {r}", "ending {r}"]
HEDGING = [
    "about {r}", "around {r}", "roughly {r}", "approximately {r}", "approx. {r}",
    "nearly {r}", "almost {r}", "~{r}", "\u2248{r}", "circa {r}", "ca. {r}", "c. {r}",
    "maybe {r}", "perhaps {r}", "probably {r}", "possibly {r}", "I think {r}", "I guess {r}",
    "{r}?", "{r} or so", "an estimated {r}", "likely {r}", "It might be {r}.",
    "It could be {r}.", "It may be {r}.", "some {r}", "{r}, give or take", "It seems to be {r}.",
    "I'm unsure: {r}", "{r} (estimate)", "presumably {r}", "close to {r}", "{r}, I believe",
    "If anything, {r}", "{r} \u00b1 a bit", "{r} +/- a bit", "reportedly {r}",
    "Is it {r}?", "{r}, apparently", "{r} (unverified)", "{r}, tentatively", "a target of {r}",
    "e.g. {r}", "for example {r}",
]
# re-scaling: {n} the number, {u} what follows it in the reference (a unit, '%')
RESCALING = [
    "{n} hundred{u}", "{n} thousand{u}", "{n} dozen{u}", "{n} lakh{u}", "{n} crore{u}",
    "{n} million{u}", "{n} billion{u}", "{n}k{u}", "{n}bn{u}", "{n} times{u}", "{n}x{u}",
    "{n}-fold{u}", "{n}\u00b2{u}", "{n}^2{u}", "{n}**2{u}", "{n}\u2030", "{n} per mille",
    "{n} bp", "{n} bps", "{n} basis points", "twice {n}{u}", "double {n}{u}",
    "half of {n}{u}", "{n} per thousand", "{n}{u} (in thousands)", "{n} ppm",
    "{n} percentage points", "{n}\u00d710{u}", "{n}{u} per 1000", "{n}\u00bd{u}",
    "{n}\u207b\u00b3{u}", "{n}{u}, in millions", "{n}\u2031", "{n} out of {n}{u}",
    "{n}:{n}{u}", "{n}{u} per capita", "{n}\u0338{u}", "{n}{u} below zero",
]
# a minus or dash before the positive number: read as a sign, or inconclusive
DASHES = ["\u2013", "\u2012", "\u2010", "\u2011", "\uff0d", "\u207b", "\u2212", "\ufe63", "-",
          "\u2014", " \u2013 ", "--"]


def _verdict(answer: str, response: str) -> tuple[str | None, str, str]:
    d = decide(answer, response)
    return d.verdict, d.rule, d.detail


def _passes(answer: str, responses: list[str]) -> list[tuple[str, str, str]]:
    return [(r, rule, detail) for r in responses
            for verdict, rule, detail in [_verdict(answer, r)] if verdict == "pass"]


@pytest.mark.parametrize("form", list(FORMS))
def test_plain_restatements_still_pass(form):
    answer, _n, _u, spellings = FORMS[form]
    templates = BARE + ([] if form == "text" else SENTENCES)
    responses = [t.format(r=s) for s in spellings for t in templates]
    not_passed = [(r, _verdict(answer, r)) for r in responses
                  if _verdict(answer, r)[0] != "pass"]
    assert not not_passed


@pytest.mark.parametrize("family", ["negation", "comparison", "hedging"])
@pytest.mark.parametrize("form", list(FORMS))
def test_a_qualified_figure_never_passes(form, family):
    answer, _n, _u, spellings = FORMS[form]
    templates = {"negation": NEGATION, "comparison": COMPARISON + (
        DATE_BOUNDS if form == "date" else []), "hedging": HEDGING}[family]
    responses = [t.format(r=s) for s in spellings for t in templates]
    assert not _passes(answer, responses)
    # and a qualified number is no proven fail either: "not 41" does not claim 41
    if form in ("integer", "decimal", "negative", "percent", "unit", "date"):
        wrong = {"integer": "41", "decimal": "3.75", "negative": "-8", "percent": "13%",
                 "unit": "4 km", "date": "2020-01-06"}[form]
        decided = [(t, _verdict(answer, t.format(r=wrong))) for t in templates]
        assert [(t, v) for t, v in decided if v[0] is not None] == []


@pytest.mark.parametrize("form", ["integer", "decimal", "negative", "percent", "unit"])
def test_a_rescaled_figure_never_passes(form):
    answer, n, u, _spellings = FORMS[form]
    responses = [t.format(n=n, u=u) for t in RESCALING]
    if not n.startswith("-"):
        responses += [f"{dash}{n}{u}" for dash in DASHES]
    assert not _passes(answer, responses)


@pytest.mark.parametrize("dash", DASHES[:9])
def test_every_minus_sign_is_read(dash):
    """U+2013, U+2012, U+2010, U+2011, U+FF0D, U+207B, U+2212, U+FE63 and '-' before a
    number are its sign: -5 passes, 5 fails (``–5`` passed 5 and failed -5)."""
    assert extract_numbers(f"{dash}5")[0].value == -5
    assert _verdict("-5", f"It is {dash}5.")[:2] == ("pass", "number")
    assert _verdict("5", f"It is {dash}5.")[:2] == ("fail", "number")
    assert _verdict("5", f"pages 4{dash}5")[:2] == (None, "inconclusive")  # a range: 4 and 5


@pytest.mark.parametrize("response", ["It is \u2014 5", "It is \u20145", "It is \u2013 5",
                                      "It is -- 5", "It is - 5"])
def test_a_dash_set_apart_from_the_number_is_inconclusive(response):
    assert _verdict("5", response)[:2] == (None, "inconclusive")
    assert _verdict("-5", response)[:2] == (None, "inconclusive")


def test_a_markdown_bullet_is_no_minus():
    assert _verdict("5", "Stations:\n- 5")[:2] == ("pass", "number")
    assert _verdict("5", "\u2013 5")[:2] == (None, "inconclusive")  # an en dash: no bullet


# the examples of issue 35, items 1 and 2: (answer, response, verdict, rule); before the
# fix every one passed (or, for the negative reference, failed)
ISSUE_EXAMPLES = [
    ("5", "It is not 5.", None, "inconclusive"),
    ("5", "It isn't 5", None, "inconclusive"),
    ("5", "no, 5 is wrong", None, "inconclusive"),
    ("5", "5 is incorrect", None, "inconclusive"),
    ("5", "fewer than 5", None, "inconclusive"),
    ("5", "\u2260 5", None, "inconclusive"),
    ("5", "<5", None, "inconclusive"),
    ("5", ">5", None, "inconclusive"),
    ("2020-01-05", "Not 2020-01-05", None, "inconclusive"),
    ("2020-01-05", "before 2020-01-05", None, "inconclusive"),
    ("5", "\u20135", "fail", "number"),           # en dash: -5
    ("-5", "\u20135", "pass", "number"),
    ("5", "\u20125", "fail", "number"),           # figure dash
    ("-5", "\u20125", "pass", "number"),
    ("5", "\u20105", "fail", "number"),           # hyphen
    ("5", "\uff0d5", "fail", "number"),           # fullwidth hyphen-minus
    ("5", "\u207b5", "fail", "number"),           # superscript minus
    ("-5", "\u207b5", "pass", "number"),
    ("2", "2\u00bd", "fail", "number"),           # 2.5
    ("2.5", "2\u00bd", "pass", "number"),
    ("10", "10\u00b2", None, "inconclusive"),     # a power, or a footnote
    ("100", "10\u00b2", None, "inconclusive"),
    ("1", "1\u2030", None, "inconclusive"),       # per mille against a plain figure
    ("0.1%", "1\u2030", "pass", "number"),
    ("50%", "50\u2030", "fail", "number"),        # 5 %
    ("5%", "50\u2030", "pass", "number"),
    ("5%", "5 bp", "fail", "number"),             # 0.05 %
    ("0.05%", "5 bp", "pass", "number"),
    ("5", "5 hundred", "fail", "number"),
    ("500", "5 hundred", "pass", "number"),
    ("5", "5 dozen", "fail", "number"),
    ("60", "5 dozen", "pass", "number"),
    ("3", "3 lakh", "fail", "number"),
    ("300000", "3 lakh", "pass", "number"),
    ("20000000", "2 crore", "pass", "number"),
    ("5", "5k", None, "inconclusive"),            # a scale abbreviation: not read
    ("1.2", "1.2bn", None, "inconclusive"),
]


@pytest.mark.parametrize(("answer", "response", "verdict", "rule"), ISSUE_EXAMPLES)
def test_the_issues_examples(answer, response, verdict, rule):
    got = _verdict(answer, response)
    assert got[:2] == (verdict, rule), got[2]


def test_the_detail_names_what_qualifies_the_figure():
    assert _verdict("5", "It is not 5.")[2] == "5 matches 5, but 'not' negates it"
    assert _verdict("5", "fewer than 5")[2] == "5 matches 5, but 'fewer' compares or bounds it"
    assert _verdict("5", "about 5")[2] == "5 matches 5, but 'about' hedges it"
    assert _verdict("5", "5 times")[2] == "5 matches 5, but 'times' re-scales it"
    assert _verdict("42", "It is not 41.")[2] == "41 differs from 42, but 'not' negates it"


def test_what_the_reference_itself_says_is_not_a_qualifier():
    # a text answer that holds a qualifier passes its own restatement, not another one
    assert _verdict("No", "No.")[:2] == ("pass", "exact")
    assert _verdict("more than 5", "More than 5!")[:2] == ("pass", "exact")
    assert _verdict("more than 5", "<5")[:2] == (None, "inconclusive")
    assert decide("USA", "not U.S.", aliases=["U.S."]).verdict is None
    # a month name in a date is no hedge ('may'), a scale word read is no number word
    assert _verdict("2020-05-05", "It was on May 5, 2020.")[:2] == ("pass", "date")
    assert _verdict("2020-05-05", "It may be May 5, 2020.")[:2] == (None, "inconclusive")
    assert _verdict("500", "5 hundred stations")[:2] == ("pass", "number")


def test_a_number_word_beside_the_figure_keeps_a_pass_unproven():
    assert _verdict("42", "42, or forty-one")[:2] == (None, "inconclusive")
    assert _verdict("3.5 km", "The longest one is 3.5 km.")[:2] == ("pass", "number")


@pytest.mark.parametrize("char", "\u00bc\u00bd\u00be\u2150\u2151\u2152\u2153\u2154\u2155"
                                 "\u2156\u2157\u2158\u2159\u215a\u215b\u215c\u215d\u215e\u2189")
def test_vulgar_fractions_are_read_exactly(char):
    import unicodedata

    value = vulgar_value(char)
    assert abs(float(value) - unicodedata.numeric(char)) < 1e-12  # the library's float
    assert extract_numbers(f"3{char}")[0].value == 3 + value
    assert extract_numbers(f"-{char}")[0].value == -value


def test_per_notations_are_read_with_their_base():
    got = [(n.value, n.per) for n in extract_numbers(
        "12% 5\u2030 3 per mille 25 bp 25 bps 7 basis points 2\u2031 4 per cent 9\uff05")]
    assert got == [(12, 100), (5, 1000), (3, 1000), (25, 10**4), (25, 10**4), (7, 10**4),
                   (2, 10**4), (4, 100), (9, 100)]


def test_scale_words_multiply_one_after_another():
    got = [n.value for n in extract_numbers(
        "5 hundred, 5 dozen, 3 lakh, 3 lakhs, 2 crore, 5 hundred thousand, 1.5 million")]
    assert got == [500, 60, 300_000, 300_000, 20_000_000, 500_000, 1_500_000]


def _text(value: Fraction) -> str:
    return format(Decimal(value.numerator) / Decimal(value.denominator), "f")


QUALIFIED = NEGATION + COMPARISON + HEDGING


@settings(max_examples=300, deadline=None)
@given(st.integers(-10**6, 10**6).map(lambda n: Fraction(n, 100)),
       st.sampled_from(QUALIFIED), st.sampled_from(SENTENCES + BARE), st.booleans())
def test_any_value_qualified_never_passes_and_plain_always_does(ref, qualified, plain, right):
    """For a drawn reference value: the plain restatement of it passes, the qualified one
    never does, whether it states the reference or another figure."""
    answer = _text(ref)
    said = answer if right else _text(ref + 1)
    assert decide(answer, plain.format(r=said)).verdict == ("pass" if right else "fail")
    assert decide(answer, qualified.format(r=said)).verdict is None


# --- end to end -------------------------------------------------------------------------------
E2E = [  # id, answer, response, passed, decided_by
    ("plain", "5", "The answer is 5.", True, "number"),
    ("denied", "5", "It is not 5.", False, "inconclusive"),
    ("bounded", "5", "<5", False, "inconclusive"),
    ("before", "2020-01-05", "before 2020-01-05", False, "inconclusive"),
    ("hedged", "1234567", "About 1.23 million.", False, "inconclusive"),
    ("en_dash", "-5", "\u20135", True, "number"),
    ("rescaled", "5", "5 hundred", False, "number"),
]


def _suite(tmp_path):
    cases = tmp_path / "cases.jsonl"
    responses = tmp_path / "responses.jsonl"
    cases.write_text("".join(json.dumps({"id": cid, "conversation": [
        {"role": "user", "content": "How many?", "target": {"reference": {"answer": a}}}]}) + "\n"
        for cid, a, *_ in E2E), encoding="utf-8")
    responses.write_text("".join(json.dumps({"id": cid, "response": r}) + "\n"
                                 for cid, _a, r, *_ in E2E), encoding="utf-8")
    return cases, responses


def test_run_counts_the_undecided_as_not_passed_and_names_them(tmp_path):
    from queryeval.cli.app import main

    cases, responses = _suite(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(cases), "--responses", str(responses), "--out", str(out),
                 "-q"]) == 0
    [metrics] = out.rglob("metrics_*.json")
    overall = json.loads(metrics.read_text())["overall_metrics"]
    # it was 5/7: the denial, both bounds and 5 hundred passed by rule, and -5 failed
    assert overall["pass_rate"] == pytest.approx(2 / 7)
    assert (overall["passed"], overall["inconclusive"]) == (2, 4)
    assert overall["decided_number"] == 3
    [results] = out.rglob("results_*.csv")
    with results.open(encoding="utf-8", newline="") as fh:
        rows = {r["case_id"]: r for r in csv.DictReader(fh)}
    for cid, _a, _r, passed, decided_by in E2E:
        assert rows[cid]["decided_by"] == decided_by, cid
        assert float(rows[cid]["passed"]) == float(passed), cid
    assert rows["denied"]["detail"] == "5 matches 5, but 'not' negates it"
    assert rows["denied"]["rule_verdict"] == ""  # no rule's verdict: undecided


def test_the_judge_decides_what_no_rule_proves(tmp_path, monkeypatch):
    from helpers.judge_fake import FakeJudgeServer, verdict_reply
    from queryeval.cli.app import main

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    server = FakeJudgeServer()
    server.script = lambda n, body: verdict_reply("fail", "not the answer")
    try:
        cases, responses = _suite(tmp_path)
        out = tmp_path / "judged"
        assert main(["run", str(cases), "--responses", str(responses), "--out", str(out),
                     "-q", "--judge-model", "m", "--judge-base-url", server.url]) == 0
        asked = len(server.requests)
    finally:
        server.close()
    assert asked == 4  # the four the ladder could not prove; it was asked about none
    [results] = out.rglob("results_*.jsonl")
    records = {r["case_id"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert {c for c, r in records.items() if r["decided_by"] == "judge"} == {
        "denied", "bounded", "before", "hedged"}
    assert not any(r["passed"] for c, r in records.items() if r["decided_by"] == "judge")


@pytest.mark.parametrize(("answer", "response"), [
    ("42", "Based on the data, there are 42 stations."),
    ("42", "According to the table, the total is 42."),
    ("1200000", "Total revenue was $1.2 million."),
    ("42", "Sure! The answer is **42**."),
    ("42", "| stations | 42 |"),
    ("42", "SELECT COUNT(*) returned 42"),
    ("42", "There are <strong>42</strong> stations.<br/>"),
    ("2024-02-01", "It was released on 1 Feb 2024 after a delay."),
    ("2024-05-01", "It launched on May 1, 2024."),
    ("12%", "Sales grew 12% year over year."),
    ("3.5 km", "The trail is 3.5 km long and takes an hour."),
    ("3.5 km", "It is 3.5 km from the station."),
])
def test_answers_as_assistants_write_them_still_pass(answer, response):
    """Words that qualify a figure only where they bound it: 'after a delay', 'from the
    station', 'over year', 'per the report' and markup leave a plain claim."""
    assert _verdict(answer, response)[0] == "pass", _verdict(answer, response)


def test_unit_letters_of_other_scripts_are_no_foreign_words():
    assert _verdict("5 um", "5 \u03bcm")[:2] == ("pass", "number")   # Greek mu
    assert _verdict("3 ohm", "3 \u03a9")[:2] == ("pass", "number")   # Greek Omega
    assert _verdict("5", "5 caf\u00e9s")[:2] == ("pass", "number")   # Latin with an accent
    assert _verdict("42", "42\u4e2a\u7ad9")[:2] == (None, "inconclusive")  # Chinese
