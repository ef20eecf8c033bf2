import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tokenizer():
    from mintrl.tokenizer import build_char_tokenizer

    return build_char_tokenizer()


@pytest.fixture(scope="session")
def tiny_model(tokenizer):
    """A randomly initialised micro Qwen3 model (weights fixed by the seed)."""
    from mintrl.config import ModelArch
    from mintrl.models import build_model

    arch = ModelArch(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2,
                     num_kv_heads=1, max_positions=256)
    return build_model(arch, tokenizer, seed=0).eval()
