"""The method table (mintrl/methods.py): one entry per method, and nothing else asks for a
method by name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mintrl.algo.objectives import OBJECTIVES
from mintrl.config import RunSpec
from mintrl.methods import METHODS, POST_PHASE, get_method
from mintrl.rollouts import ROLLOUT_MODES

ROOT = Path(__file__).resolve().parents[1]


def test_the_config_accepts_exactly_the_methods_of_the_table():
    for name in METHODS:
        assert RunSpec(method=name, n_guided=1).method == name
    with pytest.raises(ValueError, match="unknown method 'ppo'; methods: .*'grpo'"):
        RunSpec(method="ppo")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_names_registered_rollout_modes_and_objectives(name):
    method = METHODS[name]
    assert method.objective == POST_PHASE or method.objective in OBJECTIVES
    if method.phase is not None:
        assert method.phase.rollout in ROLLOUT_MODES
        assert method.phase.objective in OBJECTIVES


def test_an_unknown_method_lists_the_known_ones():
    with pytest.raises(KeyError, match="unknown method 'ppo'; methods: .*'grpo'"):
        get_method("ppo")


def test_a_run_follows_its_methods_phases():
    mintrl = RunSpec(method="mintrl", iterations=20, intervention_iterations=5)
    assert [mintrl.objective_at(i) for i in (1, 5, 6)] == ["regression", "regression",
                                                            "regression"]
    assert [mintrl.rollout_mode_at(i) for i in (5, 6)] == ["semi-on-policy", "on-policy"]
    grpo_after = RunSpec(method="mintrl", iterations=20, intervention_iterations=5,
                         post_phase_objective="grpo")
    assert grpo_after.objective_at(6) == "grpo"
    mentor = RunSpec(method="mentor", iterations=20, intervention_iterations=5)
    assert [mentor.objective_at(i) for i in (5, 6)] == ["mentor", "grpo"]
    assert [mentor.teacher_needed(i) for i in (5, 6)] == [True, False]
    opd = RunSpec(method="opd", iterations=20, intervention_iterations=5)
    assert opd.phase_end == 0 and opd.teacher_needed(19) and opd.objective_at(1) == "opd"


def _method_name_comparisons(tree: ast.AST) -> list[int]:
    """Lines comparing something called ``method`` or ``objective`` with a string
    (``spec.method == "opd"``, ``objective in ("grpo", "mentor")``)."""
    names = ("method", "objective")

    def is_method(node):
        return (isinstance(node, ast.Attribute) and node.attr in names) or (
            isinstance(node, ast.Name) and node.id in names)

    def has_str(node):
        return any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                   for n in ast.walk(node))

    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
            and is_method(node.left) and any(has_str(c) for c in node.comparators)]


def test_nothing_outside_the_table_branches_on_a_methods_name():
    found = {}
    for path in [*(ROOT / "mintrl").rglob("*.py"), *(ROOT / "workflow").rglob("*.smk")]:
        if path.suffix == ".smk":  # Snakemake syntax: check its Python lines by text
            lines = [i + 1 for i, line in enumerate(path.read_text().splitlines())
                     if any(f"{name} {op}" in line for name in ("method", "objective")
                            for op in ("==", "!=", "in "))]
        else:
            lines = _method_name_comparisons(ast.parse(path.read_text()))
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert found == {}
