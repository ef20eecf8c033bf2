"""The pipeline's files (mintrl.pipeline): what each rule reads, computed from the config and
called by the rules with a job's wildcards. Tested here without Snakemake."""

from types import SimpleNamespace

import pytest
import yaml

from mintrl.config import parse_config
from mintrl.pipeline import Pipeline, one_of


@pytest.fixture(scope="module")
def micro():
    with open("tests/micro.yaml") as f:
        return Pipeline(parse_config(yaml.safe_load(f), "tests/micro.yaml"))


def job(**wildcards):
    return SimpleNamespace(**wildcards)


def test_a_runs_segments_chain_through_hand_offs_and_kept_checkpoints(micro):
    """grpo-s0: 4 iterations, one per job, evaluated at 2 and 4: iteration 1 hands off a
    temporary checkpoint, iteration 2's is kept, and every segment starts from the one
    before it with its optimizer state."""
    first, second, third = (job(task="arith", run="grpo-s0", it=str(i)) for i in (1, 2, 3))
    assert micro.segment_start(first) == 1
    assert micro.segment_init(first) == "results/models/arith/base"
    assert micro.segment_init_optim(first) == []
    assert micro.segment_init(second) == "results/runs/arith/grpo-s0/iter_1/handoff/model"
    assert micro.segment_init_optim(second) == "results/runs/arith/grpo-s0/iter_1/handoff/optim"
    assert micro.segment_init(third) == "results/runs/arith/grpo-s0/iter_2/model"
    assert micro.segment_metrics("arith", "grpo-s0", 1).endswith("iter_1/handoff.json")
    assert micro.segment_metrics("arith", "grpo-s0", 2).endswith("iter_2/segment.json")
    with pytest.raises(ValueError, match=r"no segment ends at iteration 7 \(ends: \[1, 2, 3, 4"):
        micro.segment_start(job(task="arith", run="grpo-s0", it="7"))


def test_sft_grpo_starts_rl_from_its_sft_model(micro):
    assert micro.checkpoint_dir("arith", "sft-grpo", 0) == "results/runs/arith/sft-grpo/sft/model"
    assert micro.run_sft_metrics(job(tracked="sft-grpo")) == [
        "results/runs/arith/sft-grpo/sft/metrics.json"]
    assert micro.run_sft_metrics(job(tracked="grpo-s0")) == []


def test_the_teacher_is_an_input_only_where_the_method_uses_it(micro):
    """MInTRL's phase is iterations 1..T_I = 2: its judge and intervener need the teacher
    there, not after; GRPO never; OPD always."""
    teacher = "results/models/arith/teacher"
    assert micro.segment_teacher(job(task="arith", run="mintrl-proxy", it="1")) == teacher
    assert micro.segment_teacher(job(task="arith", run="mintrl-proxy", it="3")) == []
    assert micro.segment_teacher(job(task="arith", run="grpo-s0", it="1")) == []
    assert micro.segment_teacher(job(task="arith", run="opd", it="2")) == teacher


def test_the_main_command_runs_each_rows_first_pair_and_main_table_all(micro):
    assert micro.scope_runs("main") == ["grpo-s0", "mintrl-proxy", "sft-grpo", "opd", "mentor"]
    assert micro.scope_runs("main_table") == micro.scope_runs("main")[:1] + [
        "grpo-s1", *micro.scope_runs("main")[1:]]
    assert micro.scope_runs("ablation_lr") == ["grpo-lr0.001-tasksarith-s0"]
    everything = micro.target("main")
    assert "results/runs/arith/grpo-s0/iter_4/model" in everything
    assert "results/eval/lab/intfn/teacher/metrics.json" in everything
    assert "results/summary/main/table.md" in everything
    assert not any("grpo-s1" in f for f in everything)


def test_main_table_stops_every_pair_where_the_main_command_stops_the_sweep_at_the_end():
    """`snakemake main_table` is the main command's table over all its pairs: the same length."""
    with open("tests/micro.yaml") as f:
        cfg = yaml.safe_load(f)
    pipe = Pipeline(parse_config(cfg | {"main_iterations": 3}, "tests/micro.yaml"))
    assert pipe.scope_upto("main_table", "grpo-s1") == pipe.scope_upto("main", "grpo-s0") == 3
    assert "results/runs/arith/grpo-s1/iter_3/model" in pipe.target("main_table")
    assert "results/eval/arith/grpo-s1/iter_3/metrics.json" in pipe.scope_evaluations("main_table")
    assert not any("grpo-s1/iter_4" in f for f in pipe.target("main_table"))
    assert pipe.scope_upto("sweep", "grpo-s1") == 4


def test_evaluations_of_a_run_are_its_labs_base_and_its_kept_checkpoints(micro):
    assert micro.run_evaluations("grpo-s0", upto=2, tasks=["arith"]) == [
        "results/eval/lab/arith/base/metrics.json",
        "results/eval/arith/grpo-s0/iter_2/metrics.json"]


def test_a_segment_with_ranks_or_gpus_is_launched_by_torchrun(micro):
    wc = job(task="arith", run="grpo-s0", it="1")
    assert micro.segment_launcher(wc, SimpleNamespace()) == "python -m mintrl.segment"
    launcher = micro.segment_launcher(wc, SimpleNamespace(gpu=4, tp=2))
    assert "--nproc_per_node 2 -m mintrl.segment --" in launcher
    assert micro.tp_flag(wc, SimpleNamespace(tp=2)) == "--tensor-parallel 2"


def test_a_wildcard_constraint_matches_exactly_one_name():
    import re

    pattern = one_of(["grpo-s0", "grpo-s0.1"])
    assert re.fullmatch(pattern, "grpo-s0") and re.fullmatch(pattern, "grpo-s0.1")
    assert not re.fullmatch(pattern, "grpo-s0x1")  # the dot is literal
    assert not re.fullmatch(one_of([]), "")


def test_a_jobs_settings_hold_only_the_config_it_depends_on(micro):
    """Editing a run's length reruns none of its segments; a task's teacher settings reach
    only that teacher's pre-training."""
    run = micro.run_settings(job(task="arith", run="grpo-s0"))
    assert "iterations" not in run["spec"] and run["seed"] == 0
    teacher = micro.pretrain_settings(job(task="arith", role="teacher"))
    base = micro.pretrain_settings(job(task="arith", role="base"))
    assert teacher["spec"] != base["spec"] and "checkpoint_every" not in base["spec"]
    assert micro.pretrain_settings(job(task="arith", role="teacher-lab2"))["lab_seed"] == 2


def test_a_teacher_from_the_base_waits_for_the_base_of_its_lab(micro):
    """`init: base` (micro's arith, as the default's) adds the base of the same lab seed to
    the teacher's inputs; `scratch` (micro's intfn) leaves its inputs and settings alone."""
    assert micro.pretrain_inputs(job(task="arith", role="teacher-lab2")) == [
        *micro.split_files(job(task="arith")), "results/models/arith/base-lab2"]
    assert micro.pretrain_settings(job(task="arith", role="teacher"))["spec"]["init"] == "base"
    assert micro.pretrain_inputs(job(task="intfn", role="teacher")) == micro.split_files(
        job(task="intfn"))
    assert "init" not in micro.pretrain_settings(job(task="intfn", role="teacher"))["spec"]


def test_an_ablation_of_shorter_runs_shows_its_reference_at_their_length():
    """The control group's runs stop early: its table shows the reference run at the same
    iteration (a kept checkpoint), not at the reference's end; a length where the reference
    keeps nothing is refused with the group named."""
    with open("tests/micro.yaml") as f:
        data = yaml.safe_load(f)
    data["ablation_reference"] = "mintrl-proxy"
    short = {"iterations": 2, "iterations_per_job": 2, "eval_every": 2}
    data["runs"] += [{"method": "corrections_only", "group": "control", "name": "co",
                      "overrides": short},
                     {"method": "mintrl", "group": "beta2", "overrides": {"beta2": 1.0}}]
    p = Pipeline(parse_config(data))
    assert p.scope_upto("ablation_control", "mintrl-proxy") == 2
    assert p.scope_upto("ablation_beta2", "mintrl-proxy") == 4  # its runs end where it does
    assert not [f for f in p.scope_evaluations("ablation_control") if "iter_4" in f]
    data["runs"][-2]["overrides"] = short | {"iterations": 3, "eval_every": 3}
    with pytest.raises(ValueError, match="ablation_control: its runs end at iteration 3"):
        Pipeline(parse_config(data)).scope_upto("ablation_control", "mintrl-proxy")


def test_only_a_target_where_a_setting_varies_alone_gets_a_knobs_figure():
    """The main table compares methods: no knobs figure (it would be blank). An ablation of a
    numeric setting (beta2) gets one; one of a method variant (control) does not."""
    with open("tests/micro.yaml") as f:
        data = yaml.safe_load(f)
    data["ablation_reference"] = "mintrl-proxy"
    data["runs"] += [{"method": "mintrl", "group": "beta2", "overrides": {"beta2": 1.0}},
                     {"method": "corrections_only", "group": "control", "name": "co"}]
    p = Pipeline(parse_config(data))
    knobs = {s: any(f.endswith("/knobs.png") for f in p.target(s)) for s in p.scopes}
    assert knobs["ablation_beta2"] and not knobs["main"] and not knobs["main_table"]
    assert not knobs["ablation_control"]


def test_snakemake_claims_reruns_the_rows_of_the_claims_the_sweep_reproduced(tmp_path,
                                                                            monkeypatch):
    """The sweep runs each ablation on one pair; `snakemake claims` runs the rows of each claim
    the sweep reproduced (and the reference row) over the reference's pairs, and nothing of a
    claim it did not reproduce."""
    from pathlib import Path

    from mintrl.config import load_config
    from mintrl.config.derived_runs import CLAIMS_GROUP

    claims = str(Path("config/claims.yaml").resolve())
    pipe = Pipeline(load_config("config/config.yaml"), claims)
    extra = {n for n, r in pipe.runs.items() if r.group == CLAIMS_GROUP}
    assert {"C16-lab1-s1", "C16-lab2-s2", "judge-likelihood-lab2-s2"} <= extra
    assert CLAIMS_GROUP not in pipe.ablations and not extra & set(pipe.scope_runs("sweep"))
    # the further pairs are the same row at the same values, from labs 1 and 2
    c16, c16_lab1 = pipe.runs["C16"], pipe.runs["C16-lab1-s1"]
    assert c16_lab1.entry == c16.entry == "C16" and c16_lab1.spec == c16.spec
    assert (c16_lab1.lab_seed, c16_lab1.seed) == (1, 1)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="run the sweep first"):
        pipe.claim_runs()
    verdicts = tmp_path / "results" / "summary" / "claims" / "verdicts.csv"
    verdicts.parent.mkdir(parents=True)
    verdicts.write_text("claim,outcome\npeak-chunk-size,reproduced\n"
                        "self-intervention,inconclusive\nconst-best-overall,reproduced\n")
    assert set(pipe.scope_runs("claims")) == {
        f"{row}{pair}" for row in ("C16", "C48") for pair in ("", "-lab1-s1", "-lab2-s2")
    } | {"mintrl-const-s0", "mintrl-const-lab1-s1", "mintrl-const-lab2-s2"}
