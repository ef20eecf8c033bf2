"""What an iteration costs (mintrl.training.cost): counted where the work happens, so that a
method's budget in the tables is what it spent."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from transformers import AutoModelForCausalLM


@pytest.fixture(scope="module")
def lab(tmp_path_factory, tokenizer):
    from conftest import write_micro_lab

    return write_micro_lab(tmp_path_factory.mktemp("cost"), tokenizer,
                           {"iterations": 2, "iterations_per_job": 2, "eval_every": 2,
                            "prompts_per_iteration": 4, "group_size": 4, "minibatch_size": 8,
                            "micro_batch_size": 4},
                           teacher=True, drop_run_lengths=True)


def _iteration(lab, run):
    """One iteration of ``run``: (its metrics, its rollouts, its run's resolved spec)."""
    from mintrl.config import load_config
    from mintrl.config.runs import resolve_runs

    root = lab / run
    res = subprocess.run([sys.executable, "-m", "mintrl.segment", "--config",
                          str(lab / "cfg.yaml"), "--run", run, "--task", "arith", "--start", "1",
                          "--end", "1", "--init", str(lab / "base"), "--teacher",
                          str(lab / "teacher"), "--prompts", str(lab / "data" / "train.parquet"),
                          "--root", str(root), "--threads", "1"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    metrics = json.loads((root / "iter_1" / "metrics.json").read_text())
    run_ = resolve_runs(load_config(lab / "cfg.yaml"))[run]
    return metrics, pd.read_parquet(root / "iter_1" / "rollouts.parquet"), run_


def _params(path) -> int:
    return sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(path).parameters())


def _packed_tokens(df, run, tokenizer) -> int:
    """Tokens of the update's micro-batches, padding included, packed as the trainer packs."""
    from mintrl.rollouts import iteration_seed
    from mintrl.training.batching import pack, plan_minibatches

    spec = run.spec_for("arith")
    plans = plan_minibatches(len(df), spec, iteration_seed(run.seed, 1, 2))
    return sum(int(pack(df, rows, tokenizer.pad_token_id).input_ids.numel())
               for mini in plans for rows in mini)


@pytest.mark.parametrize("run", ["grpo-s0", "opd", "mintrl-proxy"])
def test_an_iteration_logs_what_it_spent(lab, tokenizer, run):
    metrics, df, run_ = _iteration(lab, run)
    n, n_teacher = _params(lab / "base"), _params(lab / "teacher")
    lengths = df["response_ids"].map(len)
    assert metrics["cost/rollout_tokens"] == lengths.sum()
    written = sum(int(np.sum(np.asarray(p) == 1)) for p in df["provenance"])
    assert metrics["cost/teacher_written_tokens"] == written
    # the update: one no-grad pass for pi_old (2N a token) and one training pass (6N),
    # padding included; the logged diagnostics (gradient parts, the update's KL) are not in it
    assert metrics["cost/train_flops"] == 8 * n * _packed_tokens(df, run_, tokenizer)
    # sampling feeds every prompt token and every sampled token but the last of each row
    fed = metrics["cost/generation_flops"] / (2 * n)
    assert fed >= df["prompt_ids"].map(len).sum() + lengths.sum() - len(df)
    if run == "grpo-s0":
        assert written == 0  # no teacher, no teacher cost
        assert metrics["cost/teacher_read_tokens"] == metrics["cost/teacher_flops"] == 0
    elif run == "opd":
        # the teacher scores every token of the update's batch, once
        assert written == 0
        assert metrics["cost/teacher_read_tokens"] == _packed_tokens(df, run_, tokenizer)
    else:  # MInTRL: the intervener reads the prefix of every correction it writes
        assert metrics["intervention/rate"] > 0 and written > 0
        assert metrics["cost/teacher_read_tokens"] >= written
    assert metrics["cost/teacher_flops"] == 2 * n_teacher * metrics["cost/teacher_read_tokens"]


def test_passes_inside_diagnostic_are_not_counted(tiny_model):
    import torch

    from mintrl.training.cost import TokenMeter, diagnostic

    meter = TokenMeter(tiny_model)
    ids = torch.ones((2, 5), dtype=torch.long)
    with torch.no_grad():
        tiny_model(input_ids=ids)
        with diagnostic():
            tiny_model(input_ids=ids)
    before = meter.counts()
    tiny_model(input_ids=ids).logits.sum().backward()
    assert before == (0, 10) and meter.counts() == (10, 10)
    assert meter.flops(before) == 6 * meter.params * 10
    meter.close()
