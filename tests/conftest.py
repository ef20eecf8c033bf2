# mintrl first: it pins the CPU kernels before torch loads (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def micro_run(tmp_path_factory):
    """The main command on tests/micro.yaml in a fresh folder, once per test session: the
    workflow tests and the MLflow browser test read the same finished run."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    work = tmp_path_factory.mktemp("wf")
    res = subprocess.run([sys.executable, "-m", "snakemake", "-s",
                          str(root / "workflow" / "Snakefile"), "--directory", str(work),
                          "--configfile", str(root / "tests" / "micro.yaml"), "--cores", "2"],
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    return work


@pytest.fixture(scope="session")
def tokenizer():
    from mintrl.tokenizer import build_char_tokenizer

    return build_char_tokenizer()


@pytest.fixture(scope="session")
def tiny_model(tokenizer):
    """A randomly initialised micro Qwen3 model (weights fixed by the seed)."""
    from mintrl.config import ModelArch
    from mintrl.models import build_model

    arch = ModelArch(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2,
                     num_kv_heads=1, max_positions=256)
    return build_model(arch, tokenizer, seed=0).eval()


def write_micro_lab(root, tokenizer, rl: dict, teacher: bool = False, drop_run_lengths=False):
    """tests/micro.yaml with ``rl`` merged in (at root/cfg.yaml), its arith splits (root/data)
    and a random micro base policy (root/base; root/teacher too with ``teacher``)."""
    import yaml

    from mintrl import prepare
    from mintrl.config import ModelArch
    from mintrl.io import save_checkpoint
    from mintrl.models import build_model

    with open("tests/micro.yaml") as f:
        cfg = yaml.safe_load(f)
    cfg["rl"] |= rl
    if drop_run_lengths:  # the run-specific lengths of micro.yaml would shorten a run
        for entry in cfg["runs"]:
            entry.get("overrides", {}).pop("iterations", None)
            entry.get("overrides", {}).pop("iterations_per_job", None)
    (root / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    prepare.main(["--config", str(root / "cfg.yaml"), "--task", "arith", "--out",
                  str(root / "data")])
    arch = ModelArch(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2,
                     num_kv_heads=1, max_positions=256)
    for name, seed in [("base", 0)] + ([("teacher", 1)] if teacher else []):
        save_checkpoint(build_model(arch, tokenizer, seed=seed), tokenizer, root / name)
    return root


def load_benchmark(name: str):
    """A script of benchmarks/ as a module (they are scripts, not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
