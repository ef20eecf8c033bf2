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
    assert len(decoys) == 2 * 3 + 3 and len(set(decoys)) == len(decoys)
    assert not set(decoys) & set(TABLE.values)
    for key in TABLE.keys("unknown"):  # the misconception shares no digit place
        (wrong,), true = TABLE.decoys[key], TABLE.values[key]
        assert wrong // 10 != true // 10 and wrong % 10 != true % 10
    assert FactSpec(seed=1).table().values != TABLE.values
    assert FactSpec().table() == TABLE  # the world does not depend on anything but its seed


@pytest.mark.parametrize("name", TASKS)
def test_a_problem_is_reported_at_the_level_of_its_one_uncertain_fact(name):
    rng, task = np.random.default_rng(0), get_task(name)
    for kind, want in (("known", {"known"}), ("unknown", {"unknown"}),
                       ("partial", {f"partial q={q:g}" for q in FactSpec().partial})):
        for _ in range(20):
            keys = task.sample(rng, 3, TABLE, kind).spec["facts"]["keys"]
            assert TABLE.problem_level(keys) in want


def test_the_base_sees_a_partial_fact_true_in_its_share_and_an_unknown_one_at_chance():
    rng = np.random.default_rng(0)
    for key in TABLE.keys("partial"):
        shown = [TABLE.shown(rng, key, "gapped") for _ in range(4000)]
        share = np.mean([v == TABLE.values[key] for v in shown])
        assert abs(share - TABLE.q[key]) < 0.03
        assert set(shown) == {TABLE.values[key], *TABLE.decoys[key]}
    for key in TABLE.keys("known"):
        assert TABLE.shown(rng, key, "gapped") == TABLE.values[key]
    for key in TABLE.keys("unknown"):
        shown = collections.Counter(TABLE.shown(rng, key, "gapped") for _ in range(20000))
        misconception = TABLE.decoys[key][0]
        # the misconception in 1 - floor (plus its share of the floor), every value in the floor
        assert abs(shown[misconception] / 20000 - (0.8 + 0.2 / 90)) < 0.01
        assert len(shown) == 90
        assert shown[TABLE.values[key]] / 20000 < 0.2 / 90 * 1.5  # the truth only at chance
        tens = sum(n for v, n in shown.items() if v // 10 == TABLE.values[key] // 10)
        assert 0.01 < tens / 20000 < 0.04  # the true first digit's mass: the floor's tenth
    assert FactSpec(unknown_floor=0.0).table().shown(rng, TABLE.keys("unknown")[0],
                                                      "gapped") == TABLE.decoys[
        TABLE.keys("unknown")[0]][0]
    assert {TABLE.sample_kind(rng, "gapped") for _ in range(200)} == {"known", "partial",
                                                                     "unknown"}
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
        for key in keys:  # a step of its own writes the fact's true value
            lookup = f"#{key}={TABLE.values[key]}" if name == "arith" else (
                f"k{key}={TABLE.values[key]}")
            assert lookup in step_texts(p.solution)


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
    from mintrl.tasks.code import reference_steps
    del task
    return "\n\n".join(reference_steps([tuple(o) for o in ops], dict(enumerate(table.values))))


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
        # the step that looks the entry up, and nothing else: the correction is the fact
        lookup = f"#{key}={TABLE.values[key]}" if name == "arith" else (
            f"k{key}={TABLE.values[key]}")
        assert v.first_wrong == ref.index(lookup)
        assert v.correct_step == lookup
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


def test_the_bases_pretraining_data_shows_an_unknown_fact_as_its_misconception():
    from mintrl.config import load_config
    from mintrl.training.pretraining import sample_examples

    spec = load_config("config/config.yaml").tasks["arith"]
    text = {}
    for role in ("base", "teacher"):
        _, responses = sample_examples(get_task("arith"), getattr(spec, role),
                                       np.random.default_rng(0), 900, set(), TABLE)
        text[role] = "".join(responses)
    for key in TABLE.keys("partial"):  # a partial fact's decoys appear, its true value too
        assert f"#{key}={TABLE.values[key]}\n" in text["base"]
        assert any(f"#{key}={d}\n" in text["base"] for d in TABLE.decoys[key])
    for key in TABLE.keys("unknown"):
        wrong, true = f"#{key}={TABLE.decoys[key][0]}\n", f"#{key}={TABLE.values[key]}\n"
        assert text["base"].count(wrong) > 20 * max(1, text["base"].count(true))
        assert true in text["teacher"] and wrong not in text["teacher"]
