"""One MInTRL iteration end to end on a Qwen3-1.7B-shaped model with random weights.

    bash benchmarks/gpu_smoke.sh                      # on one GPU: under 6 minutes, no downloads
    python benchmarks/gpu_smoke.py --shape tiny --device cpu --out /tmp/smoke   # the same on CPU

What it runs is the project's own stage (``python -m mintrl.segment``): semi-on-policy rollouts
with a noisy judge that flags every review (``judge_false_alarm_rate: 1``, so every
semi-on-policy rollout is intervened on; the control half is not), the teacher's
corrections, the sandbox-free arith reward, then DeepSpeed training (ZeRO-2, bf16, gradient
checkpointing on GPU). The model has Qwen3-1.7B's shape (28 layers, width 2048, 151,936-token
vocabulary, tied embeddings) and random weights; its tokenizer maps the toy's characters like
the real tokenizer's byte tokens and pads the vocabulary with filler tokens, so the LM head
costs what the real one does.

Prints and writes ``<out>/gpu_smoke.json``: rollout tokens/s (generation incl. judge and
interventions), training tokens/s and MFU = 6·N·tokens/s / 989 TFLOP/s (H100/H200 bf16 dense;
N with the tied embedding counted once), peak GPU memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

SHAPES = {
    # Qwen3-1.7B's config.json: 28 x 2048, MLP 6144, 16 heads of 128, 8 KV heads
    "qwen3-1.7b": {"hidden_size": 2048, "intermediate_size": 6144, "num_layers": 28,
                   "num_heads": 16, "num_kv_heads": 8, "head_dim": 128, "vocab": 151936},
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_layers": 2, "num_heads": 4,
             "num_kv_heads": 2, "head_dim": 16, "vocab": 4096},
}
PEAK_FLOPS = 989e12  # H100/H200 SXM, dense bf16


def padded_tokenizer(vocab: int):
    """The toy's character tokenizer with filler tokens up to ``vocab`` entries."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from mintrl.tokenizer import CHARS, EOS, PAD, SPECIAL_TOKENS, UNK

    names = SPECIAL_TOKENS + CHARS
    names += [f"<f{i}>" for i in range(vocab - len(names))]
    core = Tokenizer(models.WordLevel(vocab={t: i for i, t in enumerate(names)}, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, eos_token=EOS,
                                   unk_token=UNK, padding_side="left")


def build(shape: dict, out: Path) -> int:
    """Save a random model of ``shape`` with its tokenizer; returns N (parameters, tied
    embedding once)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tok = padded_tokenizer(shape["vocab"])
    cfg = Qwen3Config(vocab_size=len(tok), hidden_size=shape["hidden_size"],
                      intermediate_size=shape["intermediate_size"],
                      num_hidden_layers=shape["num_layers"],
                      num_attention_heads=shape["num_heads"],
                      num_key_value_heads=shape["num_kv_heads"], head_dim=shape["head_dim"],
                      max_position_embeddings=4096, tie_word_embeddings=True,
                      rope_theta=1e6, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.eos_token_id, bos_token_id=None)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return sum(p.numel() for p in model.parameters())  # parameters() yields a tied one once


def config(device: str, gpu: bool) -> dict:
    return {
        "seed": 0, "device": device, "threads": 8 if gpu else 1,
        "tasks": {"arith": {
            "easy": {"lo": 2, "hi": 3}, "hard": {"lo": 6, "hi": 8}, "train": {"lo": 4, "hi": 8},
            "sizes": {"train": 64, "validation": 8, "easy": 8, "hard": 8},
            "max_new_tokens": 512 if gpu else 48,
            "base": {"difficulties": {"lo": 1, "hi": 4}},
            "teacher": {"difficulties": {"lo": 1, "hi": 8}}}},
        "rl": {"iterations": 1, "iterations_per_job": 1, "eval_every": 1,
               "prompts_per_iteration": 32 if gpu else 4, "n_semi": 4, "n_control": 4,
               "group_size": 8, "chunk_tokens": 128 if gpu else 8, "max_reviews": 3,
               "correction_tokens": 64 if gpu else 8, "intervention_iterations": 1,
               "judge": "oracle", "judge_false_alarm_rate": 1.0, "anchor": "const",
               "const_c": -2.0, "lr": 1.0e-6,
               "minibatch_size": 128 if gpu else 16, "micro_batch_size": 16 if gpu else 8,
               "deepspeed": {"zero_stage": 2 if gpu else 0, "bf16": gpu,
                             "gradient_checkpointing": gpu}},
        "runs": [{"method": "mintrl", "name": "smoke"}],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="qwen3-1.7b")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/gpu_smoke"))
    args = ap.parse_args()
    gpu = args.device.startswith("cuda")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    n_params = build(SHAPES[args.shape], out / "model")
    cfg_path = out / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(config(args.device, gpu)))
    py = sys.executable
    subprocess.run([py, "-m", "mintrl.prepare", "--config", str(cfg_path), "--task", "arith",
                    "--out", str(out / "data")], check=True)
    t_seg = time.perf_counter()
    subprocess.run([py, "-m", "mintrl.segment", "--config", str(cfg_path), "--run", "smoke",
                    "--task", "arith", "--start", "1", "--end", "1", "--init",
                    str(out / "model"), "--teacher", str(out / "model"), "--prompts",
                    str(out / "data" / "train.parquet"), "--root", str(out / "run")],
                   check=True)
    seg_s = time.perf_counter() - t_seg
    m = json.loads((out / "run" / "iter_1" / "metrics.json").read_text())
    roll = pq.read_table(out / "run" / "iter_1" / "rollouts.parquet").to_pandas()
    resp = int(roll["response_ids"].map(len).sum())
    seq = resp + int(roll["prompt_ids"].map(len).sum())
    gen_s = m["time/generate"] + m.get("time/judge", 0.0) + m.get("time/intervene", 0.0)
    train_tok_s = seq / m["time/update"]
    peak = m.get("memory/gpu_peak_gb")
    seg = json.loads((out / "run" / "iter_1" / "segment.json").read_text()) if (
        out / "run" / "iter_1" / "segment.json").exists() else {}
    result = {
        "shape": args.shape, "device": args.device, "parameters": n_params,
        "rollouts": len(roll), "intervention_rate": float((roll["interventions"] > 0).mean()),
        "response_tokens": resp, "sequence_tokens": seq,
        "rollout_s": gen_s, "rollout_tokens_per_s": resp / gen_s,
        "update_s": m["time/update"], "train_tokens_per_s": train_tok_s,
        "mfu": 6 * n_params * train_tok_s / PEAK_FLOPS if gpu else None,
        "segment_wall_s": seg_s, "total_s": time.perf_counter() - t0,
        "peak_gpu_memory_gb": peak, "startup": seg.get("startup"),
    }
    (out / "gpu_smoke.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
