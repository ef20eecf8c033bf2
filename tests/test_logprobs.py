import torch

from mintrl.engine import Sampling
from mintrl.engine.transformers_engine import TransformersEngine
from mintrl.training.logprobs import response_logprobs


def test_recomputed_logprobs_match_the_engine_and_ignore_batch_padding(tiny_model, tokenizer):
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"]
               for t in ["47 +8 *3\n", "5\n", "f(x): add 3, mul x\n"]]
    engine = TransformersEngine(tiny_model, tokenizer.eos_token_id, tokenizer.pad_token_id)
    gen = engine.generate(prompts, Sampling(max_new_tokens=20, seed=3))
    batched = response_logprobs(tiny_model, prompts, gen.token_ids, tokenizer.pad_token_id)
    for p, toks, lps, rec in zip(prompts, gen.token_ids, gen.logprobs, batched, strict=True):
        torch.testing.assert_close(torch.tensor(rec), torch.tensor(lps), atol=1e-4, rtol=0)
        alone = response_logprobs(tiny_model, [p], [toks], tokenizer.pad_token_id)[0]
        torch.testing.assert_close(torch.tensor(rec), torch.tensor(alone), atol=1e-5, rtol=0)


def test_the_chunked_lm_head_gives_the_full_logits_numbers_and_gradients(tokenizer):
    """``lm_logprobs`` (LM head at response positions only, chunk by chunk, recomputed in the
    backward pass) equals the log-softmax of the full (B, T, V) logits: log-probs, entropies
    and every parameter's gradient, with chunks that split rows."""
    from mintrl.config import ModelArch
    from mintrl.models import build_model
    from mintrl.training.logprobs import lm_logprobs, pack_right_padded

    model = build_model(ModelArch(hidden_size=32, intermediate_size=64, num_layers=2,
                                  num_heads=2, num_kv_heads=1, max_positions=64),
                        tokenizer, seed=1).train()
    ids, attn, resp = pack_right_padded([[5, 6, 7, 8], [9, 10], [11]],
                                        [[11, 12, 13], [14, 15, 16, 17, 18, 19], [20, 21]], 0)
    logp = torch.log_softmax(model(input_ids=ids, attention_mask=attn).logits[:, :-1].float(),
                             -1)
    want_lp = torch.nn.functional.pad(logp.gather(-1, ids[:, 1:, None]).squeeze(-1),
                                      (1, 0)) * resp
    want_ent = torch.nn.functional.pad(-(logp.exp() * logp).sum(-1), (1, 0)) * resp
    (want_lp.sum() + want_ent.sum()).backward()
    want_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    lp, ent = lm_logprobs(model, ids, attn, resp, with_entropy=True, chunk=4)
    (lp.sum() + ent.sum()).backward()
    torch.testing.assert_close(lp, want_lp, atol=1e-5, rtol=0)
    torch.testing.assert_close(ent, want_ent, atol=1e-5, rtol=0)
    for got, want in zip((p.grad for p in model.parameters()), want_grads, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    assert lm_logprobs(model, ids, attn, torch.zeros_like(resp))[0].abs().sum() == 0
