import torch

from mintrl.engine import Sampling
from mintrl.engine.transformers_engine import TransformersEngine
from mintrl.logprobs import response_logprobs


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
