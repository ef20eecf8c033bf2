"""What a newcomer meets at the command line: every option explained, ``--help`` that says
what a stage computes, and a missing file, checkpoint or config as one line with exit code 2."""

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ["prepare", "pretrain", "fetch", "filter", "evaluate", "sft", "segment", "train",
            "rollout", "summarize", "track", "tune", "config.loading", "rewards.__main__",
            "config_reference"]


class _Parsed(Exception):
    pass


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_help_and_help_shows_the_whole_docstring(name, monkeypatch):
    def grab(self, *args, **kwargs):
        raise _Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", grab)
    module = importlib.import_module(f"mintrl.{name}")
    with pytest.raises(_Parsed) as parsed:
        module.main([])
    parser = parsed.value.args[0]
    assert [a.dest for a in parser._actions if a.help is None] == []
    if name != "config.loading":  # its docstring is the package's; it says one line
        assert parser.description == module.__doc__


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


@pytest.mark.parametrize("command, path", [
    (["mintrl.config", "--check", "missing.yaml"], "missing.yaml"),
    (["mintrl.summarize", "--evals", "nowhere/metrics.json", "--out", "/tmp/x"],
     "nowhere/metrics.json"),
    (["mintrl.evaluate", "--config", "config/config.yaml", "--checkpoint", "results/none/model",
      "--prompts", "x.parquet", "--out", "/tmp/x"], "results/none/model"),
    (["mintrl.rewards", "--domain", "math", "nowhere.jsonl", "/tmp/out.jsonl"],
     "nowhere.jsonl"),
])
def test_a_missing_file_is_one_line_naming_it_with_exit_code_2(command, path):
    res = _run(*command)
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert res.stderr.startswith(f"error: {path}: no such")


def test_a_bad_config_lists_its_keys_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rl:\n  lr: -1\n")
    res = _run("mintrl.config", "--check", str(bad))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "rl.lr: Input should be greater than 0" in res.stderr
