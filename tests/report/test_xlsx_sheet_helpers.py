"""report/xlsx.py's sheet helpers: new_book, write_figures, format_floats."""

from queryeval.report.xlsx import FIGURE, TOP, format_floats, new_book, write_figures


def test_new_book_names_its_one_sheet():
    wb, ws = new_book("Overview")
    assert wb.sheetnames == ["Overview"]
    assert wb.active is ws


def test_write_figures_title_header_rows_and_the_row_after_a_blank():
    _, ws = new_book("Statistics")
    nxt = write_figures(ws, 1, "Overall", [("cases", 3), ("recall", 0.5), ("name", "=1+1")],
                        name_alignment=TOP)
    assert nxt == 7  # title 1, header 2, rows 3-5, blank 6
    assert ws.cell(1, 1).value == "Overall" and ws.cell(1, 1).font.bold
    assert [ws.cell(2, c).value for c in (1, 2)] == ["metric", "value"]
    assert [[ws.cell(r, c).value for c in (1, 2)] for r in (3, 4, 5)] == [
        ["cases", 3], ["recall", 0.5], ["name", "=1+1"]]
    assert ws.cell(5, 2).data_type == "s"  # text, never a formula
    assert ws.cell(4, 2).number_format == FIGURE
    assert ws.cell(3, 2).number_format == "General"  # an int keeps its own
    assert ws.cell(3, 1).alignment.vertical == "top"


def test_write_figures_without_alignment_leaves_the_name_cells_alone():
    _, ws = new_book("S")
    write_figures(ws, 1, "Overall", [("cases", 3)])
    assert ws.cell(3, 1).alignment.vertical is None


def test_format_floats_formats_floats_only():
    _, ws = new_book("S")
    ws.cell(1, 1, 0.25)
    ws.cell(1, 2, 2)
    ws.cell(2, 1, "0.5")
    format_floats(ws, "0.00%")
    assert [ws.cell(1, 1).number_format, ws.cell(1, 2).number_format,
            ws.cell(2, 1).number_format] == ["0.00%", "General", "General"]
