"""Data-parallel segments (``torchrun --nproc_per_node N``) on CPU ranks (gloo): what two
ranks learn equals what one process learns, and a two-rank segment writes one run."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from transformers import AutoModelForCausalLM

from mintrl.rollouts import load_problems, select_prompts

RUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]


STARTUP_ABORT = "terminate called without an active exception"


def _launch(n: int, *args, timeout=600) -> subprocess.CompletedProcess:
    """torchrun ``args`` on ``n`` CPU ranks. About one two-rank launch in six on the 2-core
    machine aborts one rank as the process group starts (``STARTUP_ABORT``, SIGABRT; with or
    without DeepSpeed's shared-memory op, cause not found yet): such a launch is tried again,
    up to twice, and any other failure fails at once."""
    for _ in range(3):
        res = subprocess.run([*RUN, "--nproc_per_node", str(n), *args], capture_output=True,
                             text=True, timeout=timeout)
        if res.returncode == 0 or STARTUP_ABORT not in res.stdout + res.stderr:
            break
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    return res


@pytest.mark.parametrize("objective", ["regression", "grpo"])
def test_two_ranks_learn_what_one_process_learns(tmp_path, objective):
    """Two iterations on the same rollouts: each rank trains on half of every minibatch
    (DeepSpeed averages the gradients, the loss is scaled by the world size): the weights,
    the logged loss, gradient norm, entropy and residuals equal one process's."""
    outs = {}
    for n in (1, 2):
        out = tmp_path / f"world{n}"
        out.mkdir()
        _launch(n, "tests/dp_train_worker.py", str(out), objective)
        outs[n] = (torch.load(out / "params.pt"), json.loads((out / "stats.json").read_text()))
    (w1, s1), (w2, s2) = outs[1], outs[2]
    assert s2["world"] == 2
    moved = max(float((w1[k] - w1[k].new_zeros(())).abs().max()) for k in w1)
    assert moved > 0.1
    for k in w1:
        assert torch.allclose(w1[k], w2[k], atol=1e-5), k
    for key in ("losses/loss", "losses/grad_norm", "policy/entropy", "losses/optimizer_steps"):
        # abs: GRPO's first loss is a mean of O(1) per-token terms that nearly cancel (ratio
        # 1, advantages summing to 0 per group), so its float error is relative to the terms
        assert s2[key] == pytest.approx(s1[key], rel=1e-5, abs=1e-7), key
    if objective == "regression":
        assert s2["losses/residual0_abs"] == pytest.approx(s1["losses/residual0_abs"])


def test_each_python_environment_builds_its_own_deepspeed_ops(tmp_path):
    """A venv and the system Python on one machine must not rebuild one shared-memory op over
    each other (a rank loading it mid-rebuild aborts); a ranked run builds it under this
    environment's folder, which the other environment's folder is not."""
    from mintrl.training.distributed import extensions_dir

    assert extensions_dir("/opt/venv-a") != extensions_dir("/opt/venv-b")
    assert extensions_dir(sys.prefix) == extensions_dir()
    out = tmp_path / "world2"
    out.mkdir()
    _launch(2, "tests/dp_train_worker.py", str(out), "grpo")
    assert list(Path(extensions_dir()).glob("deepspeed_shm_comm*/*.so"))


def test_a_build_killed_midway_does_not_hang_later_segments(tmp_path):
    """A JIT build of the shared-memory op that was killed leaves torch's ``lock`` file in
    its folder; the next process joining a group must start anyway (before: it waited on
    that file forever), and leave no lock behind."""
    import os
    import shutil

    from mintrl.training.distributed import extensions_dir

    folder = tmp_path / "ext"
    built = Path(extensions_dir()) / "deepspeed_shm_comm"
    if built.is_dir():  # a build already made here: only the lock's effect is tested
        shutil.copytree(built, folder / "deepspeed_shm_comm")
    (folder / "deepspeed_shm_comm").mkdir(parents=True, exist_ok=True)
    (folder / "deepspeed_shm_comm" / "lock").write_text("")
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(folder)}
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                "TORCHELASTIC_RUN_ID"):
        env.pop(key, None)
    code = ("from mintrl.training.trainer import init_distributed\n"
            "import torch.distributed as dist\n"
            "init_distributed('cpu'); print('world', dist.get_world_size())")
    try:
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("the process waited on the dead build's lock file")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "world 1" in res.stdout
    assert not list(folder.glob("*/lock"))
    assert list(folder.glob("deepspeed_shm_comm/*.so"))


@pytest.mark.parametrize("run", ["grpo-s0", "mentor", "mintrl-proxy"])
def test_a_two_rank_segment_writes_one_run(tmp_path, tokenizer, run):
    """Every prompt of each iteration sampled once across the ranks (MENTOR's guided and
    MInTRL's semi-on-policy rollouts included), one rollout file and one metrics file per
    iteration, and a checkpoint a single process loads."""
    from conftest import write_micro_lab

    write_micro_lab(tmp_path, tokenizer, {"iterations": 2, "iterations_per_job": 2,
                                          "eval_every": 2, "prompts_per_iteration": 8,
                                          "group_size": 4, "minibatch_size": 16,
                                          "micro_batch_size": 8},
                    teacher=True, drop_run_lengths=True)
    root = tmp_path / "run"
    res = _launch(2, "-m", "mintrl.segment", "--", "--config", str(tmp_path / "cfg.yaml"),
                  "--run", run, "--task", "arith", "--start", "1", "--end", "2",
                  "--init", str(tmp_path / "base"), "--teacher", str(tmp_path / "teacher"),
                  "--prompts", str(tmp_path / "data" / "train.parquet"), "--root", str(root),
                  "--threads", "1")
    assert "2 data-parallel ranks" in res.stdout
    assert res.stdout.count("[segment] iter 1:") == 1  # rank 0 speaks for the segment
    problems = load_problems(tmp_path / "data" / "train.parquet")
    for it in (1, 2):
        df = pd.read_parquet(root / f"iter_{it}" / "rollouts.parquet")
        want = sorted(p.id for p in select_prompts(problems, 8, 0, it))
        assert sorted(df["problem_id"].unique()) == want
        assert df.groupby("problem_id").size().eq(4).all()
        if run != "grpo-s0":  # the teacher-phase rollouts of MENTOR and MInTRL
            assert set(df["kind"]) == ({"on-policy", "guided"} if run == "mentor"
                                       else {"control", "semi"})
        metrics = json.loads((root / f"iter_{it}" / "metrics.json").read_text())
        assert metrics["iteration"] == it and metrics["losses/optimizer_steps"] == 2
        assert not (root / f"iter_{it}" / "state").exists()
    seg = json.loads((root / "iter_2" / "segment.json").read_text())
    assert [m["iteration"] for m in seg["iterations"]] == [1, 2]
    assert (root / "iter_2" / "optim" / "state").is_dir()
    # the kept checkpoint is a complete model a single process loads (a random policy earns
    # no reward here: learning itself is the test above)
    model = AutoModelForCausalLM.from_pretrained(root / "iter_2" / "model")
    assert sum(p.numel() for p in model.parameters()) == sum(
        p.numel() for p in AutoModelForCausalLM.from_pretrained(tmp_path / "base").parameters())


def test_the_ranks_and_tp_resources_reach_the_jobs(tmp_path):
    """A segment asking for 4 GPUs with a vLLM tensor-parallel size of 2 is planned under
    torchrun with 4 / 2 = 2 processes, and `<rule>:tp=2` reaches the engines; without them a
    segment is one plain process and no engine is told a size. (The segment that ends at T_I
    and hands off is its own rule, `segment_handoff`, with its own resources, as in the SLURM
    profile.)"""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(root / "workflow" / "Snakefile"),
           "--directory", str(tmp_path), "--configfile", str(root / "config" / "config.yaml"),
           "--cores", "2", "-n", "-p"]
    plain = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    dp = subprocess.run([*cmd, "--set-resources", "segment:gpu=4", "segment:tp=2",
                         "segment_handoff:gpu=4", "segment_handoff:tp=2", "evaluate_run:tp=2",
                         "evaluate_lab:tp=2", "filter_prompts:tp=2"],
                        capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0 and dp.returncode == 0, (plain.stderr + dp.stderr)[-3000:]
    launches = [ln for ln in dp.stdout.splitlines() if "mintrl.segment" in ln]
    assert launches and all("torch.distributed.run --standalone --nproc_per_node 2 -m "
                            "mintrl.segment -- --config" in ln for ln in launches)
    assert "torch.distributed.run" not in plain.stdout
    assert "--tensor-parallel" not in plain.stdout
    cpu = subprocess.run([*cmd, "--set-resources", "segment:ranks=3", "segment_handoff:ranks=3"],
                         capture_output=True, text=True, timeout=600)  # CPU: no GPU asked for
    assert "--nproc_per_node 3 -m mintrl.segment --" in cpu.stdout
    for stage in ("mintrl.segment", "mintrl.evaluate", "mintrl.filter"):
        cmds = [ln for ln in dp.stdout.splitlines() if stage + " " in ln]
        assert cmds and all("--tensor-parallel 2" in ln for ln in cmds), stage
    assert any(ln.strip().startswith("python -m mintrl.segment --config")
               or "Shell command: python -m mintrl.segment --config" in ln
               for ln in plain.stdout.splitlines())
