from pathlib import Path

import numpy as np
import pytest
import torch

from mintrl.config import load_config
from mintrl.tasks import get_task
from mintrl.training.pretraining import encode_examples, pretrain, sample_examples

MICRO = "tests/micro.yaml"


def test_labels_cover_response_and_eos_only(tokenizer):
    input_ids, labels = encode_examples(tokenizer, ["12 +3\n", "7\n"], ["a", "bc"])
    assert input_ids.shape == labels.shape == (2, 8)
    assert labels[0].tolist()[:6] == [-100] * 6  # prompt is context, not target
    assert labels[0, 6:8].tolist() == [tokenizer.convert_tokens_to_ids("a"), tokenizer.eos_token_id]
    assert labels[1, 5:].tolist() == [-100] * 3  # padding


def test_held_out_problems_are_never_trained_on():
    task, spec = get_task("arith"), load_config(MICRO).tasks["arith"].base
    rng = np.random.default_rng(0)
    first, _ = sample_examples(task, spec, np.random.default_rng(0), 50, set())
    held_out = set(first[:25])
    prompts, _ = sample_examples(task, spec, rng, 200, held_out)
    assert not held_out & set(prompts)


def test_pretraining_lowers_the_loss_and_is_deterministic():
    spec = load_config(MICRO).tasks["arith"].base
    task = get_task("arith")
    model, _, history, _ = pretrain(task, spec, seed=0, exclude=set(), progress=False)
    losses = [loss for _, loss in history]
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])
    again, _, _, _ = pretrain(task, spec, seed=0, exclude=set(), progress=False)
    for a, b in zip(model.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)


def test_length_buckets_give_the_same_loss_and_gradient_as_one_padded_batch(tiny_model,
                                                                            tokenizer):
    from mintrl.training.pretraining import train_step_loss

    task, spec = get_task("arith"), load_config(MICRO).tasks["arith"].teacher
    prompts, responses = sample_examples(task, spec, np.random.default_rng(1), 12, set())
    results = []
    for buckets in (1, 5):
        tiny_model.zero_grad(set_to_none=True)
        loss = train_step_loss(tiny_model, tokenizer, prompts, responses, buckets)
        results.append((loss, [p.grad.clone() for p in tiny_model.parameters()]))
    tiny_model.zero_grad(set_to_none=True)
    (loss1, g1), (loss5, g5) = results
    assert abs(loss1 - loss5) < 1e-5
    for a, b in zip(g1, g5, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_a_killed_pretraining_job_resumes_to_the_uninterrupted_weights(tmp_path):
    """SIGKILL the stage's process once its first resume state is written; the same command
    again goes on from that state (not from step 0) and writes the weights an uninterrupted
    job writes, and leaves no state behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import yaml
    from safetensors.torch import load_file

    cfg = yaml.safe_load(Path(MICRO).read_text())
    cfg["tasks"]["arith"]["base"] |= {"steps": 120, "checkpoint_every": 20}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))

    def command(out):
        return [sys.executable, "-m", "mintrl.pretrain", "--config", str(config), "--task",
                "arith", "--role", "base", "--out", str(out)]

    killed = tmp_path / "killed" / "base"
    state = killed.with_name("base.resume.pt")
    job = subprocess.Popen(command(killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not state.exists() and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert job.poll() is None, "the job ended before its first resume state"
        os.kill(job.pid, signal.SIGKILL)
    finally:
        job.kill()
        job.wait()
    assert state.exists() and not killed.exists()  # killed mid-run, nothing written

    again = subprocess.run(command(killed), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = int(again.stdout.split("resumed at step ")[1].split()[0])
    assert 0 < resumed < 120 and resumed % 20 == 0
    assert not state.exists()

    whole = tmp_path / "whole" / "base"
    subprocess.run(command(whole), check=True, capture_output=True, timeout=300)
    a = load_file(killed / "model.safetensors")
    b = load_file(whole / "model.safetensors")
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_a_resume_state_from_another_config_is_not_resumed(tmp_path, capsys):
    """A state left by a job whose config has since changed is ignored: training starts over
    and gives the weights of a run that never saw it."""
    task = get_task("arith")
    spec = load_config(MICRO).tasks["arith"].base.model_copy(update={"checkpoint_every": 10})
    state = tmp_path / "base.resume.pt"
    pretrain(task, spec.model_copy(update={"steps": 60, "lr": 1e-3}), seed=0, exclude=set(),
             progress=False, resume=state)
    assert state.exists()  # a state at step 50 of the 60-step job, never cleaned up
    model, _, history, _ = pretrain(task, spec, seed=0, exclude=set(), progress=False,
                                 resume=state)
    assert "ignoring" in capsys.readouterr().out and history[0][0] == 0
    _assert_a_fresh_run_gives(model, task, spec)


def test_an_unreadable_resume_state_is_ignored(tmp_path, capsys):
    """A state cut short (a node crashed mid-write on a shared filesystem) does not block
    the job: it is reported and training starts over."""
    task, spec = get_task("arith"), load_config(MICRO).tasks["arith"].base
    state = tmp_path / "base.resume.pt"
    state.write_bytes(b"PK\x03\x04 truncated")
    model, _, history, _ = pretrain(task, spec, seed=0, exclude=set(), progress=False,
                                    resume=state)
    assert "unreadable" in capsys.readouterr().out and history[0][0] == 0
    _assert_a_fresh_run_gives(model, task, spec)


def _assert_a_fresh_run_gives(model, task, spec):
    """``model``'s weights are those of a run of ``spec`` that never saw a resume state."""
    fresh, _, _, _ = pretrain(task, spec, seed=0, exclude=set(), progress=False)
    for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
        assert torch.equal(a, b)


def _same_weights(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))


def test_each_lab_seed_pretrains_its_own_weights_and_lab_zero_keeps_todays(tmp_path, capsys):
    """Lab seed k pre-trains with the role's seed + 1000 k: lab 0 is the run without a lab
    seed, lab 1 differs from it and is the run with seed + 1000; a resume state of one lab is
    never resumed by another."""
    import hashlib

    from mintrl.training.pretraining import lab_seed_of, run_fingerprint

    task = get_task("arith")
    spec = load_config(MICRO).tasks["arith"].base.model_copy(
        update={"steps": 3, "warmup_steps": 1, "checkpoint_every": 1})

    def train(seed=0, **kw):
        return pretrain(task, spec, seed=seed, exclude=set(), progress=False, **kw)[0]

    today, lab0, lab1 = train(), train(lab_seed=0), train(lab_seed=1)
    assert _same_weights(today, lab0) and not _same_weights(lab0, lab1)
    assert _same_weights(lab1, train(seed=1000))
    # base (role seed 0) and teacher (role seed 1) of labs 0-2: six distinct seeds
    assert len({lab_seed_of(role, lab) for role in (0, 1) for lab in range(3)}) == 6
    # lab 0's resume fingerprint is the one states had before lab seeds and `init` (they
    # still resume)
    weights = spec.model_dump_json(exclude={*spec.RESUME_ONLY_KEYS, "init"})
    before = hashlib.sha256(f"arith\n{weights}\n0\n".encode()).hexdigest()
    assert run_fingerprint(task, spec, 0, set()) == before == run_fingerprint(task, spec, 0,
                                                                               set(), 0)
    assert run_fingerprint(task, spec, 0, set(), 1) != before
    state = tmp_path / "base.resume.pt"
    train(resume=state)  # leaves lab 0's state at step 2 of 3
    resumed = train(lab_seed=1, resume=state)
    assert "ignoring" in capsys.readouterr().out and _same_weights(resumed, lab1)


def test_the_stage_pretrains_the_lab_seed_it_is_given(tmp_path):
    import json

    import yaml

    from mintrl import pretrain as stage

    cfg = yaml.safe_load(Path(MICRO).read_text())
    cfg["tasks"]["arith"]["teacher"] |= {"steps": 2, "warmup_steps": 1, "init": "scratch"}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "teacher-lab2"
    stage.main(["--config", str(config), "--task", "arith", "--role", "teacher", "--lab-seed",
                "2", "--out", str(out)])
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["lab_seed"] == 2 and report["seed"] == 2000  # teacher seed 0 in micro.yaml
    assert (out / "config.json").exists() and not out.with_name("teacher-lab2.resume.pt").exists()


def test_a_teacher_with_init_base_starts_from_the_base_of_its_lab(tmp_path):
    import yaml
    from transformers import AutoModelForCausalLM

    from mintrl import pretrain as stage
    from mintrl.cli import run_main

    load_model = AutoModelForCausalLM.from_pretrained
    cfg = yaml.safe_load(Path(MICRO).read_text())
    cfg["tasks"]["arith"]["base"] |= {"steps": 2, "warmup_steps": 1}
    # one step at a tiny rate: the teacher must still be the base, not a fresh model
    cfg["tasks"]["arith"]["teacher"] |= {"steps": 1, "warmup_steps": 1, "lr": 1e-6,
                                         "init": "base",
                                         "arch": cfg["tasks"]["arith"]["base"]["arch"]}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))
    args = ["--config", str(config), "--task", "arith"]
    out = tmp_path / "models"
    with pytest.raises(SystemExit):  # no base beside it yet: one line, exit code 2
        run_main(stage.main, [*args, "--role", "teacher", "--out", str(out / "teacher")])
    stage.main([*args, "--role", "base", "--out", str(out / "base")])
    stage.main([*args, "--role", "teacher", "--out", str(out / "teacher")])
    base, teacher = load_model(out / "base"), load_model(out / "teacher")
    pairs = zip(base.parameters(), teacher.parameters(), strict=True)
    gaps = [float((a - b).detach().abs().max()) for a, b in pairs]
    assert 0 < max(gaps) < 1e-4  # trained one step, from the base's weights


def test_only_a_teacher_of_the_bases_shape_starts_from_the_base():
    import yaml

    from mintrl.config import ConfigError, parse_config

    cfg = yaml.safe_load(Path(MICRO).read_text())
    cfg["tasks"]["arith"]["base"]["init"] = "base"
    with pytest.raises(ConfigError, match="base.init"):
        parse_config(cfg)
    cfg = yaml.safe_load(Path(MICRO).read_text())
    cfg["tasks"]["arith"]["teacher"] |= {"init": "base", "arch": {"hidden_size": 48}}
    with pytest.raises(ConfigError, match="teacher.arch"):
        parse_config(cfg)
