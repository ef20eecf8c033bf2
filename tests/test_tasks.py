import numpy as np
import pytest

from mintrl.steps import step_texts
from mintrl.tasks import get_task
from mintrl.tasks.arith import apply_op
from mintrl.tasks.base import strict_and_step_accuracy

TASKS = ["arith", "intfn"]


def _problems(name, n=20, difficulty=None, seed=0):
    rng = np.random.default_rng(seed)
    task = get_task(name)
    return [task.sample(rng, difficulty or int(rng.integers(1, 9))) for _ in range(n)]


@pytest.mark.parametrize("name", TASKS)
def test_generator_is_deterministic_and_respects_difficulty(name):
    a, b = _problems(name, seed=3), _problems(name, seed=3)
    assert a == b
    assert _problems(name, seed=4) != a
    for k in (2, 5, 8):
        for p in _problems(name, n=5, difficulty=k):
            assert p.difficulty == k
            # one step per operation, plus the answer (math) or header and return (code)
            assert len(step_texts(p.solution)) == k + (1 if name == "arith" else 2)


@pytest.mark.parametrize("name", TASKS)
def test_reference_solution_is_correct_and_strict(name):
    task = get_task(name)
    problems = _problems(name, n=8)
    assert task.rewards(problems, [p.solution for p in problems]) == [1.0] * 8
    for p in problems:
        assert task.oracle(p, p.solution).first_wrong is None
        assert strict_and_step_accuracy(task, p, p.solution) == (True, 1.0)


def _corrupt(name, step: str, j: int, n_steps: int) -> str:
    if name == "arith":
        if step.startswith("answer: "):
            return f"answer: {(int(step[8:]) + 1) % 100:02d}"
        lhs, rhs = step.split("=")
        return f"{lhs}={(int(rhs) + 1) % 100:02d}"
    if j == 0:
        return step.replace("def f(x):", "def g(x):")
    if j == n_steps - 1:
        return "    return 123456789\n```"
    return step + " + 1"  # a different value on every input


@pytest.mark.parametrize("name", TASKS)
def test_oracle_finds_a_planted_error_at_every_step(name):
    task = get_task(name)
    for p in _problems(name, n=10):
        steps = step_texts(p.solution)
        for j in range(len(steps)):
            bad = steps[:j] + [_corrupt(name, steps[j], j, len(steps))] + steps[j + 1 :]
            verdict = task.oracle(p, "\n\n".join(bad))
            assert verdict.first_wrong == j, (p.solution, j)
            assert verdict.correct_step == steps[j]
            # later errors do not move the verdict: the earliest one wins
            worse = bad[:-1] + [_corrupt(name, bad[-1], len(bad) - 1, len(bad))]
            if j < len(steps) - 1:
                assert task.oracle(p, "\n\n".join(worse)).first_wrong == j


@pytest.mark.parametrize("name", TASKS)
def test_oracle_on_unfinished_text_accepts_a_correct_prefix(name):
    task = get_task(name)
    p = _problems(name, n=1, difficulty=4)[0]
    for cut in range(1, len(p.solution)):
        assert task.oracle(p, p.solution[:cut], finished=False).first_wrong is None
    # ...but the same prefix as a finished response is missing steps: not strict
    half = p.solution[: len(p.solution) // 2]
    strict, acc = strict_and_step_accuracy(task, p, half)
    assert not strict and 0 < acc < 1


def test_code_oracle_accepts_an_equivalent_line():
    task = get_task("intfn")
    p = next(q for q in _problems("intfn", n=50) if q.spec["ops"][0] == ["add", "3"])
    steps = step_texts(p.solution)
    steps[1] = steps[1].replace("x + 3", "3 + x")
    assert task.oracle(p, "\n\n".join(steps)).first_wrong is None


def test_arith_operations_are_bijections_mod_100():
    for op, d in [("+", 7), ("-", 4), ("*", 3), ("*", 7), ("*", 9)]:
        assert sorted(apply_op(v, op, d, 100) for v in range(100)) == list(range(100))


def test_arith_rewards_right_wrong_and_malformed():
    task = get_task("arith")
    p = _problems("arith", n=1, difficulty=3)[0]
    ans = int(p.spec["answer"])
    responses = [
        p.solution,
        f"whatever\n\nanswer: {ans}",  # exact-answer reward: only the answer line counts
        f"answer: {(ans + 1) % 100}",
        "",
        "answer: ",
        "answer: 12abc",
    ]
    assert task.rewards([p] * len(responses), responses) == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_code_rewards_run_the_program_in_the_sandbox():
    task = get_task("intfn")
    p = _problems("intfn", n=1, difficulty=3)[0]
    wrong = p.solution.replace("return", "return 1 +")
    crash = p.solution.replace("def f(x):", "def f(x):\n    raise ValueError")
    loop = "```python\ndef f(x):\n    while True:\n        pass\n```"
    floats = p.solution.replace("return ", "return 1.0 * ")  # right values, wrong type
    responses = [p.solution, wrong, crash, "no code at all", "```python\ndef f(x) return\n```",
                 loop, floats]
    assert task.rewards([p] * len(responses), responses) == [1.0] + [0.0] * 6
