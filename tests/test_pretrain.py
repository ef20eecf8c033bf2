import numpy as np
import torch

from mintrl.config import load_config
from mintrl.pretrain import encode_examples, pretrain, sample_examples
from mintrl.tasks import get_task

MICRO = "tests/micro.yaml"


def test_labels_cover_response_and_eos_only(tokenizer):
    input_ids, labels = encode_examples(tokenizer, ["12 +3\n", "7\n"], ["a", "bc"])
    assert input_ids.shape == labels.shape == (2, 8)
    assert labels[0].tolist()[:6] == [-100] * 6  # prompt is context, not target
    assert labels[0, 6:8].tolist() == [tokenizer.convert_tokens_to_ids("a"), tokenizer.eos_token_id]
    assert labels[1, 5:].tolist() == [-100] * 3  # padding


def test_held_out_problems_are_never_trained_on():
    task, spec = get_task("arith"), load_config(MICRO).tasks["arith"].base
    rng = np.random.default_rng(0)
    first, _ = sample_examples(task, spec, np.random.default_rng(0), 50, set())
    held_out = set(first[:25])
    prompts, _ = sample_examples(task, spec, rng, 200, held_out)
    assert not held_out & set(prompts)


def test_pretraining_lowers_the_loss_and_is_deterministic():
    spec = load_config(MICRO).tasks["arith"].base
    task = get_task("arith")
    model, _, history = pretrain(task, spec, seed=0, exclude=set(), progress=False)
    losses = [loss for _, loss in history]
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])
    again, _, _ = pretrain(task, spec, seed=0, exclude=set(), progress=False)
    for a, b in zip(model.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)


def test_length_buckets_give_the_same_loss_and_gradient_as_one_padded_batch(tiny_model,
                                                                            tokenizer):
    from mintrl.pretrain import train_step_loss

    task, spec = get_task("arith"), load_config(MICRO).tasks["arith"].teacher
    prompts, responses = sample_examples(task, spec, np.random.default_rng(1), 12, set())
    results = []
    for buckets in (1, 5):
        tiny_model.zero_grad(set_to_none=True)
        loss = train_step_loss(tiny_model, tokenizer, prompts, responses, buckets)
        results.append((loss, [p.grad.clone() for p in tiny_model.parameters()]))
    tiny_model.zero_grad(set_to_none=True)
    (loss1, g1), (loss5, g5) = results
    assert abs(loss1 - loss5) < 1e-5
    for a, b in zip(g1, g5, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
