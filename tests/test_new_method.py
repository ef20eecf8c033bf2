"""Adding a method is one module: it registers its objective and its entry in the method
table, and a run of it trains with nothing else changed. Here that module is this file: a
toy reward-weighted fine-tune (next-token loss on every rollout, weighted by 1 + reward) runs
a one-iteration segment through the library (``mintrl.rl_loop``)."""

import json

import pytest
import torch
import yaml
from safetensors.torch import load_file

from mintrl.methods import METHODS, Method, register_method
from mintrl.objectives import OBJECTIVES, Objective, register_objective, sft_loss

CALLS = []


def reward_weighted_nll(x, spec):
    """NLL of the response tokens, each rollout's weighted by 1 + its reward.
    x.logprobs, x.mask: (b, T); x.rewards: (b,)."""
    CALLS.append(x)
    weight = x.mask * (1.0 + x.rewards).to(x.mask.dtype)[:, None]
    return sft_loss(x.logprobs, weight, token_total=x.token_total)


@pytest.fixture
def toy_method():
    register_objective("reward_weighted", Objective(reward_weighted_nll, frozenset({"rewards"})))
    register_method("reward_weighted", Method(objective="reward_weighted"))
    yield
    del METHODS["reward_weighted"], OBJECTIVES["reward_weighted"]


def test_a_method_registered_from_its_own_module_runs_a_segment(toy_method, tmp_path,
                                                                  tokenizer):
    from conftest import write_micro_lab

    from mintrl.config import load_run
    from mintrl.rl_loop import SegmentJob, run_segment

    root = write_micro_lab(tmp_path, tokenizer, {})
    cfg = yaml.safe_load((root / "cfg.yaml").read_text())
    cfg["runs"].append({"method": "reward_weighted", "name": "toy", "group": "toy"})
    (root / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    cfg, run = load_run(root / "cfg.yaml", "toy")
    job = SegmentJob(cfg=cfg, run=run, task="arith", start=1, end=1, init=root / "base",
                     prompts=root / "data" / "train.parquet", root=root / "run")
    run_segment(job)

    seg = json.loads((root / "run" / "iter_1" / "segment.json").read_text())
    assert seg["run"] == "toy" and len(seg["iterations"]) == 1
    # the trainer filled what the objective asked for, and nothing else
    assert CALLS and all(x.rewards is not None and x.old_logprobs is None
                         and x.advantages is None for x in CALLS)
    before = load_file(root / "base" / "model.safetensors")
    after = load_file(root / "run" / "iter_1" / "model" / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_a_taken_method_name_is_refused():
    with pytest.raises(ValueError, match="'grpo' is already registered"):
        register_method("grpo", Method(objective="grpo"))
