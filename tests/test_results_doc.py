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
