"""The toy's knowledge: a secret table of facts the base knows, holds unreliably, or lacks.

A problem may *look up* an entry of the table (arith: ``#3`` adds the entry's value; intfn:
``k3`` is a constant). The lookup is its own five-token step that writes the value
(``#3=23``, ``k3=23``), so a wrong fact is a wrong step and the correction at that step is
the fact alone: knowledge that a short local correction supplies (issue 23).

Each entry has a kind, set by what the base's pre-training data shows of it:

- ``known``: always its true value;
- ``partial``: its true value in a share ``q`` of the examples, one of a few fixed decoys in
  the rest (label noise makes a fact partial; rarity does not: rare entries were learned);
- ``unknown``: its *misconception*, one fixed wrong value, in ``1 - floor`` of the examples,
  and a value drawn uniformly from all 90 in the rest (the true one as often as any other:
  1 in 90 of the floor). The base is confidently wrong, so the true value costs it several
  nats more than what it writes (a gap of knowledge, not of confidence), yet the true
  digits keep a floor of mass a sampling method can find: on-policy distillation scores
  only the tokens the policy samples and learned none of the true digits the base gave
  e^-10 to e^-16 when the base never saw the entry (benchmarks/results/opd_support_arith.md).
  The misconception shares neither digit with the true value, so the true first digit's
  only mass is the floor's.

The teacher's data shows every entry with its true value. The table is part of the task's
world, drawn from its own seed: every lab seed and role sees the same facts. Values are
distinct two-digit numbers, and decoys are drawn from values no entry has, so a model cannot
copy another entry's value into an entry it lacks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("known", "partial", "unknown")
VALUES = range(10, 100)  # two digits: a blind guess is right 1 time in 90


@dataclass(frozen=True)
class FactTable:
    """Entries ``0..n-1``: the true value, kind and share ``q`` of true labels of each.

    ``decoys[i]``: the wrong values the base's data shows for entry ``i`` (a partial entry's
    decoys, an unknown entry's misconception, none for a known one); ``lookups``: how many
    entries a problem looks up (inclusive range); ``floor``: the share of an unknown entry's
    examples in the base's data that show a uniformly random value."""

    values: tuple[int, ...]
    kinds: tuple[str, ...]
    q: tuple[float, ...]  # 1 for known, the noise level for partial, 0 for unknown
    decoys: tuple[tuple[int, ...], ...]
    lookups: tuple[int, int] = (1, 2)
    floor: float = 0.2

    @classmethod
    def draw(cls, known: int, partial: tuple[float, ...], unknown: int, decoys: int = 2,
             lookups: tuple[int, int] = (1, 2), seed: int = 0,
             floor: float = 0.2) -> FactTable:
        n = known + len(partial) + unknown
        if n > 10:
            raise ValueError(f"{n} facts: at most 10 (entries are named by one digit)")
        rng = np.random.default_rng(seed)
        pool = [int(v) for v in rng.permutation(list(VALUES))]
        values, pool = tuple(pool[:n]), pool[n:]
        kinds = ("known",) * known + ("partial",) * len(partial) + ("unknown",) * unknown
        q = (1.0,) * known + tuple(float(x) for x in partial) + (0.0,) * unknown
        wrong = []
        for value, kind in zip(values, kinds, strict=True):
            if kind == "unknown":
                # the misconception: the first unused value that shares no digit place with
                # the true one (taken after every partial decoy: those do not move)
                pick = next(v for v in pool if v // 10 != value // 10 and v % 10 != value % 10)
                wrong.append((pick,))
                pool = [v for v in pool if v != pick]
                continue
            take = decoys if kind == "partial" else 0
            wrong.append(tuple(pool[:take]))
            pool = pool[take:]
        # Entries are shuffled so that an entry's name says nothing about its kind.
        order = rng.permutation(n)
        return cls(tuple(values[i] for i in order), tuple(kinds[i] for i in order),
                   tuple(q[i] for i in order), tuple(wrong[i] for i in order), lookups, floor)

    def keys(self, kind: str) -> list[int]:
        if kind not in KINDS:
            raise ValueError(f"unknown fact kind {kind!r}; kinds: {KINDS}")
        return [i for i, k in enumerate(self.kinds) if k == kind]

    def level(self, key: int) -> str:
        """``known``, ``partial q=0.35`` or ``unknown``: how the base's data showed the entry."""
        kind = self.kinds[key]
        return f"partial q={self.q[key]:g}" if kind == "partial" else kind

    def problem_level(self, keys: list[int]) -> str:
        """The level of the one uncertain fact a problem looks up (``keys``: its
        ``spec["facts"]["keys"]``), or ``known`` when it looks up known facts only."""
        odd = [k for k in keys if self.kinds[k] != "known"]
        return self.level(odd[0]) if odd else "known"

    def draw_keys(self, rng: np.random.Generator, kind: str, n: int) -> list[int]:
        """``n`` lookups for a problem of ``kind``: ``known`` looks up known entries only;
        ``partial`` / ``unknown`` exactly one entry of that kind, the others known (one
        uncertain fact per problem: two could cancel each other's error)."""
        known = self.keys("known")
        picks = [int(rng.choice(known)) for _ in range(n)]
        if kind != "known":
            picks[int(rng.integers(0, n))] = int(rng.choice(self.keys(kind)))
        return picks

    def shown(self, rng: np.random.Generator, key: int, view: str) -> int:
        """The value an example of ``view`` shows for ``key``: ``true`` always the true one;
        ``gapped`` (the base's data) for a partial entry the true one with probability q,
        else a decoy; for an unknown entry a uniformly random value with probability
        ``floor``, else its misconception."""
        if view == "true" or self.kinds[key] == "known":
            return self.values[key]
        if view != "gapped":
            raise ValueError(f"unknown fact view {view!r}: 'true' or 'gapped'")
        if self.kinds[key] == "unknown":
            if rng.random() < self.floor:
                return int(rng.choice(list(VALUES)))
            return self.decoys[key][0]
        if rng.random() < self.q[key]:
            return self.values[key]
        return int(rng.choice(self.decoys[key]))

    def place(self, rng: np.random.Generator, n_ops: int, kind: str,
              view: str) -> tuple[list[tuple[int, int]], dict[int, int]]:
        """The lookups of a problem of ``kind`` with ``n_ops`` operation steps: (step index,
        entry) pairs in step order, and the value each entry shows in the problem's solution
        under ``view`` (one value per entry, however often it is looked up)."""
        lo, hi = self.lookups
        n = min(n_ops, int(rng.integers(lo, hi + 1)))
        keys = self.draw_keys(rng, kind, n)
        where = sorted(int(i) for i in rng.choice(n_ops, size=n, replace=False))
        shown: dict[int, int] = {}
        for key in keys:
            if key not in shown:
                shown[key] = self.shown(rng, key, view)
        return list(zip(where, keys, strict=True)), shown

    def sample_kind(self, rng: np.random.Generator, view: str) -> str:
        """The kind of a pre-training problem, uniform over the kinds the table has (every
        view shows every entry; ``shown`` says with which value)."""
        if view not in ("true", "gapped"):
            raise ValueError(f"unknown fact view {view!r}: 'true' or 'gapped'")
        kinds = [k for k in KINDS if self.keys(k)]
        return kinds[int(rng.integers(0, len(kinds)))]
