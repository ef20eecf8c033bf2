"""docs/results.md is what benchmarks/results_doc.py writes from the committed result files."""

from pathlib import Path

import pytest
from conftest import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_results_page_is_current():
    assert (ROOT / "docs/results.md").read_text() == load_benchmark("results_doc").render(), (
        "docs/results.md is stale: run `python benchmarks/results_doc.py`")


def results_of_every_section(folder: Path):
    """The page's script, and ``folder`` holding a stub of every file its sections list."""
    doc = load_benchmark("results_doc")
    for _, _, files in doc.SECTIONS:
        for name in files:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("# t\n")
    return doc


def test_a_result_file_without_a_section_is_refused(tmp_path):
    doc = results_of_every_section(tmp_path)
    (tmp_path / "new_result.md").write_text("| a |\n")
    with pytest.raises(SystemExit, match="new_result.md"):
        doc.render(tmp_path)


def test_the_sweeps_verdicts_and_their_figure_appear_once_committed(tmp_path):
    doc = results_of_every_section(tmp_path)
    assert "The sweep on this toy has not run" in doc.render(tmp_path)
    verdicts = tmp_path / doc.VERDICTS
    verdicts.parent.mkdir(parents=True, exist_ok=True)
    verdicts.write_text("| claim | outcome |\n|---|---|\n| `peak-reviews` | **inconclusive** |\n")
    verdicts.with_suffix(".png").write_bytes(b"\x89PNG")
    page = doc.render(tmp_path)
    assert "| `peak-reviews` | **inconclusive** |" in page
    assert "](../benchmarks/results/sweep/claims/verdicts.png)" in page
