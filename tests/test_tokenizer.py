from mintrl.config import ModelArch
from mintrl.models import qwen3_config


def test_round_trip_of_task_text(tokenizer):
    text = "Reference solution:\n```python\ndef f(x):\n\n    a = x % 7\n```\n====\n47 +8 *3\n"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)  # one token per character
    assert tokenizer.decode(ids) == text


def test_vocabulary_equals_model_vocabulary_and_every_id_decodes(tokenizer):
    cfg = qwen3_config(ModelArch(), tokenizer)
    assert cfg.vocab_size == len(tokenizer)
    for i in range(len(tokenizer)):
        assert tokenizer.convert_ids_to_tokens(i)  # no id maps to nothing


def test_save_and_reload(tokenizer, tmp_path):
    from transformers import AutoTokenizer

    tokenizer.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again.eos_token_id == tokenizer.eos_token_id == 1
    assert again("55*3=65")["input_ids"] == tokenizer("55*3=65")["input_ids"]
