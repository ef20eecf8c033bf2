"""A segment: iterations in one process, working state pruned, and resume after a kill."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from safetensors.torch import load_file


@pytest.fixture(scope="module")
def setup(tmp_path_factory, tokenizer):
    from conftest import write_micro_lab

    return write_micro_lab(tmp_path_factory.mktemp("seg"), tokenizer,
                           {"iterations": 3, "iterations_per_job": 3, "eval_every": 3,
                            "prompts_per_iteration": 16, "group_size": 4})


def segment_cmd(setup, out):
    return [sys.executable, "-m", "mintrl.segment", "--config", str(setup / "cfg.yaml"),
            "--run", "grpo-s0", "--task", "arith", "--start", "1", "--end", "3",
            "--init", str(setup / "base"), "--prompts", str(setup / "data" / "train.parquet"),
            "--root", str(out)]


@pytest.fixture(scope="module")
def uninterrupted(setup):
    out = setup / "clean"
    res = subprocess.run(segment_cmd(setup, out), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_a_segment_writes_every_iteration_and_keeps_only_its_last_checkpoint(uninterrupted):
    for it in (1, 2, 3):
        assert (uninterrupted / f"iter_{it}" / "rollouts.parquet").exists()
        assert json.loads((uninterrupted / f"iter_{it}" / "metrics.json").read_text())[
            "iteration"] == it
        assert not (uninterrupted / f"iter_{it}" / "state").exists()  # working state pruned
    assert (uninterrupted / "iter_3" / "model" / "model.safetensors").exists()
    assert (uninterrupted / "iter_3" / "optim" / "state").is_dir()
    seg = json.loads((uninterrupted / "iter_3" / "segment.json").read_text())
    assert [m["iteration"] for m in seg["iterations"]] == [1, 2, 3]
    assert seg["startup"]["resumed_after"] is None


def test_a_killed_segment_resumes_from_its_last_complete_iteration(setup, uninterrupted):
    out = setup / "killed"
    proc = subprocess.Popen(segment_cmd(setup, out), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    marker = out / "iter_1" / "state" / "done.json"
    deadline = time.time() + 240
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)  # mid-way through iteration 2
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the segment finished before it could be killed"
    assert not (out / "iter_3" / "segment.json").exists()

    res = subprocess.run(segment_cmd(setup, out), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "resumed after" in res.stdout
    # Same weights and rollouts as the run that was never interrupted, byte for byte.
    want = load_file(uninterrupted / "iter_3" / "model" / "model.safetensors")
    got = load_file(out / "iter_3" / "model" / "model.safetensors")
    assert all((want[k] == got[k]).all() for k in want)
    for name in ("iter_3/model/model.safetensors", "iter_1/rollouts.parquet",
                 "iter_2/rollouts.parquet", "iter_3/rollouts.parquet"):
        assert (uninterrupted / name).read_bytes() == (out / name).read_bytes(), name
    for it in (2, 3):
        a = json.loads((uninterrupted / f"iter_{it}" / "metrics.json").read_text())
        b = json.loads((out / f"iter_{it}" / "metrics.json").read_text())
        assert a["rollout/reward"] == b["rollout/reward"] and a["losses/loss"] == b["losses/loss"]


def test_state_left_by_other_inputs_is_not_resumed(setup, tmp_path):
    from mintrl.training.rl_loop import find_resume

    state = tmp_path / "iter_2" / "state"
    state.mkdir(parents=True)
    (state / "done.json").write_text(json.dumps({"fingerprint": "other", "iteration": 2}))
    assert find_resume(tmp_path, 1, 3, "mine") == 0
    (state / "done.json").write_text(json.dumps({"fingerprint": "mine", "iteration": 2}))
    assert find_resume(tmp_path, 1, 3, "mine") == 2


def test_the_policy_samples_its_plain_rounds_with_the_configured_cache(tiny_model, tokenizer):
    """``rl.generation_cache`` reaches the segment's policy sampler: 'static' samples with
    fixed shapes, and the rollouts' log-probs are still the policy's own."""
    from types import SimpleNamespace

    from mintrl.config import RunSpec
    from mintrl.engine import Sampling
    from mintrl.training.logprobs import response_logprobs
    from mintrl.training.rl_loop import policy_sampler

    trainer = SimpleNamespace(module=tiny_model)
    for cache in ("dynamic", "static"):
        sampler = policy_sampler(RunSpec(generation_cache=cache), trainer, tokenizer,
                                 checkpoint=None, device="cpu", tensor_parallel=1,
                                 gpu_memory=0.4)
        assert (sampler._static is not None) == (cache == "static")
        prompts = [tokenizer("12 +3\n", add_special_tokens=False)["input_ids"]] * 3
        gen = sampler.generate(prompts, Sampling(max_new_tokens=12, seed=0))
        want = response_logprobs(tiny_model, prompts, gen.token_ids, tokenizer.pad_token_id)
        for got, ref in zip(gen.logprobs, want, strict=True):
            assert got == pytest.approx(ref, abs=1e-4)
