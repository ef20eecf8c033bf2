"""Pre-training a toy base policy or teacher from scratch on a task's generator, with a
resume state. ``python -m mintrl.pretrain`` is its CLI.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from mintrl.config import LAB_SEED_STRIDE, PretrainSpec
from mintrl.io import read_table
from mintrl.models import build_model, load_model
from mintrl.progress import progress as progress_bar
from mintrl.tasks import Task
from mintrl.tasks.facts import FactTable
from mintrl.tokenizer import build_char_tokenizer

IGNORE = -100


def encode_examples(tokenizer, prompts: list[str], responses: list[str]):
    """Right-padded (input_ids, labels), both (B, T); labels are -100 on prompt and padding.

    Each response is followed by EOS, which is a label too (the model must learn to stop).
    """
    p_ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
    r_ids = tokenizer(responses, add_special_tokens=False)["input_ids"]
    seqs = [p + r + [tokenizer.eos_token_id] for p, r in zip(p_ids, r_ids, strict=True)]
    width = max(map(len, seqs))
    input_ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full((len(seqs), width), IGNORE, dtype=torch.long)
    for i, (p, s) in enumerate(zip(p_ids, seqs, strict=True)):
        input_ids[i, : len(s)] = torch.tensor(s)
        labels[i, len(p) : len(s)] = torch.tensor(s[len(p) :])
    return input_ids, labels


def train_step_loss(model, tokenizer, prompts, responses, buckets: int) -> float:
    """Back-propagate the batch's mean token loss; returns it.

    The batch is sorted by length and cut into ``buckets`` micro-batches, each padded only to
    its own longest sequence (with mixed difficulties and privileged prompts, one padded batch
    ran 2.5x slower on the toy); summing per-token losses over micro-batches keeps the
    full-batch mean.
    """
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]) + len(responses[i]))
    size = -(-len(order) // buckets)
    parts = [order[j : j + size] for j in range(0, len(order), size)]
    encoded = [encode_examples(tokenizer, [prompts[i] for i in part],
                               [responses[i] for i in part]) for part in parts]
    n_targets = sum(int((labels != IGNORE).sum()) for _, labels in encoded)
    total = 0.0
    for input_ids, labels in encoded:
        logits = model(input_ids=input_ids).logits  # (b, T, V)
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten(),
            ignore_index=IGNORE, reduction="sum") / n_targets
        loss.backward()
        total += loss.item()
    return total


def sample_examples(
    task: Task, spec: PretrainSpec, rng: np.random.Generator, n: int, exclude: set[str],
    facts: FactTable | None = None,
) -> tuple[list[str], list[str]]:
    """n (prompt, response) pairs; difficulties uniform over the spec's range; problems in
    ``exclude`` (held-out splits) are redrawn; some prompts carry the reference solution.
    With a fact table, each problem's kind is uniform over those the role's view shows and
    its solution writes the facts as that view shows them (``FactTable.shown``)."""
    prompts, responses = [], []
    while len(prompts) < n:
        k = int(rng.integers(spec.difficulties.lo, spec.difficulties.hi + 1))
        kind = facts.sample_kind(rng, spec.facts) if facts is not None else "known"
        problem = task.sample(rng, k, facts, kind, spec.facts)
        if problem.prompt in exclude:
            continue
        privileged = rng.random() < spec.privileged_fraction
        prompts.append(task.privileged_prompt(problem) if privileged else problem.prompt)
        responses.append(problem.solution)
    return prompts, responses


def pretrain_optimizer(params, spec: PretrainSpec) -> torch.optim.AdamW:
    """AdamW at the spec's peak rate (``lr_at`` sets each step's). Fused: ATen's own kernel
    takes the exact square root, where the unfused step's goes through MKL's vector maths,
    whose result depends on MKL's code branch (benchmarks/results/cpu_vendor_mkl_products.md)."""
    return torch.optim.AdamW(params, lr=spec.lr, betas=(0.9, 0.98), weight_decay=0.01,
                             fused=True)


def lr_at(step: int, spec: PretrainSpec) -> float:
    """Linear warm-up then cosine decay to 10% of the peak."""
    if step < spec.warmup_steps:
        return spec.lr * (step + 1) / spec.warmup_steps
    progress = (step - spec.warmup_steps) / max(1, spec.steps - spec.warmup_steps)
    return spec.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def lab_seed_of(seed: int, lab_seed: int) -> int:
    """The seed a model of lab ``lab_seed`` is pre-trained with: the role's (the global seed +
    the spec's) + LAB_SEED_STRIDE x the lab seed. Lab 0 adds nothing: its models keep the
    weights they always had."""
    if lab_seed < 0:
        raise ValueError(f"lab seed {lab_seed} < 0")
    return seed + LAB_SEED_STRIDE * lab_seed


def run_fingerprint(task: Task, spec: PretrainSpec, seed: int, exclude: set[str],
                    lab_seed: int = 0, facts: FactTable | None = None,
                    init: Path | None = None) -> str:
    """What a resume state must have been made by: the task, the spec, the seed, the lab seed,
    the held-out prompts and the weights it started from (a state from another config, lab or
    base is never resumed). Lab 0's is the fingerprint states had before lab seeds, so they
    are still resumed."""
    weights = spec.model_dump_json(exclude=spec.not_identity())
    lab = f"lab {lab_seed}\n" if lab_seed else ""
    table = f"{facts!r}\n" if facts is not None else ""
    h = hashlib.sha256(f"{task.name}\n{weights}\n{seed}\n{lab}{table}".encode())
    for prompt in sorted(exclude):
        h.update(prompt.encode() + b"\0")
    for weights_file in sorted(init.glob("*.safetensors")) if init is not None else []:
        h.update(hashlib.sha256(weights_file.read_bytes()).digest())
    return h.hexdigest()


def save_resume_state(path: Path, fingerprint: str, step: int, model, opt,
                      rng: np.random.Generator, history, seconds: float) -> None:
    """Everything the loop carries from step to step, written atomically (a kill mid-write
    leaves the previous state): weights, AdamW moments, the data stream's generator, torch's
    generator, the loss history and the training seconds so far."""
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(tmp, "wb") as f:
            torch.save({"fingerprint": fingerprint, "step": step, "model": model.state_dict(),
                        "optimizer": opt.state_dict(), "numpy_rng": rng.bit_generator.state,
                        "torch_rng": torch.get_rng_state(), "history": history,
                        "seconds": seconds}, f)
            f.flush()
            os.fsync(f.fileno())  # on disk before it replaces the last good state
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def load_resume_state(path: Path, fingerprint: str) -> dict | None:
    """The state at ``path`` when this run made it, else None: a stale or unreadable one is
    reported and ignored (training starts over; ``weights_only``: the file holds tensors and
    plain values only)."""
    if not path.exists():
        return None
    try:
        state = torch.load(path, weights_only=True)
    except Exception as e:  # noqa: BLE001 - a truncated file must not block every retry
        print(f"[pretrain] ignoring {path}: unreadable ({type(e).__name__}: {e})", flush=True)
        return None
    if state.get("fingerprint") != fingerprint:
        print(f"[pretrain] ignoring {path}: made with another config, task, lab seed or "
              "held-out set", flush=True)
        return None
    return state


def pretrain(task: Task, spec: PretrainSpec, seed: int, exclude: set[str], progress=True,
             resume: Path | None = None, lab_seed: int = 0, facts: FactTable | None = None,
             init: Path | None = None, after_step: Callable[[int, object], None] | None = None):
    """Train a fresh model, or one from the checkpoint ``init`` (a role with `init: base`);
    returns (model, tokenizer, history of (step, loss), training seconds, those of earlier
    killed jobs included).

    ``seed`` is the role's (the global seed + ``spec.seed``); ``lab_seed`` offsets it
    (``lab_seed_of``) to pre-train the same role for another lab.

    With ``resume``, a state is written there every ``spec.checkpoint_every`` steps and, when
    one this run made is there, training goes on from it: the final weights are the same as
    an uninterrupted run's at the same thread count (another count changes the float sums'
    order, which is why the stage runs the role's ``threads`` whatever cores it is given).

    ``after_step(steps_done, model)`` is called after every optimizer step (a benchmark samples
    the model along the way: it must leave the model in train mode and draw from no generator
    the loop uses)."""
    if (init is None) != (spec.init == "scratch"):
        raise ValueError(f"init: {spec.init!r} " + ("needs the checkpoint to start from"
                                                     if init is None else "takes no checkpoint"))
    fingerprint = (run_fingerprint(task, spec, seed, exclude, lab_seed, facts, init)
                   if resume else "")
    model_seed = lab_seed_of(seed, lab_seed)
    tokenizer = build_char_tokenizer()
    model = (build_model(spec.arch, tokenizer, model_seed) if init is None
             else load_model(init))
    model.train()
    rng = np.random.default_rng(model_seed)
    opt = pretrain_optimizer(model.parameters(), spec)
    history: list[tuple[int, float]] = []
    start, before = 0, 0.0  # first step, training seconds of the jobs before this one
    t0 = time.perf_counter()
    state = load_resume_state(resume, fingerprint) if resume else None
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        rng.bit_generator.state = state["numpy_rng"]
        torch.set_rng_state(state["torch_rng"])
        history = [tuple(h) for h in state["history"]]
        start, before = state["step"], state["seconds"]
        print(f"[pretrain] resumed at step {start} of {spec.steps} from {resume}", flush=True)
    bar = progress_bar(range(start, spec.steps), desc=f"pretrain {task.name}", unit="step",
                       total=spec.steps, initial=start, disable=not progress)
    for step in bar:
        prompts, responses = sample_examples(task, spec, rng, spec.batch_size, exclude, facts)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, spec)
        opt.zero_grad(set_to_none=True)
        loss = train_step_loss(model, tokenizer, prompts, responses, spec.length_buckets)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        history.append((step, loss))
        if after_step is not None:
            after_step(step + 1, model)
        if step % 25 == 0:
            bar.set_postfix(loss=f"{loss:.4f}", refresh=False)  # shown at the bar's own refresh
        done = step + 1
        if resume and spec.checkpoint_every and done % spec.checkpoint_every == 0 \
                and done < spec.steps:
            save_resume_state(resume, fingerprint, done, model, opt, rng, history,
                              before + time.perf_counter() - t0)
    model.eval()
    return model, tokenizer, history, before + time.perf_counter() - t0


def held_out_prompts(folder: Path | None) -> set[str]:
    """Prompts of every split file under ``folder``: never seen in pre-training."""
    if folder is None:
        return set()
    return {p for f in sorted(folder.glob("*.parquet")) for p in read_table(f)["prompt"]}
