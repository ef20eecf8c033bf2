"""An HTML page per iteration to read trajectories: intervention spans highlighted, the judge's
verdicts, rewards. Written beside the iteration's rollouts and logged to MLflow."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from mintrl.io import atomic_path
from mintrl.schemas import INTERVENTION, NO_ERROR, NO_VERDICT

STYLE = """body{font-family:sans-serif;margin:1em}pre{white-space:pre-wrap;background:#f6f6f6;
padding:.5em}.int{background:#ffd27f}.r1{color:#070}.r0{color:#a00}td{padding:0 .6em}"""


def _spans(tokenizer, ids: list[int], provenance: list[int]) -> str:
    """The response as HTML, each run of intervention tokens in a highlighted span."""
    out, i = [], 0
    while i < len(ids):
        j = i
        while j < len(ids) and provenance[j] == provenance[i]:
            j += 1
        text = html.escape(tokenizer.decode(ids[i:j], skip_special_tokens=True))
        out.append(f'<span class="int">{text}</span>' if provenance[i] == INTERVENTION
                   else text)
        i = j
    return "".join(out)


def _verdicts(v) -> str:
    """A judge's verdicts, steps numbered from 1 (``verdicts`` holds 0-based step indices)."""
    names = {NO_ERROR: "ok", NO_VERDICT: "no verdict"}
    return ", ".join(names.get(int(x), f"step {int(x) + 1} wrong") for x in v) or "—"


def sample_rows(part: pd.DataFrame, n: int) -> pd.DataFrame:
    """Up to ``n`` rollouts of distinct prompts, the most corrected first: a page shows what
    intervention did, not one prompt's samples over and over."""
    if "interventions" in part:
        part = part.sort_values("interventions", ascending=False, kind="stable")
    return part.drop_duplicates("problem_id").head(n)


def write_inspector(df: pd.DataFrame, tokenizer, out: Path, per_kind: int = 8) -> None:
    """Up to ``per_kind`` trajectories of each kind (semi / guided first), of distinct prompts,
    the intervened first; review columns only for the kind a judge reviewed (semi)."""
    order = {"semi": 0, "guided": 0, "control": 1, "on-policy": 2}
    parts = [f"<html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"]
    it = int(df["iteration"].iloc[0]) if len(df) else 0
    parts.append(f"<h2>{html.escape(str(df['run'].iloc[0]))} — iteration {it}</h2>"
                 "<p>Highlighted: tokens written by the intervener (MInTRL) or drawn mostly "
                 "from the teacher (MENTOR's guided samples). Steps are numbered from 1; each "
                 "rollout below is of a different prompt, the most corrected first.</p>")
    kinds = sorted(df["kind"].unique(), key=lambda k: order.get(k, 9))
    for kind in kinds:
        part = sample_rows(df[df["kind"] == kind], per_kind)
        parts.append(f"<h3>{html.escape(kind)} ({int((df['kind'] == kind).sum())} rollouts, "
                     f"reward {df.loc[df['kind'] == kind, 'reward'].mean():.2f})</h3>")
        for row in part.itertuples():
            prompt = html.escape(tokenizer.decode(list(row.prompt_ids), skip_special_tokens=True))
            cls = "r1" if row.reward > 0 else "r0"
            body = _spans(tokenizer, list(row.response_ids), list(row.provenance))
            review = (f"<td>reviews {row.reviews}: {_verdicts(row.verdicts)}</td>"
                      f"<td>corrections {row.interventions}</td>" if kind == "semi" else "")
            parts.append(
                f"<table><tr><td><b>{html.escape(row.problem_id)}</b> #{row.sample}</td>"
                f"<td class='{cls}'>reward {row.reward:g}</td><td>{row.finish_reason}</td>"
                f"{review}</tr></table><pre>{prompt}<hr>{body}</pre>")
    parts.append("</body></html>")
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(parts))
