"""docs/results.md is what benchmarks/results_doc.py writes from the committed result files."""

from pathlib import Path

import pytest
from conftest import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_results_page_is_current():
    assert (ROOT / "docs/results.md").read_text() == load_benchmark("results_doc").render(), (
        "docs/results.md is stale: run `python benchmarks/results_doc.py`")


def test_a_result_file_without_a_section_is_refused(tmp_path):
    doc = load_benchmark("results_doc")
    for _, _, files in doc.SECTIONS:
        for name in files:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text("# t\n")
    (tmp_path / "new_result.md").write_text("| a |\n")
    with pytest.raises(SystemExit, match="new_result.md"):
        doc.render(tmp_path)


def test_the_sweeps_verdicts_and_their_figure_appear_once_committed(tmp_path):
    doc = load_benchmark("results_doc")
    for _, _, files in doc.SECTIONS:
        for name in files:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text("# t\n")
    assert "The sweep on this toy has not run" in doc.render(tmp_path)
    verdicts = tmp_path / doc.VERDICTS
    verdicts.parent.mkdir(parents=True, exist_ok=True)
    verdicts.write_text("| claim | outcome |\n|---|---|\n| `peak-reviews` | **inconclusive** |\n")
    verdicts.with_suffix(".png").write_bytes(b"\x89PNG")
    page = doc.render(tmp_path)
    assert "| `peak-reviews` | **inconclusive** |" in page
    assert "](../benchmarks/results/sweep/claims/verdicts.png)" in page
