"""The RL loop of one segment: iterations ``start..end`` of one run, rollout then train, in
one process, with checkpointing and resume (``python -m mintrl.segment`` is its CLI).

Every iteration i writes ``<root>/iter_<i>/rollouts.parquet`` and ``metrics.json``. Under
``torchrun --nproc_per_node N`` the segment is data-parallel (``mintrl.training.distributed``): each
rank samples a share of the prompts and trains on a share of every minibatch; rank 0 writes.
The model and optimizer state of iterations inside the segment are working state
(``<root>/iter_<i>/state/``): each is removed once the next iteration is complete. The
segment's outputs are ``<root>/iter_<end>/{model,optim,segment.json}``. A killed segment
resumes from its last complete iteration; state left by different inputs is ignored.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer

from mintrl.algo.objectives import get_objective
from mintrl.config import Config
from mintrl.config.runs import Run
from mintrl.engine import load_engine
from mintrl.engine.base import Sampling
from mintrl.engine.mixed import shared_vocab_check
from mintrl.engine.transformers_engine import TransformersEngine
from mintrl.intervention.policies import intervention_policies
from mintrl.io import checkpoint_path, read_table, write_json, write_table
from mintrl.methods import get_method
from mintrl.models import load_model
from mintrl.progress import progress
from mintrl.report.inspector import write_inspector
from mintrl.rollouts import (
    iteration_rollouts,
    iteration_seed,
    load_problems,
    rollout_stats,
    select_prompts,
    wrong_correction_share,
)
from mintrl.schemas import INTERVENTION, ROLLOUTS
from mintrl.training.cost import TokenMeter, rollout_costs
from mintrl.training.distributed import barrier, gather_objects, is_main, rank, shard, world
from mintrl.training.trainer import (
    deepspeed_engine,
    load_optimizer_state,
    save_optimizer_state,
    save_policy,
    train_iteration,
)


class JobError(ValueError):
    """A segment's inputs do not fit its run (the CLI prints it as one line)."""


@dataclass
class SegmentJob:
    """What one segment runs: run ``run`` of config ``cfg`` on ``task``, iterations
    ``start..end`` from checkpoint ``init`` (and ``init_optim`` after iteration 1), on the
    prompts of ``prompts``, writing under ``root``. ``reference``: the frozen KL reference
    (kl_coef > 0); ``teacher``: the teacher checkpoint; ``out_*``: default
    ``<root>/iter_<end>/{model,optim,segment.json}``."""

    cfg: Config
    run: Run
    task: str
    start: int
    end: int
    init: Path
    prompts: Path
    root: Path
    init_optim: Path | None = None
    reference: Path | None = None
    teacher: Path | None = None
    out_model: Path | None = None
    out_optim: Path | None = None
    out_metrics: Path | None = None
    device: str | None = None
    tensor_parallel: int = 1

    def __post_init__(self):
        spec = self.run.spec
        if not 1 <= self.start <= self.end <= spec.iterations:
            raise JobError(f"--start {self.start} --end {self.end}: need 1 <= start <= end <= "
                           f"iterations ({spec.iterations})")
        if self.start > 1 and not self.init_optim:
            raise JobError("--init-optim is required after iteration 1 (optimizer state "
                           "carries)")
        if self.run.spec_for(self.task).kl_coef > 0 and not self.reference:
            raise JobError("kl_coef > 0 needs --reference (the frozen base policy)")
        end_dir = iter_dir(self.root, self.end)
        self.out_model = self.out_model or end_dir / "model"
        self.out_optim = self.out_optim or end_dir / "optim"
        self.out_metrics = self.out_metrics or end_dir / "segment.json"
        self.device = self.device or self.cfg.device


def run_segment(job: SegmentJob, started: float | None = None,
                imports: float | None = None) -> None:
    """Run the segment's iterations, then write ``segment.json`` (start-up timings, every
    iteration's metrics) and drop the superseded working state. ``started``: when the
    process started (``time.perf_counter``), ``imports``: seconds its imports took (the CLI's;
    default: from this call)."""
    started = time.perf_counter() if started is None else started
    startup = {"imports": imports or 0.0, **run_iterations(job)}
    if not is_main():
        return
    iterations = [json.loads((iter_dir(job.root, i) / "metrics.json").read_text())
                  for i in range(job.start, job.end + 1)]
    startup["wall"] = time.perf_counter() - started
    inspectors = [str(iter_dir(job.root, i) / "inspector.html")
                  for i in range(job.start, job.end + 1)]
    write_json(job.out_metrics, {"run": job.run.name, "task": job.task, "start": job.start,
                                 "end": job.end, "startup": startup, "iterations": iterations,
                                 "inspectors": inspectors})
    prune_state(job.root, job.start, job.end)


def fingerprint(run: Run, task: str, start: int, init: Path, max_new_tokens: int) -> str:
    """Identity of a segment's inputs: resume state is reused only when this matches."""
    weights = sorted(init.glob("*.safetensors"))
    stamp = [(w.name, w.stat().st_size, w.stat().st_mtime_ns) for w in weights]
    blob = json.dumps([run.spec_for(task).model_dump(mode="json"), run.seed, task, start, str(init),
                       stamp, max_new_tokens], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def iter_dir(root: Path, it: int) -> Path:
    return root / f"iter_{it}"


def find_resume(root: Path, start: int, end: int, fp: str) -> int:
    """Last complete iteration in [start, end) whose state matches ``fp``; start-1 if none."""
    for it in range(end - 1, start - 1, -1):
        marker = iter_dir(root, it) / "state" / "done.json"
        if marker.exists() and json.loads(marker.read_text()).get("fingerprint") == fp:
            return it
    return start - 1


def prune_state(root: Path, start: int, upto: int) -> None:
    """Drop the working state of iterations start..upto (superseded checkpoints)."""
    for it in range(start, upto + 1):
        shutil.rmtree(iter_dir(root, it) / "state", ignore_errors=True)


def run_iterations(job: SegmentJob) -> dict:
    """Iterations after the last complete one (resume) up to ``job.end``; returns the
    start-up timings."""
    t_load = time.perf_counter()
    cfg, run = job.cfg, job.run
    spec, root = run.spec_for(job.task), job.root
    max_new = cfg.tasks[job.task].max_new_tokens
    fp = fingerprint(run, job.task, job.start, job.init, max_new)
    done = find_resume(root, job.start, job.end, fp)
    src = iter_dir(root, done) / "state" if done >= job.start else None
    tokenizer = AutoTokenizer.from_pretrained(checkpoint_path(job.init))
    model = load_model(src / "model" if src else job.init)
    ref_model = None
    if spec.kl_coef > 0:
        ref_model = load_model(checkpoint_path(job.reference))
        ref_model.to(job.device).eval()
    t_ds = time.perf_counter()
    engine = deepspeed_engine(model, spec, job.device)
    t_ds_done = time.perf_counter()
    optim = src / "optim" if src else job.init_optim
    if optim:
        load_optimizer_state(engine, optim)
    t_ready = time.perf_counter()
    if is_main():
        print(f"[segment] {run.name}/{job.task}: iterations {done + 1}..{job.end} from "
              + (f"{src} (resumed after {done})" if src else str(job.init))
              + f", device {job.device}, engine {spec.engine}"
              + (f", {world()} data-parallel ranks" if world() > 1 else ""), flush=True)
    sampler = policy_sampler(spec, engine, tokenizer, src / "model" if src else job.init,
                             job.device, job.tensor_parallel, cfg.vllm_gpu_memory)
    teacher, teacher_tok = load_teacher(spec, job, tokenizer, done + 1, cfg.vllm_gpu_memory)
    if teacher is not None and is_main():
        print(f"[segment] teacher {job.teacher} on engine {spec.teacher_engine}", flush=True)
    judge, intervener = intervention_policies(spec, sampler, tokenizer, teacher, teacher_tok,
                                              done + 1)
    problems = load_problems(job.prompts)
    meters = Meters(TokenMeter(engine.module),
                    TokenMeter(ref_model) if ref_model is not None else None,
                    TokenMeter(teacher.model) if hasattr(teacher, "model") else None,
                    sampled=spec.engine != "vllm",
                    teacher_elsewhere=teacher is not None and not hasattr(teacher, "model"))
    bar = progress(range(done + 1, job.end + 1), desc=f"segment {run.name}/{job.task}",
                   unit="iter")
    for it in bar:
        metrics = iterate(engine, sampler, tokenizer, problems, run, job, it, max_new,
                          ref_model, judge, intervener, teacher, meters)
        if spec.engine == "vllm":  # the next iteration samples from the updated policy
            t_sync = time.perf_counter()
            sampler.load_weights(engine.module.state_dict())
            metrics["time/weight_sync"] = time.perf_counter() - t_sync
        checkpoint(job, engine, tokenizer, it, metrics, fp)
        bar.set_postfix(reward=f"{metrics['rollout/reward']:.3f}", refresh=False)
        barrier()
    return {
        "model_load": t_ds - t_load,
        "deepspeed_init": t_ds_done - t_ds,
        "state_load": t_ready - t_ds_done,
        "resumed_after": done if src else None,
    }


def checkpoint(job: SegmentJob, engine, tokenizer, it: int, metrics: dict, fp: str) -> None:
    """Save iteration ``it``'s model and optimizer state (working state inside the segment,
    pruned as it moves on; the kept one at its end) and its metrics; then mark it complete."""
    t0 = time.perf_counter()
    out = iter_dir(job.root, it)
    model_dir, optim_dir = ((out / "state" / "model", out / "state" / "optim")
                            if it < job.end else (job.out_model, job.out_optim))
    save_policy(engine, tokenizer, model_dir)
    save_optimizer_state(engine, optim_dir, it)
    metrics["time/checkpoint"] = time.perf_counter() - t0
    barrier()  # every rank's checkpoint shard is on disk
    if is_main():
        write_json(out / "metrics.json", metrics)
        if it < job.end:
            # The marker is written last: a resume only trusts an iteration whose
            # rollouts, metrics, model and optimizer state are all on disk.
            write_json(out / "state" / "done.json", {"fingerprint": fp, "iteration": it})
            prune_state(job.root, job.start, it - 1)
        print(f"[segment] iter {it}: reward {metrics['rollout/reward']:.3f} "
              f"loss {metrics['losses/loss']:.4f} grad {metrics['losses/grad_norm']:.3f} "
              f"({metrics['time/iteration']:.1f} s)", flush=True)


def policy_sampler(spec, engine, tokenizer, checkpoint: Path, device: str,
                   tensor_parallel: int, gpu_memory: float):
    """What samples the policy's rollouts: the trainer's own module (transformers: always in
    sync), or a vLLM engine started from the segment's first checkpoint and given the
    trainer's weights after every iteration (``VLLMEngine.load_weights``)."""
    if spec.engine == "vllm":
        sampler, _ = load_engine("vllm", str(checkpoint), device=device,
                                 tensor_parallel_size=tensor_parallel, gpu_memory=gpu_memory)
        return sampler
    return TransformersEngine(engine.module, tokenizer.eos_token_id, tokenizer.pad_token_id,
                              batch_size=512, cache=spec.generation_cache)


def load_teacher(spec, job: SegmentJob, tokenizer, first: int, gpu_memory: float):
    """The teacher's (engine, tokenizer) when a segment starting at ``first`` needs it
    (``RunSpec.teacher_needed``), else (None, None). OPD and MENTOR compare the two models'
    distributions token by token: a teacher with another vocabulary is an error."""
    if not spec.teacher_needed(first):
        return None, None
    if not job.teacher:
        raise JobError(f"this {spec.method} run needs the teacher: pass --teacher CHECKPOINT")
    # transformers unless teacher_engine says vllm, which the config allows only where the
    # teacher writes text: OPD, MENTOR and the likelihood judge score tokens with its model
    teacher, tok = load_engine(spec.teacher_engine, str(job.teacher), batch_size=512,
                               device=job.device, tensor_parallel_size=job.tensor_parallel,
                               gpu_memory=gpu_memory)
    if get_method(spec.method).scores_tokens:
        shared_vocab_check(tokenizer, tok, spec.method)
    if hasattr(teacher, "model"):
        teacher.model.eval()
    return teacher, tok


def const_c(spec, root: Path, iteration: int) -> float | None:
    """The Const anchor's c: the config's, or measured in the phase's first iteration and read
    back from it (so a resumed or later segment uses the same value). ``const_c_rule``
    'stability': None at iteration 1 (the trainer measures it from π_t's log-probs), then
    iteration 1's logged value; 'intervener': the intervener's mean token log-prob on its
    corrections in iteration 1's rollout file."""
    if spec.anchor != "const" or spec.const_c is not None:
        return spec.const_c
    if spec.const_c_rule == "stability":
        if iteration == 1:
            return None
        metrics = iter_dir(root, 1) / "metrics.json"
        return float(json.loads(metrics.read_text())["intervention/const_c"])
    df = read_table(iter_dir(root, 1) / "rollouts.parquet")
    lps = [lp for prov, lps in zip(df["provenance"], df["logprobs"], strict=True)
           for p, lp in zip(prov, lps, strict=True) if p == INTERVENTION]
    if not lps:
        raise JobError("const anchor: no intervention tokens in iteration 1 to measure c "
                         "from; set rl.const_c")
    return float(np.nanmean(lps))


def peak_memory() -> dict[str, float]:
    """Peak resident memory of this process so far, and of the GPU when there is one (GB)."""
    import resource

    out = {"memory/peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}
    if torch.cuda.is_available():
        out["memory/gpu_peak_gb"] = torch.cuda.max_memory_allocated() / 1e9
    return out


def merged_rollouts(parts: list[tuple]) -> tuple:
    """Every rank's (rollouts, timings) as one: rows in rank order; a timing is the slowest
    rank's (the iteration waits for it), a count (``agreement/…``, ``tokens/…``,
    ``corrections/…``) the sum, any other statistic the ranks' mean."""
    import pandas as pd

    df = pd.concat([d for d, _ in parts], ignore_index=True)
    times = {}
    for k in parts[0][1]:
        vals = [t[k] for _, t in parts]
        counted = k.startswith(("agreement/", "tokens/", "corrections/"))
        times[k] = (max(vals) if "/" not in k else sum(vals) if counted
                    else float(np.mean(vals)))
    return df, times


@dataclass
class Meters:
    """The token meters of a segment's models (``mintrl.training.cost``): the policy's, the
    KL reference's and the teacher's (None where the run loads none). ``sampled``: the
    policy's own module samples the rollouts (not vLLM), so the meter sees generation.
    What no meter sees is left out of the metrics, not logged as 0."""

    policy: TokenMeter
    reference: TokenMeter | None
    teacher: TokenMeter | None
    sampled: bool
    teacher_elsewhere: bool = False  # a teacher no meter sees (vLLM): its cost is not counted

    def counts(self) -> dict:
        return {k: m.counts() for k, m in (("policy", self.policy),
                                           ("reference", self.reference),
                                           ("teacher", self.teacher)) if m is not None}

    def costs(self, start: dict, rolled: dict) -> dict[str, float]:
        """``cost/…`` of the iteration so far, from the counts at its start and after its
        rollouts (the update is what came since), summed over data-parallel ranks.
        Generation: the policy's passes while rolling out; training: its passes in the
        update plus the KL reference's; the teacher: every token it read (interventions, a
        model judge, scoring)."""
        out = {"cost/train_flops": self.policy.flops(rolled["policy"])
               + (self.reference.flops(start["reference"]) if self.reference else 0.0)}
        if self.sampled:
            out["cost/generation_flops"] = self.policy.flops(start["policy"], rolled["policy"])
        if self.teacher is not None:
            out["cost/teacher_read_tokens"] = float(self.teacher.tokens(start["teacher"]))
            out["cost/teacher_flops"] = self.teacher.flops(start["teacher"])
        elif not self.teacher_elsewhere:  # no teacher this iteration: it cost nothing
            out["cost/teacher_read_tokens"] = out["cost/teacher_flops"] = 0.0
        ranks = gather_objects(out)
        return {k: float(sum(r[k] for r in ranks)) for k in out}


def iterate(engine, sampler, tokenizer, problems, run, job, it, max_new, ref_model, judge,
            intervener, teacher, meters: Meters | None = None) -> dict:
    """One iteration: rollouts (written first), then optimisation; returns its metrics."""
    t0 = time.perf_counter()
    start = meters.counts() if meters else {}
    spec = run.spec_for(job.task)
    batch = select_prompts(problems, spec.prompts_per_iteration, run.seed, it)
    engine.module.eval()
    # data-parallel: each rank its share of the prompts (whole groups), its own seed
    seed = iteration_seed(run.seed, it) if world() == 1 else iteration_seed(run.seed, it,
                                                                            100 + rank())
    df, times = iteration_rollouts(sampler, tokenizer, shard(batch), spec, run.name, it,
                                   Sampling.of(spec.sampling, max_new, seed), judge, intervener,
                                   teacher)
    rolled = meters.counts() if meters else {}
    if world() > 1:
        df, times = merged_rollouts(gather_objects((df, times)))
    if is_main():
        write_table(iter_dir(job.root, it) / "rollouts.parquet", df, ROLLOUTS)
        write_inspector(df, tokenizer, iter_dir(job.root, it) / "inspector.html")
    barrier()  # the Const anchor's c is read back from iteration 1's files
    objective = spec.objective_at(it)
    anchored = "anchor_logprobs" in get_objective(objective).needs
    c = const_c(spec, job.root, it) if anchored else None
    # the teacher scores the sampled tokens: OPD's advantages, and the teacher-vs-policy KL
    # that OPD and MENTOR log
    scorer = teacher.model if teacher and get_method(spec.method).scores_tokens else None
    stats = train_iteration(engine, df, spec, objective, tokenizer.pad_token_id,
                            iteration_seed(run.seed, it, 2), job.device, ref_model, c,
                            teacher_model=scorer, iteration=it)
    extra = {"intervention/const_c": c} if c is not None else {}  # else the trainer's
    if meters:
        extra |= rollout_costs(df) | meters.costs(start, rolled)
    mem = gather_objects(peak_memory())  # the largest rank's
    extra |= {k: max(m[k] for m in mem) for k in mem[0]}
    return {"iteration": it, **rollout_stats(df), **wrong_correction_share(times), **stats,
            **extra,
            **{(k if "/" in k else f"time/{k}"): v for k, v in times.items()},
            "time/iteration": time.perf_counter() - t0}
