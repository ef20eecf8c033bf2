"""Adding a method is one module: it registers its objective and its entry in the method
table, the config names it in ``plugins``, and a run of it trains with nothing else changed.
Here the module is written by the test: a toy reward-weighted fine-tune (next-token loss on
every rollout, weighted by 1 + reward) runs a one-iteration segment through the library
(``mintrl.training.rl_loop``)."""

import json
import sys
import textwrap

import pytest
import torch
import yaml
from safetensors.torch import load_file

from mintrl.algo.objectives import OBJECTIVES
from mintrl.methods import METHODS, Method, register_method

PLUGIN = textwrap.dedent('''
    """A toy method: reward-weighted next-token training."""
    from mintrl.methods import Method, register_method
    from mintrl.algo.objectives import Objective, register_objective, sft_loss

    CALLS = []


    def reward_weighted_nll(x, spec):
        """NLL of the response tokens, each rollout's weighted by 1 + its reward.
        x.logprobs, x.mask: (b, T); x.rewards: (b,)."""
        CALLS.append(x)
        weight = x.mask * (1.0 + x.rewards).to(x.mask.dtype)[:, None]
        return sft_loss(x.logprobs, weight, token_total=x.token_total)


    register_objective("reward_weighted", Objective(reward_weighted_nll, frozenset({"rewards"})))
    register_method("reward_weighted", Method(objective="reward_weighted"))
''')


@pytest.fixture
def plugin(tmp_path):
    (tmp_path / "toy_method_plugin.py").write_text(PLUGIN)
    sys.path.insert(0, str(tmp_path))
    yield "toy_method_plugin"
    sys.path.remove(str(tmp_path))
    sys.modules.pop("toy_method_plugin", None)
    METHODS.pop("reward_weighted", None)
    OBJECTIVES.pop("reward_weighted", None)


def test_a_method_from_a_plugin_module_runs_a_segment(plugin, tmp_path, tokenizer):
    from conftest import write_micro_lab

    from mintrl.config import load_run
    from mintrl.training.rl_loop import SegmentJob, run_segment

    (tmp_path / "lab").mkdir()
    root = write_micro_lab(tmp_path / "lab", tokenizer, {})
    cfg = yaml.safe_load((root / "cfg.yaml").read_text())
    cfg["plugins"] = [plugin]
    cfg["runs"].append({"method": "reward_weighted", "name": "toy", "group": "toy"})
    (root / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    cfg, run = load_run(root / "cfg.yaml", "toy")
    job = SegmentJob(cfg=cfg, run=run, task="arith", start=1, end=1, init=root / "base",
                     prompts=root / "data" / "train.parquet", root=root / "run")
    run_segment(job)

    seg = json.loads((root / "run" / "iter_1" / "segment.json").read_text())
    assert seg["run"] == "toy" and len(seg["iterations"]) == 1
    # the trainer filled what the objective asked for, and nothing else
    calls = sys.modules[plugin].CALLS
    assert calls and all(x.rewards is not None and x.old_logprobs is None
                         and x.advantages is None for x in calls)
    before = load_file(root / "base" / "model.safetensors")
    after = load_file(root / "run" / "iter_1" / "model" / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_a_method_nobody_registered_is_refused_naming_the_key(tmp_path, tokenizer):
    from mintrl.config import ConfigError, parse_config

    with open("tests/micro.yaml") as f:
        cfg = yaml.safe_load(f)
    cfg["runs"].append({"method": "reward_weighted", "name": "toy"})
    with pytest.raises(ConfigError, match="unknown method 'reward_weighted'; methods:"):
        parse_config(cfg, "cfg.yaml")
    cfg["plugins"] = ["no_such_plugin"]
    with pytest.raises(ConfigError, match="plugins: cannot import 'no_such_plugin'"):
        parse_config(cfg, "cfg.yaml")


def test_a_taken_method_name_is_refused():
    with pytest.raises(ValueError, match="'grpo' is already registered"):
        register_method("grpo", Method(objective="grpo"))
