from mintrl.steps import split_steps, step_texts


def test_blank_lines_separate_steps_and_spans_rebuild_cuts():
    text = "a=1\n\nb=2\n\n\nc=3"
    steps = split_steps(text)
    assert step_texts(text) == ["a=1", "b=2", "c=3"]
    # A cut at the start of step k keeps the separator that ended step k-1.
    assert text[: steps[1].start] == "a=1\n\n"
    assert text[: steps[2].start] == "a=1\n\nb=2\n\n\n"


def test_code_fences_are_step_boundaries():
    text = "Plan:\n```python\ndef f():\n  return 1\n```\nDone."
    assert step_texts(text) == ["Plan:", "```python\ndef f():\n  return 1\n```", "Done."]


def test_unfinished_text_keeps_partial_last_step():
    assert step_texts("a=1\n\nb=") == ["a=1", "b="]
    assert step_texts("") == []
    assert step_texts("a=1\n\n") == ["a=1"]
