"""The targets that follow the main table's (a base of :class:`mintrl.pipeline.Pipeline`):
`snakemake tune` (short runs per grid point, scored on the validation split) and `snakemake
claims` (the claims the sweep reproduced, their rows over more pairs). Methods take the job's
wildcards where Snakemake calls them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mintrl.config.runs import lab_model
from mintrl.report.claims import REPRODUCED, load_claims

CLAIMS_VERDICTS = "results/summary/claims/verdicts.csv"  # the claims decided on the sweep


class LaterTargets:
    """Needs ``self.runs``, ``self.reference``, ``self.claims_file``, ``self.scope_evaluations``,
    ``self.target`` and ``self.checkpoint_dir`` (the Pipeline's)."""

    def run_iterations(self, wildcards):
        """The run's length (a tuning run is evaluated at its end)."""
        return self.runs[wildcards.run].spec.iterations

    def tune_checkpoint(self, wildcards):
        return self.checkpoint_dir(
            wildcards.task, wildcards.run, self.runs[wildcards.run].spec.iterations
        )

    def tune_evaluations(self):
        return [
            f"results/tune/{t}/{r}/metrics.json" for r in self.tune_runs for t in self.runs[r].tasks
        ]

    def tune_base_evaluations(self):
        """The base of each tuning run's lab seed on the validation split (the guard's pair)."""
        return sorted(
            {
                f"results/tune/{t}/lab/{lab_model('base', self.runs[r].lab_seed)}/metrics.json"
                for r in self.tune_runs
                for t in self.runs[r].tasks
            }
        )

    def tune_prompts(self):
        tasks = {t for r in self.tune_runs for t in self.runs[r].tasks}
        return [f"results/data/{t}/validation.parquet" for t in sorted(tasks)]

    # --- `snakemake claims` ---

    def claim_runs(self):
        """`snakemake claims`: every pair of the rows a claim reproduced on the sweep's one pair
        names (``results/summary/claims/verdicts.csv``), and of the reference row."""
        verdicts = Path(CLAIMS_VERDICTS)  # the sweep's, in the working directory
        if not verdicts.exists():
            raise ValueError(f"{verdicts}: missing; `snakemake claims` reruns the claims "
                             "`snakemake sweep` reproduced: run the sweep first")
        table = pd.read_csv(verdicts)
        reproduced = set(table.loc[table["outcome"] == REPRODUCED, "claim"])
        claims = {c.id: c for c in load_claims(self.claims_file).claims}
        rows = {name for cid in reproduced if cid in claims and claims[cid].source == "ablation"
                for pair in [*claims[cid].compare, *claims[cid].requires] for name in pair}
        ref_row = self.runs[self.reference].entry if self.reference else None
        rows = (rows - {"base", "teacher"}) | ({ref_row} if rows and ref_row else set())
        # an ablation row's pairs (its sweep run and group claims), the reference's main pairs
        return [n for n, r in self.runs.items() if r.entry in rows and r.group != "tune"
                and (r.group != "main" or r.entry == ref_row)]

    def claims_target(self, wildcards):
        """What `snakemake claims` makes: the `claims` scope's runs, table and tracking."""
        return self.target("claims")

    def claims_pairs_evaluations(self, wildcards):
        """The sweep's evaluations and those of the `claims` scope's further pairs."""
        return sorted(set(self.scope_evaluations("sweep") + self.scope_evaluations("claims")))
