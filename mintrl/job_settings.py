"""What each Snakemake job's ``settings`` param holds: the config keys its output depends on.

Snakemake reruns a job when its params change, so editing one task's teacher reruns that
teacher and what follows, and nothing else. Also the flags of the jobs that fetch pinned
files. A base of :class:`mintrl.pipeline.Pipeline`: methods take the job's wildcards.
"""

from __future__ import annotations

from mintrl.config.runs import RUN_LENGTH_KEYS, lab_model, split_lab_model


class JobSettings:
    """Needs ``self.cfg`` (the resolved :class:`~mintrl.config.Config`) and ``self.runs``."""

    def _source(self, task, name):
        spec = self.cfg.tasks[task]
        return spec.train[name] if name in spec.train else spec.benchmarks[name]

    # --- dataset tasks: files and models from outside, pinned (rules/fetch.smk) ---
    def fetch_data_flags(self, wildcards):
        src = self._source(wildcards.task, wildcards.source)
        if src.url:
            return f"--url {src.url} --sha256 {src.sha256}"
        return f"--hub {src.hub} --file {src.file} --revision {src.revision}"

    def fetch_model_flags(self, wildcards):
        ref = getattr(self.cfg.tasks[wildcards.task], wildcards.role)
        if ref.path:
            return f"--path {ref.path}"
        return f"--hub {ref.hub} --revision {ref.revision}"

    def fetch_model_settings(self, wildcards):
        return getattr(self.cfg.tasks[wildcards.task], wildcards.role).model_dump()

    def prepare_settings(self, wildcards):
        spec = self.cfg.tasks[wildcards.task]
        if spec.kind == "dataset":
            keys = {"train", "train_size", "validation_size", "on_bad", "chat", "reward"}
            return {"seed": self.cfg.seed, "splits": spec.model_dump(include=keys)}
        keys = {"easy", "hard", "train", "sizes"} | ({"medium", "facts"} if spec.facts else set())
        return {"seed": self.cfg.seed, "splits": spec.model_dump(include=keys)}

    def benchmark_settings(self, wildcards):
        spec = self.cfg.tasks[wildcards.task]
        return {
            "source": spec.benchmarks[wildcards.split].model_dump(),
            "on_bad": spec.on_bad,
            "chat": spec.chat,
            "reward": spec.reward,
        }

    def pretrain_threads(self, wildcards):
        """Cores a pre-training job reserves: its role's torch threads (tasks.<task>.<role>)."""
        role, _ = split_lab_model(wildcards.role)
        return getattr(self.cfg.tasks[wildcards.task], role).threads

    def pretrain_settings(self, wildcards):
        # not the resume-state keys: how often a job saves its state changes no weights; the lab
        # seed only when it is not 0, so lab 0's finished models keep their params and do not rerun
        role, lab = split_lab_model(wildcards.role)
        spec = getattr(self.cfg.tasks[wildcards.task], role)
        facts = self.cfg.tasks[wildcards.task].facts
        settings = {"seed": self.cfg.seed, "spec": spec.identity()}
        return (
            settings
            | ({"lab_seed": lab} if lab else {})
            | ({"facts": facts.model_dump()} if facts else {})
        )

    def pretrain_inputs(self, wildcards):
        """The task's splits (held out of pre-training) and, for a role with `init: base`, the
        base of the same lab seed it starts from."""
        role, lab = split_lab_model(wildcards.role)
        init = getattr(self.cfg.tasks[wildcards.task], role).init
        base = [f"results/models/{wildcards.task}/{lab_model('base', lab)}"] if init == "base" \
            else []
        return [*self.split_files(wildcards), *base]

    def pretrain_role(self, wildcards):
        """`teacher-lab2` -> `teacher`: the role rule pretrain_lab trains."""
        return split_lab_model(wildcards.role)[0]

    def pretrain_lab_seed(self, wildcards):
        """`teacher-lab2` -> 2: the lab seed rule pretrain_lab trains it with."""
        return split_lab_model(wildcards.role)[1]

    def evaluate_settings(self, wildcards):
        return {
            "seed": self.cfg.seed,
            "evaluation": self.cfg.evaluation.model_dump(),
            "max_new_tokens": self.cfg.tasks[wildcards.task].max_new_tokens,
        }

    def filter_settings(self, wildcards):
        return {
            "seed": self.cfg.seed,
            "filter": self.cfg.filter.model_dump(),
            "sampling": self.cfg.rl.sampling.model_dump(),
        }

    def run_settings(self, wildcards):
        # Only keys that differ from their defaults: a key added for a new method must not rerun
        # every finished run (changing a default in mintrl/config/ is a code change, not a
        # config change). Nor the run-length keys: extending a run reruns none of its segments.
        run = self.runs[wildcards.run]
        return {
            "seed": run.seed,
            "spec": run.spec_for(wildcards.task).model_dump(
                exclude_defaults=True, exclude=RUN_LENGTH_KEYS
            ),
            "max_new_tokens": self.cfg.tasks[wildcards.task].max_new_tokens,
        }

