import pandas as pd

from mintrl.report.inspector import write_inspector
from mintrl.schemas import INTERVENTION, NO_ERROR, POLICY


def test_inspector_highlights_intervention_spans_and_shows_verdicts(tokenizer, tmp_path):
    ids = tokenizer("12+3=15\n\n15*3=45", add_special_tokens=False)["input_ids"]
    prov = [POLICY] * 9 + [INTERVENTION] * (len(ids) - 9)
    df = pd.DataFrame([{
        "run": "mintrl-proxy", "iteration": 2, "problem_id": "arith-2-012+3*3", "sample": 0,
        "kind": "semi", "prompt_ids": tokenizer("012 +3 *3\n")["input_ids"], "response_ids": ids,
        "provenance": prov, "reward": 1.0, "finish_reason": "stop", "reviews": 2,
        "verdicts": [1, NO_ERROR], "interventions": 1}])
    write_inspector(df, tokenizer, tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text()
    assert '<span class="int">15*3=45</span>' in page
    assert "step 1 wrong, ok" in page and "iteration 2" in page
