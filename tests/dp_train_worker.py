"""One optimisation iteration on fixed rollouts, run by ``torch.distributed.run`` with one or
more CPU ranks (gloo): tests/test_distributed.py compares what the ranks learn.

    python -m torch.distributed.run --nproc_per_node 2 tests/dp_train_worker.py OUT OBJECTIVE
"""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from mintrl.config import ModelArch, RunSpec
from mintrl.models import build_model
from mintrl.schemas import INTERVENTION, POLICY
from mintrl.tokenizer import build_char_tokenizer
from mintrl.training.distributed import is_main, world
from mintrl.training.trainer import deepspeed_engine, save_optimizer_state, train_iteration

ARCH = ModelArch(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2,
                 num_kv_heads=1, max_positions=128)


def rollouts() -> pd.DataFrame:
    """8 prompts x (2 control + 2 semi) rollouts of varied lengths, fixed by the seed."""
    rng = np.random.default_rng(0)
    rows = []
    for p in range(8):
        prompt = rng.integers(3, 90, size=int(rng.integers(3, 8))).tolist()
        for s, kind in enumerate(["control", "control", "semi", "semi"]):
            n = int(rng.integers(4, 14))
            prov = ([POLICY] * n if kind == "control"
                    else [POLICY] * (n // 2) + [INTERVENTION] * (n - n // 2))
            rows.append({"problem_id": f"p{p}", "sample": s, "kind": kind,
                         "prompt_ids": prompt, "response_ids": rng.integers(3, 90, n).tolist(),
                         "provenance": prov, "logprobs": (-rng.random(n)).tolist(),
                         "reward": float(rng.integers(0, 2))})
    return pd.DataFrame(rows)


def main() -> None:
    out, objective = Path(sys.argv[1]), sys.argv[2]
    torch.manual_seed(0)
    tok = build_char_tokenizer()
    spec = RunSpec(method="mintrl" if objective == "regression" else "grpo", anchor="proxy",
                   beta2=0.05, lr=1e-3, minibatch_size=16, micro_batch_size=4)
    engine = deepspeed_engine(build_model(ARCH, tok, seed=0), spec)
    stats = {}
    for it in (1, 2):  # two iterations: the optimizer state carries
        stats = train_iteration(engine, rollouts(), spec, objective, tok.pad_token_id, seed=it,
                                iteration=it)
    save_optimizer_state(engine, out / "optim", 2)
    if is_main():
        torch.save({k: v.detach().clone() for k, v in engine.module.state_dict().items()},
                   out / "params.pt")
        (out / "stats.json").write_text(json.dumps(stats | {"world": world()}))


if __name__ == "__main__":
    main()
