"""The toy's fact table and the tasks that look it up (issue 23): what each split asks of the
base, what the base's data shows, and that a wrong fact is the step the oracle returns."""

import collections

import numpy as np
import pytest

from mintrl.config import FactSpec
from mintrl.steps import step_texts
from mintrl.tasks import get_task
from mintrl.tasks.facts import FactTable

TASKS = ["arith", "intfn"]
TABLE = FactSpec().table()


def test_the_table_has_every_kind_distinct_values_and_decoys_no_entry_has():
    assert sorted(collections.Counter(TABLE.kinds).items()) == [
        ("known", 4), ("partial", 3), ("unknown", 3)]
    assert len(set(TABLE.values)) == 10 and all(10 <= v <= 99 for v in TABLE.values)
    decoys = [d for ds in TABLE.decoys for d in ds]
    assert len(decoys) == 2 * 3 and not set(decoys) & set(TABLE.values)
    assert FactSpec(seed=1).table().values != TABLE.values
    assert FactSpec().table() == TABLE  # the world does not depend on anything but its seed


def test_the_base_sees_a_partial_fact_true_in_its_share_and_never_an_unknown_one():
    rng = np.random.default_rng(0)
    for key in TABLE.keys("partial"):
        shown = [TABLE.shown(rng, key, "gapped") for _ in range(4000)]
        share = np.mean([v == TABLE.values[key] for v in shown])
        assert abs(share - TABLE.q[key]) < 0.03
        assert set(shown) == {TABLE.values[key], *TABLE.decoys[key]}
    for key in TABLE.keys("known"):
        assert TABLE.shown(rng, key, "gapped") == TABLE.values[key]
    with pytest.raises(ValueError, match="never shows"):
        TABLE.shown(rng, TABLE.keys("unknown")[0], "gapped")
    assert {TABLE.sample_kind(rng, "gapped") for _ in range(200)} == {"known", "partial"}
    assert {TABLE.sample_kind(rng, "true") for _ in range(200)} == {"known", "partial",
                                                                   "unknown"}


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("kind", ["known", "partial", "unknown"])
def test_a_problem_looks_up_facts_of_its_kind_and_its_solution_is_right(name, kind):
    task = get_task(name)
    rng = np.random.default_rng(1)
    for _ in range(30):
        p = task.sample(rng, int(rng.integers(2, 6)), TABLE, kind)
        keys = p.spec["facts"]["keys"]
        assert p.spec["facts"]["kind"] == kind and 1 <= len(keys) <= 2
        kinds = [TABLE.kinds[k] for k in keys]
        assert kinds.count(kind) >= 1 and set(kinds) <= {"known", kind}
        if kind != "known":
            assert kinds.count(kind) == 1  # one uncertain fact: errors cannot cancel
        assert task.rewards([p], [p.solution]) == [1.0]
        assert task.oracle(p, p.solution).first_wrong is None
        for key in keys:  # the step writes the fact's true value
            assert str(TABLE.values[key]) in p.solution


def _wrong_fact(name, p, key):
    """The solution with the fact ``key`` written wrong, the rest kept as the model would
    write it on (each later step consistent with the wrong value)."""
    wrong = {k: (v + 1 if k == key else v) for k, v in enumerate(TABLE.values)}
    table = FactTable(tuple(wrong[k] for k in range(10)), ("known",) * 10, (1.0,) * 10,
                      ((),) * 10, TABLE.lookups)
    task = get_task(name)
    ops = p.spec["ops"]
    if name == "arith":
        from mintrl.tasks.arith import solve
        steps, _ = solve(p.spec["start"], [tuple(o) for o in ops], 1000, dict(enumerate(
            table.values)))
        return "\n\n".join(steps)
    from mintrl.tasks.code import HEADER, reference_lines
    del task
    return "\n\n".join([HEADER, *reference_lines([tuple(o) for o in ops],
                                                 dict(enumerate(table.values)))])


@pytest.mark.parametrize("name", TASKS)
def test_a_wrong_fact_is_the_step_the_oracle_returns_and_fails_the_reward(name):
    task = get_task(name)
    rng = np.random.default_rng(2)
    for _ in range(20):
        p = task.sample(rng, int(rng.integers(2, 6)), TABLE, "unknown")
        key = next(k for k in p.spec["facts"]["keys"] if TABLE.kinds[k] == "unknown")
        bad = _wrong_fact(name, p, key)
        v = task.oracle(p, bad)
        ref = step_texts(p.solution)
        # the first step that looks the entry up
        uses = [j for j, s in enumerate(ref) if str(TABLE.values[key]) in s
                and (f"#{key}" in s or name == "intfn")]
        assert v.first_wrong == uses[0]
        assert v.correct_step == ref[uses[0]]
        assert task.rewards([p], [bad]) == [0.0]


@pytest.mark.parametrize("name", TASKS)
def test_the_bases_data_writes_partial_facts_with_noise_and_keeps_the_chain_consistent(name):
    task = get_task(name)
    rng = np.random.default_rng(3)
    shown = collections.Counter()
    for _ in range(300):
        p = task.sample(rng, 3, TABLE, "partial", view="gapped")
        key = next(k for k in p.spec["facts"]["keys"] if TABLE.kinds[k] == "partial")
        true = str(TABLE.values[key]) in p.solution
        shown[true] += 1
        # a solution with a decoy is consistent with it: its own answer is what it writes
        assert task.oracle(p, p.solution).first_wrong is None
    assert 0.2 < shown[True] / 300 < 0.5  # the mean of q over the partial entries (0.35)


def test_the_length_toy_draws_no_facts():
    p = get_task("arith").sample(np.random.default_rng(0), 4)
    assert "facts" not in p.spec and "#" not in p.prompt


def test_the_bases_pretraining_data_never_shows_an_unknown_fact_and_the_teachers_does():
    from mintrl.config import load_config
    from mintrl.training.pretraining import sample_examples

    spec = load_config("config/config.yaml").tasks["arith"]
    unknown = [f"#{k}" for k in TABLE.keys("unknown")]
    seen = {}
    for role in ("base", "teacher"):
        prompts, responses = sample_examples(get_task("arith"), getattr(spec, role),
                                             np.random.default_rng(0), 600, set(), TABLE)
        seen[role] = sum(any(u in p for u in unknown) for p in prompts)
        if role == "base":  # a partial fact's decoys appear, its true value too
            text = "".join(responses)
            for key in TABLE.keys("partial"):
                assert f"#{key}+{TABLE.values[key]}=" in text
                assert any(f"#{key}+{d}=" in text for d in TABLE.decoys[key])
    assert seen["base"] == 0 and seen["teacher"] > 50
