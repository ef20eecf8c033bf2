"""Where a problem's prompt becomes token ids: the one place prompts are rendered.

A problem whose ``chat`` flag is set (the paper setting's dataset tasks, ``DatasetTaskSpec``)
is shown to a model as one user turn of its tokenizer's chat template, with thinking disabled
(Qwen3's non-thinking mode); toy problems are plain text for the character tokenizer. The
response follows the rendered prompt directly, so ``prompt_ids + response_ids`` is the sequence
the model scores in every stage (rollout, judge, intervener, training, evaluation).
"""

from __future__ import annotations

from collections.abc import Sequence

from mintrl.tasks.base import Problem


def chat_text(tokenizer, content: str) -> str:
    """``content`` as one user turn, ready for the assistant's answer. ``enable_thinking``
    False: Qwen3 answers directly; templates that do not know the flag ignore it."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"tokenizer {getattr(tokenizer, 'name_or_path', '?')!r} has no chat "
                         "template; set the task's `chat: false`")
    return tokenizer.apply_chat_template([{"role": "user", "content": content}],
                                         add_generation_prompt=True, enable_thinking=False,
                                         tokenize=False)


def prompt_text(tokenizer, problem: Problem, content: str | None = None) -> str:
    """The text a model continues for ``problem`` (``content`` instead of its prompt, e.g. the
    prompt with the reference solution attached)."""
    text = problem.prompt if content is None else content
    return chat_text(tokenizer, text) if problem.chat else text


def encode_prompts(tokenizer, problems: Sequence[Problem],
                   contents: Sequence[str] | None = None) -> list[list[int]]:
    """Token ids of each problem's rendered prompt (no special tokens added beyond what the
    chat template writes)."""
    texts = [prompt_text(tokenizer, p, None if contents is None else contents[i])
             for i, p in enumerate(problems)]
    return tokenizer(texts, add_special_tokens=False)["input_ids"]
