"""One colour per row (method) in every figure and in MLflow; seed pairs as shades of it."""

from __future__ import annotations

import colorsys

# The paper's methods keep their colour in every figure; other rows take the palette in order.
FIXED = {"base": "#7f7f7f", "teacher": "#222222", "grpo": "#1f77b4", "sft-grpo": "#ff7f0e",
         "opd": "#2ca02c", "mentor": "#9467bd", "mintrl-proxy": "#e377c2",
         "mintrl-const": "#d62728", "corrections-only": "#8c564b"}
PALETTE = ["#17becf", "#bcbd22", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#f7b6d2",
           "#c49c94", "#dbdb8d", "#9edae5", "#393b79", "#637939", "#8c6d31", "#843c39"]


def row_colours(rows: list[str]) -> dict[str, str]:
    """Each row's colour: the paper's methods their own, the next rows the palette, then hues
    a golden angle apart (a config may have hundreds of rows: every one differs)."""
    out: dict[str, str] = {}
    free = iter(PALETTE)
    for r in rows:
        out[r] = FIXED.get(r) or next(free, None) or _hue(len(out))
    return out


def _hue(i: int) -> str:
    r, g, b = colorsys.hsv_to_rgb((i * 0.618033988749895) % 1.0, 0.65, 0.55 + 0.3 * (i % 2))
    return f"#{round(255 * r):02x}{round(255 * g):02x}{round(255 * b):02x}"


def shade(colour: str, k: int) -> str:
    """``colour`` (#rrggbb) moved a third of the way to white ``k mod 3`` times: a row's
    seed pairs keep its hue but are told apart (MLflow's run colours; configs run 3 pairs)."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    for _ in range(k % 3):
        rgb = [c + (255 - c) // 3 for c in rgb]
    return "#" + "".join(f"{c:02x}" for c in rgb)
