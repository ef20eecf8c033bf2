"""One iteration of optimisation on a rollout file, outside the RL loop (inspection and
debugging). ``python -m mintrl.train`` is its CLI.
"""

from __future__ import annotations

from pathlib import Path

from mintrl.algo.objectives import get_objective
from mintrl.io import checkpoint_path, write_json
from mintrl.rollouts import iteration_seed


def train_on_rollouts(run, spec, df, iteration: int, init: Path, init_optim: Path | None,
                      out_model: Path, out_optim: Path, const_c: float | None,
                      teacher_dir: Path | None, device: str) -> dict[str, float]:
    """One iteration of ``run``'s objective on the rollout table ``df``, starting from the
    policy that sampled it (``init``, and ``init_optim``'s optimizer state); writes the
    model, the optimizer state and ``<out_model>.train.json``; returns the metrics."""
    from transformers import AutoTokenizer

    from mintrl.models import load_model
    from mintrl.training.trainer import (
        deepspeed_engine,
        load_optimizer_state,
        save_optimizer_state,
        save_policy,
        train_iteration,
    )

    objective = get_objective(spec.objective_at(iteration))
    if ("anchor_logprobs" in objective.needs and spec.anchor == "const" and const_c is None
            and spec.const_c_rule != "stability"):  # the stability rule measures c here
        raise SystemExit("the const anchor needs c: pass --const-c or set rl.const_c")
    if "teacher_logprobs" in objective.needs and not teacher_dir:
        raise SystemExit(f"the {spec.objective_at(iteration)} objective needs the teacher: "
                         "pass --teacher CHECKPOINT")
    tokenizer = AutoTokenizer.from_pretrained(checkpoint_path(init))
    model = load_model(init)
    engine = deepspeed_engine(model, spec, device)
    if init_optim:
        load_optimizer_state(engine, init_optim)
    teacher = None
    if teacher_dir:
        from mintrl.engine.mixed import shared_vocab_check

        shared_vocab_check(tokenizer, AutoTokenizer.from_pretrained(checkpoint_path(teacher_dir)),
                           run.method)
        teacher = load_model(teacher_dir)
        teacher.to(device).eval()
    stats = train_iteration(engine, df, spec, objective, tokenizer.pad_token_id,
                            iteration_seed(run.seed, iteration, 2), device,
                            const_c=const_c, teacher_model=teacher, iteration=iteration)
    save_policy(engine, tokenizer, out_model)
    save_optimizer_state(engine, out_optim, iteration)
    write_json(out_model.parent / f"{out_model.name}.train.json", stats)
    return stats
