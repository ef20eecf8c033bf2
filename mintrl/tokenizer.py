"""Character-level tokenizer for the toy models, in Hugging Face format.

One token per printable ASCII character plus newline, and three special tokens. The toy
model's vocabulary size is set to exactly ``len(tokenizer)``, so every id decodes to text
or to a special token (no dead ids the policy could sample).
"""

from __future__ import annotations

import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
SPECIAL_TOKENS = [PAD, EOS, UNK]
# Printable ASCII (space .. ~) plus newline: enough for the toy tasks and prompt templates.
CHARS = ["\n"] + [c for c in string.printable if 32 <= ord(c) < 127]


def build_char_tokenizer() -> PreTrainedTokenizerFast:
    """Return the toy character tokenizer (pad id 0, eos id 1, unk id 2)."""
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + CHARS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # Every character is its own pre-token; [\s\S] also matches the newline.
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()  # join characters without inserting spaces
    # Generation pads on the left; training code builds its own right-padded batches.
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK, padding_side="left"
    )
