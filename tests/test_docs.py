"""The docs a newcomer reads hold together in a fresh clone: every relative link resolves to
a file of the repository, and nothing cites a path outside it."""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.split()
    return [REPO / p for p in out]


def test_every_relative_link_of_the_docs_resolves_in_the_repository():
    broken = []
    for doc in _tracked("README.md", "docs/*.md"):
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            if not (doc.parent / target).resolve().exists():
                broken.append(f"{doc.relative_to(REPO)} -> {target}")
    assert broken == []


def test_nothing_cites_a_path_outside_the_repository():
    outside = [str(p.relative_to(REPO)) for p in _tracked("*.md", "*.py", "*.yaml", "*.smk")
               if "../shared" in p.read_text(errors="replace")
               and p.name != "test_docs.py"]
    assert outside == []
