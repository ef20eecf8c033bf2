"""The vLLM engine: the ``Engine`` interface on vLLM, for GPUs (and vLLM's CPU build in tests).

    engine = VLLMEngine("results/models/math/base", device="cuda", tensor_parallel_size=1,
                        gpu_memory_utilization=0.4)
    gen = engine.generate(prompt_ids, Sampling(max_new_tokens=512, seed=3))
    engine.load_weights(trainer_model.state_dict())    # in place, after an optimizer step

Prompts are token ids (``TokensPrompt``): a rollout continues exactly the ids the trainer
scores, never re-tokenized text. Log-probs are vLLM's ``raw_logprobs`` (the model's own
distribution before temperature and top-k/p), the behaviour log-probs RL needs, as the
transformers engine gives. Each prompt gets its own seed (``sampling.seed`` and its index), so
a batch is reproducible and identical prompts draw different samples.

The policy's weights change after every iteration: ``load_weights`` copies the trainer's
state dict into the running engine (vLLM's in-place reload maps the Hugging Face names, folds
a tied ``lm_head`` into the embedding and redoes its kernel layouts) and empties the prefix
cache, whose keys and values the old weights computed. The engine runs in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so the copy is by reference. MInTRL's chunk-by-chunk
review resubmits each row's prompt + response so far every round: with prefix caching (on)
only the new tokens are computed.
"""

from __future__ import annotations

import os
from pathlib import Path

from mintrl.engine.base import Generation, Sampling

_SEED_STRIDE = 1_000_003  # row seeds: seed * stride + row (distinct across a batch and rounds)


def _load(worker, weights):
    """Runs inside vLLM's worker: ``weights`` ((name, tensor) pairs, Hugging Face names) into
    its model in place. ``reload_weights`` re-applies what vLLM did to the weights after
    loading (kernel layouts); a bare ``model.load_weights`` fails on such layers."""
    worker.reload_weights(weights_iterator=iter(weights), is_checkpoint_format=True)
    return True


class VLLMEngine:
    def __init__(self, checkpoint: str | Path, device: str = "cuda", tensor_parallel_size: int = 1,
                 max_model_len: int | None = None, gpu_memory_utilization: float | None = None,
                 seed: int = 0):
        """``gpu_memory_utilization``: the share of the GPU this engine takes (the config's
        ``vllm_gpu_memory``; required on a GPU, unused by vLLM's CPU build)."""
        if device != "cpu" and gpu_memory_utilization is None:
            raise ValueError("VLLMEngine on a GPU needs gpu_memory_utilization: pass the "
                             "config's vllm_gpu_memory")
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # weights by reference
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB, vLLM's CPU build only
        from transformers import AutoTokenizer
        from vllm import LLM

        tok = AutoTokenizer.from_pretrained(checkpoint)
        self.eos, self.pad = tok.eos_token_id, tok.pad_token_id
        if device != "cpu":
            kwargs = {"gpu_memory_utilization": gpu_memory_utilization}
        else:
            # vLLM 0.32's CPU build rewinds a seeded request's generator when a chunked prefill
            # discards its sample, which CPU generators cannot do ("CPU Generator does not use
            # offset"): no chunked prefill on CPU (a batch's prompts are prefilled whole).
            kwargs = {"enable_chunked_prefill": False}
        self.llm = LLM(model=str(checkpoint), dtype="bfloat16" if device != "cpu" else "float32",
                       tensor_parallel_size=tensor_parallel_size, seed=seed,
                       enable_prefix_caching=True, logprobs_mode="raw_logprobs",
                       max_model_len=max_model_len, **kwargs)

    def generate(self, prompt_token_ids: list[list[int]], sampling: Sampling,
                 progress: str | None = None) -> Generation:
        return self._generate(prompt_token_ids, [sampling.max_new_tokens] * len(prompt_token_ids),
                              sampling, [sampling.seed * _SEED_STRIDE + i
                                         for i in range(len(prompt_token_ids))],
                              progress=progress is not None)

    def _generate(self, prompts: list[list[int]], budgets: list[int], sampling: Sampling,
                  seeds: list[int], progress: bool = False) -> Generation:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = [SamplingParams(n=1, temperature=sampling.temperature, top_p=sampling.top_p,
                                 top_k=sampling.top_k or 0, max_tokens=b, logprobs=0, seed=s,
                                 stop_token_ids=[self.eos], ignore_eos=False)
                  for b, s in zip(budgets, seeds, strict=True)]
        outs = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts],
                                 params, use_tqdm=progress)  # vLLM's own bar
        gen = Generation([], [], [])
        for out in outs:
            c = out.outputs[0]
            ids = list(c.token_ids)
            lps = [d[t].logprob for t, d in zip(ids, c.logprobs, strict=True)]
            gen.token_ids.append(ids)
            gen.logprobs.append(lps)
            gen.finish_reasons.append("stop" if ids and ids[-1] == self.eos else "length")
        return gen

    def load_weights(self, state_dict) -> None:
        """The trainer's weights into the engine, in place; the prefix cache is emptied."""
        weights = [(k, v.detach()) for k, v in state_dict.items()]
        self.llm.collective_rpc(_load, args=(weights,))
        self.llm.reset_prefix_cache()

    def chunked(self, prompts: list[list[int]], eos: int, pad: int, sampling: Sampling,
                generator=None) -> PrefixDecoder:
        return PrefixDecoder(self, prompts, sampling)


class PrefixDecoder:
    """``ChunkedDecoder``'s interface on vLLM: each round resubmits a row's prompt + response
    so far (cut and spliced as MInTRL did), and prefix caching skips what was computed."""

    def __init__(self, engine: VLLMEngine, prompts: list[list[int]], sampling: Sampling):
        self.engine, self.sampling = engine, sampling
        self.prompts = [list(p) for p in prompts]
        self.response: list[list[int]] = [[] for _ in prompts]
        self.rows = list(range(len(prompts)))
        self.round = 0

    def generate(self, budgets: dict[int, int]) -> dict[int, tuple[list[int], list[float]]]:
        rows = [r for r in self.rows if budgets.get(r, 0) > 0]
        self.round += 1
        out = {r: ([], []) for r in budgets}
        if not rows:
            return out
        seeds = [(self.sampling.seed * _SEED_STRIDE + r) * 4099 + self.round for r in rows]
        gen = self.engine._generate([self.prompts[r] + self.response[r] for r in rows],
                                    [budgets[r] for r in rows], self.sampling, seeds)
        for r, ids, lps in zip(rows, gen.token_ids, gen.logprobs, strict=True):
            self.response[r] += ids
            out[r] = (ids, lps)
        return out

    def cut(self, row: int, n_drop: int) -> None:
        if n_drop > 0:
            del self.response[row][-n_drop:]

    def append(self, tokens: dict[int, list[int]]) -> None:
        for r, toks in tokens.items():
            self.response[r] += list(toks)

    def sync(self, responses: dict[int, list[int]]) -> None:
        """Each listed row's response becomes ``responses[row]`` (the next round resubmits
        it; prefix caching finds the part already computed)."""
        for r, toks in responses.items():
            self.response[r] = list(toks)

    def drop(self, rows: list[int]) -> None:
        gone = set(rows)
        self.rows = [r for r in self.rows if r not in gone]

    @property
    def active(self) -> list[int]:
        return list(self.rows)
