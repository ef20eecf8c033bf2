"""Generation engines, chosen by an explicit name (never by what happens to be installed)."""

from __future__ import annotations

from mintrl import io
from mintrl.engine.base import Engine, Generation, Sampling

ENGINES = ("transformers", "vllm")


def load_engine(name: str, checkpoint: str, batch_size: int = 256, device: str = "cpu",
                tensor_parallel_size: int = 1, gpu_memory: float | None = None):
    """Load a Hugging Face checkpoint into the named engine; returns (engine, tokenizer).
    ``gpu_memory``: the share of a GPU a vLLM engine takes (config key ``vllm_gpu_memory``;
    required for vLLM on a GPU, no default of its own beside the config's)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; known engines: {list(ENGINES)}")
    checkpoint = io.checkpoint_path(checkpoint)
    from transformers import AutoTokenizer

    from mintrl.models import load_model

    if name == "vllm":
        from mintrl.engine.vllm_engine import VLLMEngine

        return (VLLMEngine(checkpoint, device, tensor_parallel_size,
                           gpu_memory_utilization=gpu_memory),
                AutoTokenizer.from_pretrained(checkpoint))

    from mintrl.engine.transformers_engine import TransformersEngine

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    # frozen models (teacher, judge, evaluation) in bf16 on GPUs: half the memory, the same
    # precision the trainer's bf16 policy samples in
    dtype = "bfloat16" if device.startswith("cuda") else "float32"
    model = load_model(checkpoint, dtype).to(device).eval()
    engine = TransformersEngine(model, tokenizer.eos_token_id, tokenizer.pad_token_id, batch_size)
    return engine, tokenizer


__all__ = ["ENGINES", "Engine", "Generation", "Sampling", "load_engine"]
