"""Readers for the data table and the evaluation table (seed 004), and the ``tune`` command."""

from __future__ import annotations

import csv
import json

import pytest
import typer
from openpyxl import Workbook
from typer.testing import CliRunner

from queryeval.errors import InputError
from queryeval.suite.fields import load_data_table, load_evaluation_table


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_data_table_fields_values_descriptions(tmp_path):
    f = write(tmp_path / "d.csv",
              "item,price_type,item__description\n"
              "Carrots,Cheap,orange root\n"
              " Onions ,Cheap,\n"
              "Carrots,Expensive,\n"
              ",Cheap,\n")
    table = load_data_table(f)
    assert list(table.fields) == ["item", "price_type"]
    item = table.fields["item"]
    assert item.values == ["Carrots", "Onions"]
    assert item.documents == ["Carrots orange root", "Onions"]
    assert table.fields["price_type"].values == ["Cheap", "Expensive"]


def test_data_table_explicit_description_option(tmp_path):
    f = write(tmp_path / "d.csv", "item,notes\nSalt,white\n")
    table = load_data_table(f, {"item": "notes"})
    assert table.fields["item"].documents == ["Salt white"]
    with pytest.raises(InputError, match=r"d.csv:1: nope: description column not found"):
        load_data_table(f, {"item": "nope"})


def test_data_table_xlsx_and_parquet(tmp_path):
    wb = Workbook()
    ws = wb.active
    ws.append(["item", "qty"])
    ws.append(["Garlic", 3])
    ws.append(["Pepper", 2.5])
    wb.save(tmp_path / "d.xlsx")
    table = load_data_table(tmp_path / "d.xlsx")
    assert table.fields["qty"].values == ["3", "2.5"]
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"item": ["a", None, "b"]}), tmp_path / "d.parquet")
    assert load_data_table(tmp_path / "d.parquet").fields["item"].values == ["a", "b"]


def test_evaluation_table(tmp_path):
    f = write(tmp_path / "e.csv",
              'Question,item,price_type\n'
              '"What cheap vegetables do I have?","Carrots;Potatoes;Onions;Garlic",Cheap\n'
              '\n'
              'Anything with a semicolon?,"a\';b; c",\n')
    ev = load_evaluation_table(f, known_fields=["item", "price_type"])
    assert ev.questions == ["What cheap vegetables do I have?", "Anything with a semicolon?"]
    assert ev.lines == [2, 4]
    assert ev.ground_truth["item"] == [["Carrots", "Potatoes", "Onions", "Garlic"], ["a;b", "c"]]
    assert ev.ground_truth["price_type"] == [["Cheap"], []]


def test_evaluation_table_errors_name_file_line_column(tmp_path):
    f = write(tmp_path / "e.csv", "Question,item\nq1,a\n,b\n")
    with pytest.raises(InputError) as err:
        load_evaluation_table(f)
    assert str(err.value).endswith("e.csv:3: Question: empty question")

    f = write(tmp_path / "m.csv", "Ask,item\nq1,a\n")
    with pytest.raises(InputError, match=r"m.csv:1: Question: missing question column"):
        load_evaluation_table(f)

    f = write(tmp_path / "u.csv", "Question,colour\nq1,a\n")
    with pytest.raises(InputError, match=r"u.csv:1: colour: unknown field"):
        load_evaluation_table(f, known_fields=["item"])

    f = write(tmp_path / "w.csv", "Question,item\nq1,a,extra\n")
    with pytest.raises(InputError, match=r"w.csv:2: 3 cells for 2 columns"):
        load_evaluation_table(f)

    with pytest.raises(InputError, match="unsupported table format"):
        load_evaluation_table(tmp_path / "e.json")


def _tune_app():
    from queryeval.cli.tune import command

    app = typer.Typer()
    app.command()(command)
    return app


def test_tune_command_end_to_end(tmp_path):
    data = write(tmp_path / "data.csv", "item,type\nCarrots,Cheap\nOnions,Cheap\nSaffron,Dear\n")
    ev = write(tmp_path / "eval.csv", "Question,item,type\ncheap veg?,Carrots;Onions,Cheap\n"
                                      "spice?,Saffron,Dear\n")
    rankings = {
        "fields": {
            "item": {"models": {
                "bm25": [["Saffron", "Carrots", "Onions"], ["Carrots", "Onions", "Saffron"]],
                "minilm": [["Carrots", "Onions", "Saffron"], ["Saffron", "Carrots", "Onions"]],
            }},
            "type": {"cost": 1, "models": {"bm25": [["Cheap", "Dear"], ["Dear", "Cheap"]]}},
        }
    }
    rk = write(tmp_path / "rk.json", json.dumps(rankings))
    out = tmp_path / "out"
    result = CliRunner().invoke(_tune_app(), [
        str(ev), "--rankings", str(rk), "--data", str(data), "--budget", "10",
        "--json", f"{out}.json", "--csv", f"{out}.csv", "--xlsx", f"{out}.xlsx",
        "--out", str(tmp_path / "runs"),
    ])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "out.json").read_text())
    # minilm ranks every item first-or-second: N=2 for item, N=1 for type, both questions pass
    item_cost = doc["rows"][0]["tokens"] // 2
    assert doc["rows"][0] == {"Field Name": "item", "N": 2, "Model": "minilm", "recall": 1.0,
                              "passed": 2, "tokens": 2 * item_cost}
    assert doc["rows"][1] == {"Field Name": "type", "N": 1, "Model": "bm25", "recall": 1.0,
                              "passed": 2, "tokens": 1}
    assert doc["summary"]["passed"] == 2 and doc["summary"]["optimal"] is True
    with open(tmp_path / "out.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["Model"] for r in rows] == ["minilm", "bm25"]
    from openpyxl import load_workbook

    ws = load_workbook(tmp_path / "out.xlsx")["Tuning"]
    assert [c.value for c in ws[1]] == ["Field Name", "N", "Model", "recall", "passed", "tokens"]
    assert ws["B2"].value == 2


def test_tune_command_rankings_mismatch(tmp_path):
    ev = write(tmp_path / "eval.csv", "Question,item\nq1,a\nq2,b\n")
    rk = write(tmp_path / "rk.json", json.dumps({"fields": {"item": {"models": {"m": [["a"]]}}}}))
    result = CliRunner().invoke(_tune_app(), [str(ev), "--rankings", str(rk),
                                                "--out", str(tmp_path / "runs")])
    assert isinstance(result.exception, InputError)
    assert "fields.item.models.m: 1 rankings for 2 questions" in str(result.exception)
