"""The toy models: small Qwen3-architecture causal LMs over the character tokenizer, built
(``build_model``) or loaded (``load_model``) with their products routed as the CPU pins say
(``mintrl.blas_products``): every stage gets its models here."""

from __future__ import annotations

import torch
from transformers import PreTrainedTokenizerBase, Qwen3Config, Qwen3ForCausalLM

from mintrl.blas_products import route_products
from mintrl.config import ModelArch


def qwen3_config(arch: ModelArch, tokenizer: PreTrainedTokenizerBase) -> Qwen3Config:
    """A Qwen3 config whose vocabulary is exactly the tokenizer's (no dead ids)."""
    return Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_kv_heads,
        head_dim=arch.hidden_size // arch.num_heads,
        max_position_embeddings=arch.max_positions,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )


def build_model(arch: ModelArch, tokenizer: PreTrainedTokenizerBase, seed: int) -> Qwen3ForCausalLM:
    """A freshly initialised model; the seed fixes the initial weights."""
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(qwen3_config(arch, tokenizer))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return route_products(model)


def load_model(checkpoint, dtype: str = "float32"):
    """A Hugging Face causal LM from ``checkpoint`` (a folder), its products routed."""
    from transformers import AutoModelForCausalLM

    return route_products(AutoModelForCausalLM.from_pretrained(checkpoint, dtype=dtype))


def count_parameters(checkpoint) -> int:
    """Parameters of a Hugging Face checkpoint, tied embeddings counted once, without loading
    its weights (the model is built on the meta device): for an engine that does not expose
    its module (vLLM)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(checkpoint))
    return sum(p.numel() for p in model.parameters())
