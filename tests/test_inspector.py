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
    assert "step 2 wrong, ok" in page and "iteration 2" in page  # steps numbered from 1


def test_inspector_shows_distinct_prompts_the_corrected_first_and_only_the_methods_columns(
        tokenizer, tmp_path):
    ids = tokenizer("12+3=15", add_special_tokens=False)["input_ids"]
    rows = []
    for pid, corrections in [("a", 0), ("a", 0), ("a", 1), ("b", 0), ("c", 2)]:
        rows.append({"run": "r", "iteration": 1, "problem_id": pid, "sample": len(rows),
                     "kind": "semi", "prompt_ids": ids, "response_ids": ids,
                     "provenance": [POLICY] * len(ids), "reward": 0.0, "finish_reason": "stop",
                     "reviews": 1, "verdicts": [NO_ERROR], "interventions": corrections})
    rows.append(rows[0] | {"kind": "guided", "reviews": 0, "verdicts": [],
                           "interventions": 0})
    write_inspector(pd.DataFrame(rows), tokenizer, tmp_path / "page.html", per_kind=2)
    page = (tmp_path / "page.html").read_text()
    semi = page.split("<h3>guided")[0]
    assert semi.count("<b>c</b>") == 1 and semi.count("<b>a</b>") == 1  # 2 prompts: c, then a
    assert semi.index("<b>c</b>") < semi.index("<b>a</b>") and "#2" in semi  # a's corrected one
    guided = page.split("<h3>guided")[1]
    assert "reviews" not in guided and "corrections" not in guided
