import math

import pytest

from mintrl.report.passk import pass_at_k


@pytest.mark.parametrize(
    "n,c,k,expected",
    [
        (10, 0, 1, 0.0),
        (10, 3, 1, 0.3),
        (4, 2, 2, 1 - 1 / 6),  # C(2,2)/C(4,2) = 1/6
        (5, 1, 2, 1 - math.comb(4, 2) / math.comb(5, 2)),  # 0.4
        (3, 2, 2, 1.0),  # n - c < k
        (32, 32, 8, 1.0),
    ],
)
def test_hand_computed_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_rejects_impossible_counts():
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)
