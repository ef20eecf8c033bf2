"""The stage CLIs end to end on the micro config: prepare -> pretrain -> evaluate."""

import json

import pandas as pd
import pytest

from mintrl import evaluate, prepare, pretrain
from mintrl.config import load_config

MICRO = "tests/micro.yaml"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    prepare.main(["--config", MICRO, "--task", "arith", "--out", str(root / "data")])
    pretrain.main(["--config", MICRO, "--task", "arith", "--role", "base",
                   "--exclude", str(root / "data"), "--out", str(root / "base")])
    return root


def test_prepare_writes_distinct_splits_of_the_configured_sizes(lab):
    sizes = load_config(MICRO).tasks["arith"].sizes
    frames = {s: pd.read_parquet(lab / "data" / f"{s}.parquet")
              for s in ("train", "validation", "easy", "hard")}
    for split, df in frames.items():
        assert len(df) == getattr(sizes, split) and set(df["split"]) == {split}
    ids = pd.concat(frames.values())["id"]
    assert ids.is_unique
    assert frames["hard"]["difficulty"].between(6, 7).all()


def test_pretrain_writes_a_loadable_checkpoint(lab):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(lab / "base")
    tok = AutoTokenizer.from_pretrained(lab / "base")
    assert model.config.vocab_size == len(tok)
    report = json.loads((lab / "base.json").read_text())
    assert report["final_loss"] < report["first_loss"]


def test_evaluate_writes_metrics_and_one_row_per_sample(lab):
    out = lab / "eval"
    evaluate.main(["--config", MICRO, "--checkpoint", str(lab / "base"), "--prompts",
                   str(lab / "data" / "easy.parquet"), str(lab / "data" / "hard.parquet"),
                   "--out", str(out)])
    metrics = json.loads((out / "metrics.json").read_text())
    samples = pd.read_parquet(out / "samples.parquet")
    assert len(samples) == (6 + 6) * 4
    for split in ("easy", "hard"):
        m = metrics["splits"][split]
        rows = samples[samples["split"] == split]
        assert m["pass@1"] == pytest.approx(rows["reward"].mean())
        assert m["pass@1"] <= m["pass@2"] <= m["pass@4"] <= 1
        assert m["strict"] <= m["step_accuracy"] + 1e-9  # strict samples have accuracy 1
        assert 0 <= m["lucky"] <= 1


def test_evaluate_reads_jsonl_with_a_named_reward(lab, tmp_path):
    rows = pd.read_parquet(lab / "data" / "easy.parquet").head(3)
    jsonl = tmp_path / "mine.jsonl"
    rows[["id", "prompt", "spec"]].to_json(jsonl, orient="records", lines=True)
    evaluate.main(["--config", MICRO, "--checkpoint", str(lab / "base"), "--prompts", str(jsonl),
                   "--reward", "arith", "--samples", "2", "--out", str(tmp_path / "ev")])
    metrics = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert metrics["splits"]["mine"]["problems"] == 3
    assert metrics["splits"]["mine"]["strict"] is None  # no reference steps: not graded


@pytest.mark.parametrize("stage", ["prepare", "pretrain", "evaluate"])
def test_every_stage_explains_itself(stage):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", f"mintrl.{stage}", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0
    assert f"python -m mintrl.{stage}" in res.stdout and "--config" in res.stdout
