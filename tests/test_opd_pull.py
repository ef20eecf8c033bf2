"""benchmarks/opd_pull.py: OPD's per-token pull, teacher log-prob minus the base's, by split."""

import pytest
from conftest import load_benchmark


def test_a_teacher_equal_to_the_base_pulls_nowhere_and_a_different_one_pulls_by_its_ratio():
    pull = load_benchmark("opd_pull").pull
    base = [[-0.1, -0.2], [-0.1], [-3.0, -0.1]]
    splits = ["easy", "easy", "hard"]
    same = pull(base, base, splits)
    assert same["easy"] == {"mean": 0.0, "mean_abs": 0.0, "share_over_1_nat": 0.0,
                            "sequence_sum": 0.0, "samples": 2, "tokens": 3}
    # the teacher knows the hard fact (token 1: +2.9 nats) and disagrees on one easy token
    teacher = [[-0.1, -1.7], [-0.1], [-0.1, -0.1]]
    moved = pull(base, teacher, splits)
    assert moved["easy"]["mean"] == pytest.approx(-0.5)
    assert moved["easy"]["share_over_1_nat"] == pytest.approx(1 / 3)
    assert moved["easy"]["sequence_sum"] == pytest.approx(-0.75)
    assert moved["hard"]["mean"] == pytest.approx(1.45) and "medium" not in moved
