"""benchmarks/table_cells.py: two main-command tables compared cell by cell."""

import pytest
from conftest import load_benchmark

TABLE = """# some run

Pass@1 (%)

| row | arith/easy | intfn/hard | average |
|---|---:|---:|---:|
| base | 93.6 [90.8, 96.1] | 0.0 [0.0, 0.0] | 46.8 [45.0, 48.0] |
| opd | **{opd} [91.8, 96.4]** | 0.4 [0.2, 0.6] | 47.0 [46.0, 48.0] |
| mintrl | 92.3 [89.0, 95.1] | {mintrl} | 70.0 [69.0, 71.0] |

Strict correctness (%)

| row | arith/easy |
|---|---:|
| base | 1.0 [0.0, 2.0] |
"""


def write(path, opd="94.4", mintrl="48.6 [41.9, 55.2]"):
    path.write_text(TABLE.format(opd=opd, mintrl=mintrl))
    return path


def test_equal_tables_pass_and_only_the_first_pass1_table_is_read(tmp_path):
    a, b = write(tmp_path / "a.md"), write(tmp_path / "b.md")
    b.write_text(b.read_text().replace("1.0 [0.0, 2.0]", "9.9 [0.0, 2.0]"))
    out = tmp_path / "cells.md"
    assert load_benchmark("table_cells").main([str(a), str(b), "--out", str(out)]) == 0
    assert "6 of 6 cells with the same settings are equal" in out.read_text()


def test_a_cell_that_differs_in_its_interval_alone_fails(tmp_path):
    a = write(tmp_path / "a.md")
    b = write(tmp_path / "b.md", mintrl="48.6 [41.9, 55.3]")
    out = tmp_path / "cells.md"
    assert load_benchmark("table_cells").main([str(a), str(b), "--out", str(out)]) == 1
    text = out.read_text()
    assert "5 of 6 cells with the same settings are equal" in text
    assert "| mintrl | intfn/hard | 48.6 [41.9, 55.2] | 48.6 [41.9, 55.3] | **differs** |" in text


def test_rows_whose_settings_changed_are_listed_but_not_counted(tmp_path):
    a = write(tmp_path / "a.md")
    b = write(tmp_path / "b.md", opd="67.1", mintrl="53.4 [46.8, 60.6]")
    out = tmp_path / "cells.md"
    args = [str(a), str(b), "--out", str(out), "--changed", "opd", "--changed", "intfn:mintrl"]
    assert load_benchmark("table_cells").main(args) == 0
    text = out.read_text()
    assert "3 of 3 cells with the same settings are equal" in text
    assert "| opd | arith/easy | 94.4 [91.8, 96.4] | 67.1 [91.8, 96.4] | settings differ |" in text


def test_a_file_without_a_pass1_table_is_refused_by_name(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("# nothing here\n")
    with pytest.raises(SystemExit, match="bad.md: no line 'Pass@1"):
        load_benchmark("table_cells").main([str(bad), str(bad), "--out", str(tmp_path / "o")])


SPREAD = """| row | benchmark | (0,0) | (1,1) | range | minus base: (0,0) | (1,1) | range |
|---|---|---:|---:|---:|---:|---:|---:|
| opd | arith/easy | 94.4 | 92.4 | 2.0 | +0.8 | -1.2 | 2.0 |
| mintrl | intfn/hard | 48.6 | 48.5 | 0.1 | +48.6 | +48.5 | 0.1 |
"""


def test_with_the_spread_over_pairs_a_cell_may_move_as_far_as_another_pair_would(tmp_path):
    (tmp_path / "spread.md").write_text(SPREAD)
    a, b = write(tmp_path / "a.md"), write(tmp_path / "b.md", opd="93.0")
    out = tmp_path / "cells.md"
    args = [str(a), str(b), "--out", str(out), "--spread", str(tmp_path / "spread.md")]
    assert load_benchmark("table_cells").main(args) == 0
    row = "| opd | arith/easy | 94.4 [91.8, 96.4] | 93.0 [91.8, 96.4] | **differs** | -1.4 | 2.0 |"
    assert row in out.read_text()
    assert "1 differ. Of those, 0 moved by more than" in out.read_text()
    c = write(tmp_path / "c.md", mintrl="48.3 [41.9, 55.2]")
    assert load_benchmark("table_cells").main([str(a), str(c), *args[2:]]) == 1
