"""Evaluation: sample k responses per problem and score them (Pass@1, pass@k, strict
correctness, step accuracy). ``python -m mintrl.evaluate`` is its CLI.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from mintrl.engine import Sampling
from mintrl.prompting import encode_prompts
from mintrl.report.passk import pass_at_k
from mintrl.tasks import Problem, get_task, grade
from mintrl.tasks.base import strict_and_step_accuracy


def sample_problems(engine, tokenizer, problems: list[Problem], samples: int,
                    sampling: Sampling, desc: str = "generate") -> tuple[pd.DataFrame, float]:
    """Generate ``samples`` responses per problem and grade them; returns (rows, tokens/s)."""
    prompt_ids = [ids for ids in encode_prompts(tokenizer, problems) for _ in range(samples)]
    t0 = time.perf_counter()
    gen = engine.generate(prompt_ids, sampling, progress=desc)
    seconds = time.perf_counter() - t0
    texts = tokenizer.batch_decode(gen.token_ids, skip_special_tokens=True)
    expanded = [p for p in problems for _ in range(samples)]
    rows = []
    rewards = np.asarray(grade(expanded, texts), dtype=np.float32)
    for i, p in enumerate(expanded):
        if p.solution:
            strict, step_acc = strict_and_step_accuracy(get_task(p.task), p, texts[i])
        else:  # no reference steps to grade against (the datasets of the paper setting)
            strict, step_acc = None, float("nan")
        rows.append({
            "problem_id": p.id, "difficulty": p.difficulty, "sample": i % samples,
            "response": texts[i], "response_len": len(gen.token_ids[i]),
            "finish_reason": gen.finish_reasons[i], "reward": rewards[i],
            "strict": strict, "step_accuracy": step_acc,
        })
    n_tokens = sum(map(len, gen.token_ids))
    return pd.DataFrame(rows), n_tokens / max(seconds, 1e-9)


def summarize_split(df: pd.DataFrame, ks: list[int]) -> dict[str, float]:
    """Pass@1 = mean reward; pass@k averaged over problems; lucky = correct answer with a
    wrong chain of steps, as a share of the samples whose chain is wrong."""
    per_problem = df.groupby("problem_id")["reward"].agg(["count", "sum"])
    graded = df[df["step_accuracy"].notna()]  # rows with a reference solution
    out = {
        "problems": int(len(per_problem)),
        "pass@1": float(df["reward"].mean()),
        "strict": float(graded["strict"].mean()) if len(graded) else None,
        "step_accuracy": float(graded["step_accuracy"].mean()) if len(graded) else None,
        "mean_response_len": float(df["response_len"].mean()),
        "truncated": float((df["finish_reason"] == "length").mean()),
    }
    for k in ks:
        if k <= per_problem["count"].min():
            out[f"pass@{k}"] = float(np.mean([
                pass_at_k(int(n), int(c), k) for n, c in per_problem.itertuples(index=False)
            ]))
    wrong_chain = ~graded["strict"]
    out["lucky"] = float(graded.loc[wrong_chain, "reward"].mean()) if wrong_chain.any() else None
    return out
