"""A small example system under test for the SDMX term-selection suite.

It matches keywords of the conversation's user turns against a tiny catalogue of datasets
and codes. It is deliberately imperfect (it confuses some indicators and adds a frequency
when asked for "monthly" data) so the evaluation has something to find.

Use it three ways:
  queryeval run examples/sdmx/suite --system python:examples/sdmx/system.py:select
  queryeval run examples/sdmx/suite --system "cmd:python examples/sdmx/system.py"
  (or serve it over HTTP with any web framework calling ``select``)
"""

from __future__ import annotations

import json
import re
import sys

WEO = "IMF.RES:WEO"
CPI = "IMF.STA:CPI"
WDI = "WB:WDI"

COUNTRIES = {
    "mexico": ("MEX", "Mexico"), "united states": ("USA", "United States"),
    "us": ("USA", "United States"), "germany": ("DEU", "Germany"), "france": ("FRA", "France"),
    "japan": ("JPN", "Japan"), "brazil": ("BRA", "Brazil"), "india": ("IND", "India"),
    "canada": ("CAN", "Canada"),
}

# keyword -> (dataset, indicator id, indicator name)
INDICATORS = [
    ("gdp per capita", WEO, "NGDPPC", "Gross domestic product per capita, current prices"),
    ("real gdp", WEO, "NGDP_R", "Gross domestic product, constant prices"),
    ("gdp", WEO, "NGDP", "Gross domestic product, current prices"),
    ("population", WEO, "LP", "Population, Persons for countries / Index for country groups"),
    ("unemployment", WEO, "LUR", "Unemployment rate"),
    ("inflation", WEO, "PCPIPCH", "Inflation, average consumer prices, percent change"),
    ("government debt", WEO, "GGXWDG_NGDP", "General government gross debt, percent of GDP"),
    ("food prices", CPI, "PCPIF_IX", "Consumer price index, food"),
    ("consumer price index", CPI, "PCPI_IX", "Consumer price index, all items"),
    ("cpi", CPI, "PCPI_IX", "Consumer price index, all items"),
    ("world bank population", WDI, "SP.POP.TOTL", "Population, total"),
]

FREQUENCIES = {"monthly": ("M", "Monthly"), "quarterly": ("Q", "Quarterly"), "annual": ("A", "Annual")}


def _has(text: str, phrase: str) -> bool:
    return re.search(r"\b" + re.escape(phrase) + r"\b", text) is not None


def select(request: dict) -> dict:
    """Return ``{"indicator_selection": [...]}`` for the conversation so far."""
    users = [m["content"].lower() for m in request["messages"] if m["role"] == "user"]
    text = users[-1]
    context = " ".join(users)
    picked: dict[str, dict[str, list]] = {}

    def add(dataset: str, dimension: str, code: tuple[str, str]) -> None:
        values = picked.setdefault(dataset, {}).setdefault(dimension, [])
        if {"id": code[0], "name": code[1]} not in values:
            values.append({"id": code[0], "name": code[1]})

    # indicators come from the latest turn, or the context for follow-ups ("and for Brazil?")
    source = text if any(_has(text, k) for k, *_ in INDICATORS) else context
    taken = source
    for keyword, dataset, code, name in INDICATORS:
        if _has(taken, keyword):
            add(dataset, "INDICATOR", (code, name))
            taken = taken.replace(keyword, " ")
    countries = [c for k, c in COUNTRIES.items() if _has(text, k)] or \
                [c for k, c in COUNTRIES.items() if _has(context, k)]
    for dataset in list(picked):
        for country in countries:
            add(dataset, "COUNTRY", country)
        for word, freq in FREQUENCIES.items():
            if _has(text, word):
                add(dataset, "FREQ", freq)
    return {"indicator_selection": [
        {"dataset_id": ds, "dimensions": [{"dimension_name": d, "values": v} for d, v in dims.items()]}
        for ds, dims in picked.items()
    ]}


if __name__ == "__main__":  # cmd: mode — request JSON on stdin, answer JSON on stdout
    json.dump(select(json.load(sys.stdin)), sys.stdout)
