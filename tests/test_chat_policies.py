"""The prompted chat-LLM judge and intervener: templates, robust parsing, no-verdict counting."""

import pytest

from mintrl.engine.transformers_engine import TransformersEngine
from mintrl.intervention.chat_policies import ChatJudge, parse_verdict, verdict_from_answer


@pytest.mark.parametrize("answer,n,want", [
    ("VERDICT: 2", 3, (True, 2)),
    ("The second step is wrong.\n**Verdict:** 2", 3, (True, 2)),
    ("verdict = none", 3, (True, None)),
    ("VERDICT: 1\nOn reflection... VERDICT: none", 3, (True, None)),  # the last line counts
    ("VERDICT: 7", 3, (False, None)),  # a step it was not shown
    ("I think step two has an error", 3, (False, None)),
    ("", 3, (False, None)),
])
def test_parse_verdict(answer, n, want):
    assert parse_verdict(answer, n) == want


def test_step_numbers_count_from_the_first_reviewed_step():
    text = "a=1\n\nb=2\n\nc=3\n\nd=4"
    v = verdict_from_answer("VERDICT: 2", text, first=2)  # shown: c=3 (1), d=4 (2)
    assert v.first_wrong == 3 and text[v.cut:] == "d=4"
    assert not verdict_from_answer("nonsense", text, 2).parsed


def test_an_unreadable_answer_is_a_counted_no_verdict_not_a_crash(tiny_model, tokenizer):
    import copy

    from mintrl.tasks import get_task

    tok = copy.deepcopy(tokenizer)
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    engine = TransformersEngine(tiny_model, tok.eos_token_id, tok.pad_token_id)
    import numpy as np

    p = get_task("arith").sample(np.random.default_rng(0), 3)
    verdicts = ChatJudge(engine, tok, max_tokens=12).review(
        [p, p], [p.solution, "1+1=3\n\n"], [0, 0], [True, False])
    assert len(verdicts) == 2
    assert all(not v.parsed and v.first_wrong is None for v in verdicts)  # a random model
