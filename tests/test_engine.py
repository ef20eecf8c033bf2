import pytest
import torch

from mintrl.engine import Sampling
from mintrl.engine.decoding import filter_logits, inverse_cdf_draw
from mintrl.engine.transformers_engine import TransformersEngine


def _engine(tiny_model, tokenizer, batch_size=64):
    return TransformersEngine(tiny_model, tokenizer.eos_token_id, tokenizer.pad_token_id,
                              batch_size)


def _recomputed_logprobs(model, prompt, response):
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(input_ids=ids).logits.float()
    logp = torch.log_softmax(logits[0, len(prompt) - 1 : -1], dim=-1)
    return logp.gather(-1, torch.tensor(response)[:, None]).squeeze(1)


def test_logprobs_equal_a_recomputed_forward_pass(tiny_model, tokenizer):
    # Prompts of different lengths (left padding) and a temperature != 1: the recorded
    # log-probs are still the raw model's, at temperature 1.
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"]
               for t in ["47 +8 *3\n", "05 -1\n", "f(x): add 3, mul x, mod 7\n"]]
    gen = _engine(tiny_model, tokenizer).generate(
        prompts, Sampling(max_new_tokens=24, temperature=0.7, top_k=20, seed=1))
    for p, toks, lps in zip(prompts, gen.token_ids, gen.logprobs, strict=True):
        assert len(toks) == len(lps) > 0
        expected = _recomputed_logprobs(tiny_model, p, toks)
        torch.testing.assert_close(torch.tensor(lps), expected, atol=1e-4, rtol=0)


def test_stops_at_eos_and_reports_finish_reasons(tiny_model, tokenizer):
    eos = tokenizer.eos_token_id
    bias = torch.zeros(len(tokenizer))
    bias[eos] = 50.0  # make EOS overwhelmingly likely after any input
    model = _BiasedModel(tiny_model, bias)
    engine = TransformersEngine(model, eos, tokenizer.pad_token_id)
    gen = engine.generate([[5, 6, 7], [8]], Sampling(max_new_tokens=5))
    assert gen.token_ids == [[eos], [eos]]
    assert gen.finish_reasons == ["stop", "stop"]
    gen = _engine(tiny_model, tokenizer).generate([[5, 6, 7]], Sampling(max_new_tokens=3))
    assert len(gen.token_ids[0]) <= 3
    if eos not in gen.token_ids[0]:
        assert gen.finish_reasons == ["length"]


class _BiasedModel(torch.nn.Module):
    """Wraps a causal LM and adds a fixed bias to its logits."""

    def __init__(self, model, bias):
        super().__init__()
        self.model, self.bias, self.config = model, bias, model.config

    def forward(self, cache=None, **kw):
        out = self.model(cache=cache, **kw)
        out.logits = out.logits + self.bias
        return out


def test_same_seed_gives_same_samples(tiny_model, tokenizer):
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in ["12 +3\n"] * 4]
    s = Sampling(max_new_tokens=16, seed=7)
    a = _engine(tiny_model, tokenizer).generate(prompts, s)
    b = _engine(tiny_model, tokenizer).generate(prompts, s)
    assert a.token_ids == b.token_ids
    assert len({tuple(t) for t in a.token_ids}) > 1  # samples differ from each other


def test_top_k_and_top_p_filters():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    k2 = filter_logits(logits, Sampling(max_new_tokens=1, top_k=2))
    assert torch.isfinite(k2).tolist() == [[True, True, False, False]]
    p = filter_logits(logits, Sampling(max_new_tokens=1, top_p=0.7))
    assert torch.isfinite(p).tolist() == [[True, True, False, False]]
    t = filter_logits(logits, Sampling(max_new_tokens=1, temperature=2.0))
    torch.testing.assert_close(t, logits / 2)


def test_the_accelerator_draw_follows_the_filtered_distribution():
    """The draw GPUs use (no host copy of the probabilities): its frequencies are the
    probabilities, a token that top-k/top-p removed is never drawn, and a seed fixes it."""
    logits = torch.randn(1, 50, generator=torch.Generator().manual_seed(0)) * 2
    probs = torch.softmax(filter_logits(logits, Sampling(max_new_tokens=1, top_k=10)), -1)
    rows = probs.expand(40_000, -1)
    got = inverse_cdf_draw(rows, torch.Generator().manual_seed(1))
    assert got.shape == (40_000,) and got.dtype == torch.long
    freq = torch.bincount(got, minlength=50).double() / len(got)
    assert (freq[probs[0] == 0] == 0).all()
    assert torch.allclose(freq, probs[0].double(), atol=0.01)
    again = inverse_cdf_draw(rows, torch.Generator().manual_seed(1))
    assert torch.equal(got, again)
    broken = torch.stack([probs[0], torch.full_like(probs[0], float("nan")),
                          torch.zeros_like(probs[0])])
    with pytest.raises(ValueError, match=r"rows \[1, 2\] have no probability mass"):
        inverse_cdf_draw(broken, torch.Generator().manual_seed(1))


def test_the_growing_kv_cache_gives_transformers_own_numbers(tiny_model, tokenizer):
    """Prefill, decode past the buffer's room (it must move), drop a row, crop: the logits
    equal those computed with transformers' DynamicCache."""
    from transformers import DynamicCache

    from mintrl.engine.kv_cache import growing_cache

    torch.manual_seed(0)
    ids = torch.randint(3, len(tokenizer), (3, 7))
    outs = []
    for cache in (DynamicCache(config=tiny_model.config),
                  growing_cache(tiny_model.config, room=2)):
        with torch.inference_mode():
            got = [tiny_model(input_ids=ids, past_key_values=cache).logits]
            for step in range(5):  # 5 > room: the buffer doubles
                got.append(tiny_model(input_ids=ids[:, step : step + 1],
                                      position_ids=torch.full((len(ids), 1), 7 + step),
                                      past_key_values=cache).logits)
            cache.batch_select_indices(torch.tensor([0, 2]))
            cache.crop(-2)
            got.append(tiny_model(input_ids=ids[[0, 2], :1], position_ids=torch.full((2, 1), 10),
                                  past_key_values=cache).logits)
        assert cache.get_seq_length() == 11
        outs.append(got)
    for a, b in zip(*outs, strict=True):
        assert torch.equal(a, b)


def _static(model, tokenizer):
    """On a CPU the static loop runs eagerly (compiling it is the CUDA path)."""
    return TransformersEngine(model, tokenizer.eos_token_id, tokenizer.pad_token_id,
                              cache="static")


def test_the_static_cache_records_the_models_own_logprobs_and_stops_at_eos(tiny_model,
                                                                         tokenizer):
    """``generation_cache: static``: prompts of different widths (padded to a shared bucket),
    a finished row that stays in the batch fed padding: every recorded log-prob is still the
    raw model's, and a row ends at its EOS."""
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"]
               for t in ["47 +8 *3\n", "05 -1\n", "f(x): add 3, mul x, mod 7\n"]]
    gen = _static(tiny_model, tokenizer).generate(
        prompts, Sampling(max_new_tokens=24, temperature=0.7, top_k=20, seed=1))
    for p, toks, lps, why in zip(prompts, gen.token_ids, gen.logprobs, gen.finish_reasons,
                                 strict=True):
        assert len(toks) == len(lps) > 0
        torch.testing.assert_close(torch.tensor(lps), _recomputed_logprobs(tiny_model, p, toks),
                                   atol=1e-4, rtol=0)
        assert (why == "stop") == (toks[-1] == tokenizer.eos_token_id)
        assert tokenizer.eos_token_id not in toks[:-1]
    eos = tokenizer.eos_token_id
    bias = torch.zeros(len(tokenizer))
    bias[eos] = 50.0
    stopped = _static(_BiasedModel(tiny_model, bias), tokenizer).generate(
        [[5, 6, 7], [8]], Sampling(max_new_tokens=5))
    assert stopped.token_ids == [[eos], [eos]] and stopped.finish_reasons == ["stop"] * 2


def test_the_static_and_dynamic_caches_sample_the_same_tokens(tiny_model, tokenizer):
    """Without an EOS (none can be sampled) both loops draw the same random stream: the same
    tokens, and two batches in a row reuse the static cache without leaking the first."""
    bias = torch.zeros(len(tokenizer))
    bias[tokenizer.eos_token_id] = float("-inf")
    model = _BiasedModel(tiny_model, bias)
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"]
               for t in ["12 +3\n", "9 *9 -4\n"] * 3]
    s = Sampling(max_new_tokens=20, seed=3)
    dynamic = TransformersEngine(model, tokenizer.eos_token_id, tokenizer.pad_token_id,
                                 batch_size=3).generate(prompts, s)
    engine = _static(model, tokenizer)
    engine.batch_size = 3
    static = engine.generate(prompts, s)
    assert static.token_ids == dynamic.token_ids
    assert static.finish_reasons == ["length"] * 6
    for a, b in zip(static.logprobs, dynamic.logprobs, strict=True):
        assert a == pytest.approx(b, abs=1e-5)


def test_a_vllm_engine_on_a_gpu_needs_the_configs_memory_share():
    """No second default beside the config's ``vllm_gpu_memory``: without it, an error
    naming the key (before vLLM is imported or any memory is taken)."""
    from mintrl.engine.vllm_engine import VLLMEngine

    with pytest.raises(ValueError, match="vllm_gpu_memory"):
        VLLMEngine("results/models/arith/base", device="cuda")
