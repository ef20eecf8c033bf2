"""The Snakemake workflow end to end on the micro config, in a scratch directory."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _snakemake(workdir: Path, *args: str, config: Path | None = ROOT / "tests" / "micro.yaml",
               env: dict[str, str] | None = None, cores: int = 2) -> subprocess.CompletedProcess:
    """Snakemake in ``workdir`` with ``config`` (None: the workflow's default config file)."""
    given = ["--configfile", str(config)] if config is not None else []
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"),
           "--directory", str(workdir), *given, "--cores", str(cores), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)


def _two_labs(folder: Path) -> Path:
    """tests/micro.yaml with grpo's two RL seeds paired with lab seeds 0 and 1."""
    import yaml

    cfg = yaml.safe_load((ROOT / "tests" / "micro.yaml").read_text())
    assert cfg["runs"][0]["method"] == "grpo" and cfg["runs"][0]["seeds"] == [0, 1]
    cfg["runs"][0]["lab_seeds"] = [0, 1]
    path = folder / "two_labs.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def finished_run(micro_run):
    return micro_run  # tests/conftest.py: the main command on tests/micro.yaml, once


def test_main_job_evaluates_base_and_teacher_of_each_task(finished_run):
    for task in ("arith", "intfn"):
        for role in ("base", "teacher"):
            metrics = json.loads(
                (finished_run / f"results/eval/lab/{task}/{role}/metrics.json").read_text())
            # arith is the fact toy (split by the facts a problem looks up), intfn the length toy
            want = {"easy", "medium", "hard"} if task == "arith" else {"easy", "hard"}
            assert set(metrics["splits"]) == want
            assert (finished_run / f"results/models/{task}/{role}/config.json").exists()
            assert (finished_run / f"results/logs/pretrain/{task}_{role}.log").exists()


def test_main_job_trains_grpo_and_evaluates_each_kept_checkpoint(finished_run):
    import pandas as pd

    for task in ("arith", "intfn"):
        run = finished_run / "results" / "runs" / task / "grpo-s0"
        for it in (1, 2, 3, 4):
            rollouts = pd.read_parquet(run / f"iter_{it}" / "rollouts.parquet")
            assert len(rollouts) == 4 * 4 and set(rollouts["iteration"]) == {it}
        # kept checkpoints (evaluated: 2 and the final 4) stay; hand-offs (1, 3) are gone
        assert (run / "iter_2" / "model").is_dir() and (run / "iter_4" / "model").is_dir()
        assert not (run / "iter_1" / "handoff" / "model").exists()
        for it in (2, 4):
            m = json.loads((finished_run / f"results/eval/{task}/grpo-s0/iter_{it}/"
                            "metrics.json").read_text())
            assert m["run"] == "grpo-s0" and m["iteration"] == it
    table = pd.read_csv(finished_run / "results" / "summary" / "main" / "table.csv", index_col=0)
    # rows are the config's entries (a row averages its seeds); teacher as the reference
    assert list(table.index) == ["base", "grpo", "mintrl-proxy", "sft-grpo", "opd", "mentor",
                                 "teacher"]
    assert "Strict correctness" in (finished_run / "results/summary/main/quality.md").read_text()
    assert list(table.columns) == ["arith/easy", "arith/medium", "arith/hard", "intfn/easy",
                                   "intfn/hard", "average"]
    assert (finished_run / "results" / "summary" / "main" / "reward.png").stat().st_size > 0
    # beside quality, what each row spent: MInTRL's teacher wrote and read, GRPO's did not
    md = (finished_run / "results/summary/main/table.md").read_text()
    cost = md.split("Cost per iteration")[1]
    grpo = next(ln for ln in cost.splitlines() if ln.startswith("| grpo |")).split(" | ")
    mintrl = next(ln for ln in cost.splitlines() if ln.startswith("| mintrl-proxy |")).split(" | ")
    assert grpo[2:4] == ["0", "0"] and mintrl[2] != "0" and mintrl[3] != "0"


def test_mintrl_runs_semi_and_control_rollouts_until_the_cut_off(finished_run):
    import pandas as pd

    from mintrl.schemas import INTERVENTION

    run = finished_run / "results" / "runs" / "arith" / "mintrl-proxy"
    for it in (1, 2):  # intervention phase: control + semi-on-policy
        df = pd.read_parquet(run / f"iter_{it}" / "rollouts.parquet")
        assert df["kind"].value_counts().to_dict() == {"control": 8, "semi": 8}
        semi = df[df["kind"] == "semi"]
        assert (semi["reviews"] <= 2).all()
        assert (df.loc[df["kind"] == "control", "provenance"].map(sum) == 0).all()
        written = semi["provenance"].map(lambda p: sum(x == INTERVENTION for x in p))
        assert (written <= 8 * semi["interventions"]).all()  # at most L tokens each
    for it in (3, 4):  # after T_I = 2: on-policy only
        df = pd.read_parquet(run / f"iter_{it}" / "rollouts.parquet")
        assert set(df["kind"]) == {"on-policy"} and len(df) == 16
    metrics = json.loads((run / "iter_1" / "metrics.json").read_text())
    assert {"coverage/control", "coverage/semi", "intervention/offpolicy_token_frac",
            "losses/residual0_abs_control", "time/judge"} <= set(metrics)


def test_mlflow_holds_base_and_the_grpo_run_with_iteration_steps(finished_run):
    from mintrl.report.tracking import read_runs

    runs = {r["name"]: r for r in read_runs(
        f"sqlite:///{finished_run / 'results' / 'mlflow.db'}", "mintrl")}
    assert set(runs) == {"base", "teacher", "grpo-s0", "mintrl-proxy", "sft-grpo", "opd",
                         "mentor", "summary-main"}
    grpo = runs["grpo-s0"]
    assert grpo["tags"]["method"] == "grpo" and grpo["tags"]["seed"] == "0"
    assert grpo["tags"]["git_commit"] and len(grpo["tags"]["mintrl.config_hash"]) == 12
    assert grpo["params"]["rl.group_size"] == "4"
    # where a run stops is a tag, not a param: extending it continues the same MLflow run
    assert grpo["tags"]["rl.iterations"] == "4" and "rl.iterations" not in grpo["params"]
    assert [s for s, _ in grpo["metrics"]["rollout/arith/reward"]] == [1, 2, 3, 4]
    assert [s for s, _ in grpo["metrics"]["pass1/intfn/hard"]] == [0, 2, 4]
    assert [s for s, _ in runs["base"]["metrics"]["pass1/arith/easy"]] == [0]
    assert grpo["tags"]["iterations_done"] == "4" and "rl.beta2" not in grpo["params"]
    assert grpo["tags"]["group"] == "main" and grpo["tags"]["row"] == "grpo"
    # MLflow's UI draws each run in the colour its tag names: no two alike, GRPO as in the plots
    colours = [r["tags"]["mlflow.runColor"] for r in runs.values()]
    assert len(set(colours)) == len(colours) and grpo["tags"]["mlflow.runColor"] == "#1f77b4"
    assert {"table.md", "reward.png", "table.json"} <= set(runs["summary-main"]["artifacts"])
    assert "inspector" in runs["mintrl-proxy"]["artifacts"]  # rollout pages per iteration
    assert [s for s, _ in runs["mintrl-proxy"]["metrics"]["coverage/arith/semi"]] == [1, 2]
    # SFT+GRPO's SFT compute is logged with its run, before RL (step 0)
    assert [s for s, _ in runs["sft-grpo"]["metrics"]["sft/arith/time/total"]] == [0]
    assert [s for s, _ in runs["mentor"]["metrics"]["mentor/arith/guided_token_share"]] == [1, 2]


def test_the_other_baselines_run_through_the_same_dag(finished_run):
    import pandas as pd

    runs = finished_run / "results" / "runs" / "arith"
    # SFT+GRPO: an SFT stage on the teacher's trajectories, then GRPO from its checkpoint
    sft = json.loads((runs / "sft-grpo/sft/metrics.json").read_text())
    assert sft["samples"] == 16 * 2 and sft["kept"] == 32  # micro: only_correct off
    assert sft["sft/optimizer_steps"] > 0 and sft["time/total"] > 0
    samples = pd.read_parquet(runs / "sft-grpo/sft/samples.parquet")
    assert set(samples["kind"]) == {"sft"} and (samples["provenance"].map(min) == 1).all()
    log = (finished_run / "results/logs/segment/arith_sft-grpo_2.log").read_text()
    assert "from results/runs/arith/sft-grpo/sft/model" in log
    # OPD: on-policy groups, the teacher's KL on the samples logged every iteration
    for it in (1, 2):
        df = pd.read_parquet(runs / f"opd/iter_{it}/rollouts.parquet")
        assert set(df["kind"]) == {"on-policy"} and len(df) == 16
        assert "distill/teacher_kl" in json.loads((runs / f"opd/iter_{it}/metrics.json")
                                                  .read_text())
    # MENTOR: half of each group guided by the teacher while T_I lasts
    df = pd.read_parquet(runs / "mentor/iter_1/rollouts.parquet")
    assert df["kind"].value_counts().to_dict() == {"on-policy": 8, "guided": 8}
    assert (df.loc[df["kind"] == "on-policy", "provenance"].map(sum) == 0).all()
    m = json.loads((runs / "mentor/iter_2/metrics.json").read_text())
    assert m["mentor/guided_weight"] == 0.5 and m["mentor/tau"] > 0
    assert 0 <= m["mentor/guided_token_share"] <= 1 and "distill/teacher_kl" in m
    assert (finished_run / "results/eval/arith/mentor/iter_2/metrics.json").exists()


def test_a_finished_run_has_nothing_left_to_do(finished_run):
    res = _snakemake(finished_run, "-n")
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


def test_a_dry_run_writes_nothing_stages_read(finished_run):
    """``snakemake -n --config ...`` plans with the override but leaves the resolved config the
    stages read (and every result) as it was."""
    resolved = finished_run / "results" / "config" / "resolved.yaml"
    before = resolved.read_text()
    res = _snakemake(finished_run, "-n", "--config", "rl={lr: 3.0e-5}")
    assert res.returncode == 0, res.stderr[-2000:]
    assert resolved.read_text() == before and "lr: 3.0e-05" not in before


def test_bad_config_fails_before_any_job_naming_the_key(tmp_path):
    res = _snakemake(tmp_path, "-n", "--config", "threads=0")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "threads: Input should be greater than or equal to 1" in out
    assert not (tmp_path / "results" / "data").exists()


def _planned(res):
    out = res.stdout + res.stderr
    return [line.split("output:")[1].strip() for line in out.splitlines()
            if line.strip().startswith("output:")]


def _planned_jobs(res) -> list[dict]:
    """Each job a dry run plans: {"rule", "input": [...], "output": [...]}."""
    import re

    jobs = []
    for line in (res.stdout + res.stderr).splitlines():
        text = line.strip()
        if re.fullmatch(r"(local)?rule \w+:", text):
            jobs.append({"rule": text.split()[-1][:-1], "input": [], "output": []})
        elif jobs and text.startswith(("input:", "output:")):
            key, _, files = text.partition(":")
            jobs[-1][key] = [f.strip() for f in files.split(",")]
    return jobs


def test_main_table_pretrains_each_lab_seed_and_each_run_reads_its_own_lab(tmp_path):
    res = _snakemake(tmp_path, "-n", "main_table", config=_two_labs(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = _planned_jobs(res)
    made = {f: j["rule"] for j in jobs for f in j["output"]}
    for task in ("arith", "intfn"):
        for role in ("base", "teacher"):
            assert made[f"results/models/{task}/{role}"] == "pretrain"
            assert made[f"results/models/{task}/{role}-lab1"] == "pretrain_lab"
            assert f"results/eval/lab/{task}/{role}-lab1/metrics.json" in made
        assert made[f"results/data/{task}/train_filtered-lab1.parquet"] == "filter_prompts_lab"
        assert f"results/filter/{task}/pass_rates-lab1.parquet" in made
    assert "results/tracking/base-lab1/upto_0.json" in made  # its own MLflow run
    assert not any("grpo-s1" in f for f in made)  # RL seed 1 is on lab 1: grpo-lab1-s1
    for run, lab in (("grpo-s0", ""), ("grpo-lab1-s1", "-lab1")):
        for task in ("arith", "intfn"):
            segments = [j for j in jobs if j["rule"].startswith("segment")
                        and any(f"runs/{task}/{run}/" in f for f in j["output"])]
            assert len(segments) == 4  # iterations 1-4, one per job
            for j in segments:
                assert f"results/data/{task}/train_filtered{lab}.parquet" in j["input"]
                assert not any("-lab" in f for f in j["input"] if not lab)
            first = [j for j in segments if f"runs/{task}/{run}/iter_1/" in j["output"][0]]
            assert f"results/models/{task}/base{lab}" in first[0]["input"]
    summary = [j for j in jobs if j["rule"] == "summarize"][0]
    assert {"results/eval/lab/arith/base-lab1/metrics.json",
            "results/eval/lab/arith/teacher-lab1/metrics.json"} <= set(summary["input"])


def test_the_main_command_plans_what_it_did_before_lab_seeds(tmp_path):
    """A config with lab seeds plans, for the main command, exactly the jobs (inputs and
    outputs) of the same config without them: lab 0's paths and run names, nothing of lab 1."""
    with_labs = _planned_jobs(_snakemake(tmp_path / "a", "-n", config=_two_labs(tmp_path)))
    without = _planned_jobs(_snakemake(tmp_path / "b", "-n"))

    def plan(jobs):
        return sorted((j["rule"], sorted(j["input"]), sorted(j["output"])) for j in jobs)

    assert len(without) > 40 and plan(with_labs) == plan(without)
    assert "-lab" not in repr(plan(with_labs))


def test_adding_lab_seeds_to_a_finished_config_reruns_nothing_of_lab_zero(finished_run,
                                                                          tmp_path):
    """Lab 0's rules, params and paths are what they were: the main command has nothing to
    do, and the main table adds lab 1 without redoing lab 0's models, filter or runs."""
    config = _two_labs(tmp_path)
    res = _snakemake(finished_run, "-n", config=config)
    assert res.returncode == 0 and "Nothing to be done" in res.stdout + res.stderr
    jobs = _planned_jobs(_snakemake(finished_run, "-n", "main_table", config=config))
    made = {f for j in jobs for f in j["output"]}
    assert {"results/models/arith/base-lab1", "results/runs/arith/grpo-lab1-s1/iter_4/model",
            "results/data/intfn/train_filtered-lab1.parquet"} <= made
    assert not made & {f"results/{p}" for t in ("arith", "intfn") for p in (
        f"models/{t}/base", f"models/{t}/teacher", f"data/{t}/train_filtered.parquet",
        f"eval/lab/{t}/base/metrics.json", f"eval/lab/{t}/teacher/metrics.json")}
    assert not any("grpo-s0" in f for f in made)


def test_deleting_an_evaluated_checkpoint_reruns_only_what_depends_on_it(finished_run):
    import shutil

    model = finished_run / "results/runs/arith/grpo-s0/iter_4/model"
    backup = finished_run / "iter_4_model_backup"
    shutil.copytree(model, backup)
    shutil.rmtree(model)
    try:
        res = _snakemake(finished_run, "-n")
        assert res.returncode == 0, res.stderr[-2000:]
        planned = " ".join(_planned(res))
        # the segments back to the previous kept checkpoint (iteration 2), its evaluation,
        # the summary and tracking; nothing of intfn, pre-training or the filter
        assert "results/runs/arith/grpo-s0/iter_4/model" in planned
        assert "results/eval/arith/grpo-s0/iter_4/metrics.json" in planned
        assert "results/runs/arith/grpo-s0/iter_3/handoff/model" in planned
        assert "iter_2" not in planned and "intfn" not in planned
        assert "models/" not in planned and "filter" not in planned
    finally:
        shutil.copytree(backup, model)
        shutil.rmtree(backup)


def test_editing_one_teacher_reruns_that_teacher_and_the_runs_it_intervenes_in(finished_run):
    res = _snakemake(finished_run, "-n", "--config",
                     'tasks={"intfn": {"teacher": {"steps": 41}}}')
    assert res.returncode == 0, res.stderr[-2000:]
    planned = [p for p in _planned(res) if not p.startswith(("results/summary",
                                                                "results/tracking"))]
    # the teacher, its evaluation, and MInTRL's intfn segments it intervenes in (phase: 1-2)
    # with everything after them; never GRPO, the base, or the other task
    assert all("intfn/teacher" in p or "intfn/mintrl-proxy" in p for p in planned), planned
    assert any("runs/intfn/mintrl-proxy/iter_1" in p for p in planned)
    assert any("models/intfn/teacher" in p for p in planned)
    assert any("eval/lab/intfn/teacher" in p for p in planned)


def test_changing_how_often_pretraining_saves_its_state_reruns_nothing(finished_run):
    """checkpoint_every changes no weights: finished models (and all after them) stay."""
    res = _snakemake(finished_run, "-n", "--config",
                     'tasks={"arith": {"base": {"checkpoint_every": 7}}}')
    assert res.returncode == 0, res.stderr[-2000:]
    assert not _planned(res)


def test_other_cpu_kernels_make_again_what_torch_computed(finished_run):
    """Outputs made with other CPU kernels (another pin, or none) are not what this setting
    computes: a dry run with the pins off plans the models, runs and evaluations again, and
    keeps the prompt splits (no torch in them)."""
    res = _snakemake(finished_run, "-n", env=os.environ | {"MINTRL_CPU_NUMERICS": "native"})
    assert res.returncode == 0, res.stderr[-2000:]
    made = {f for job in _planned_jobs(res) for f in job["output"]}
    assert {"results/models/arith/base", "results/runs/arith/grpo-s0/iter_4/model",
            "results/eval/intfn/mintrl-proxy/iter_2/metrics.json"} <= made
    assert not any(f.startswith("results/data/") and "filtered" not in f for f in made)


def test_one_core_pretrains_the_weights_two_cores_do(finished_run, tmp_path):
    """The thread count changes a float sum's order, so pre-training runs its role's threads
    (tasks.<task>.<role>.threads) whatever --cores grants: `--cores 1` gives the same lab."""
    import torch
    from safetensors.torch import load_file

    res = _snakemake(tmp_path, "results/models/arith/base", cores=1)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "threads=2" in (tmp_path / "results/logs/pretrain/arith_base.log").read_text()
    one = load_file(tmp_path / "results/models/arith/base/model.safetensors")
    two = load_file(finished_run / "results/models/arith/base/model.safetensors")
    assert one.keys() == two.keys() and all(torch.equal(one[k], two[k]) for k in one)


def test_extending_a_finished_run_continues_it(finished_run):
    res = _snakemake(finished_run, "-n", "--config", "rl={'iterations': 6}")
    assert res.returncode == 0, res.stderr[-2000:]
    planned = " ".join(_planned(res))
    # the new iterations 5-6 of the runs that follow rl.iterations, from the kept iteration 4
    assert "results/runs/arith/grpo-s0/iter_6/model" in planned
    assert "results/runs/intfn/mintrl-proxy/iter_5/handoff/model" in planned
    for it in (1, 2, 3, 4):
        assert f"/iter_{it}/" not in planned
    assert "sft" not in planned and "models/" not in planned


def test_named_targets_run_the_other_seeds_and_the_ablations(finished_run):
    # the main command ran the first seed of each main-table row only
    assert not (finished_run / "results/runs/arith/grpo-s1").exists()
    planned = " ".join(_planned(_snakemake(finished_run, "-n", "main_table")))
    assert "results/runs/arith/grpo-s1/iter_4/model" in planned
    assert "grpo-s0" not in planned and "grpo-lr" not in planned
    assert "results/summary/main_table/table.md" in planned
    planned = " ".join(_planned(_snakemake(finished_run, "-n", "ablation_lr")))
    assert "results/runs/arith/grpo-lr0.001-tasksarith-s0/iter_2/model" in planned
    assert "grpo-s1" not in planned and "results/summary/ablation_lr/table.md" in planned
    planned = " ".join(_planned(_snakemake(finished_run, "-n", "sweep")))
    assert "grpo-s1" in planned and "grpo-lr0.001-tasksarith-s0" in planned


def test_the_snakemake_report_holds_the_tables_and_plots(finished_run):
    out = finished_run / "report.html"
    res = _snakemake(finished_run, "--report", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    html = out.read_text(errors="replace")
    assert "table.md" in html and "reward.png" in html and "bootstrap 95" in html


def test_the_main_table_can_stop_early_for_every_pair_and_the_sweep_continues(tmp_path):
    res = _snakemake(tmp_path, "-n", "--config", "main_iterations=2")
    assert res.returncode == 0, res.stderr[-2000:]
    planned = " ".join(_planned(res))
    assert "results/runs/arith/grpo-s0/iter_2/model" in planned
    assert "results/eval/arith/grpo-s0/iter_2/metrics.json" in planned
    assert "grpo-s0/iter_3" not in planned and "grpo-s0/iter_4" not in planned
    assert "results/tracking/grpo-s0/upto_2.json" in planned
    # `main_table`: every pair of the same rows, stopped at the same iteration
    planned = " ".join(_planned(_snakemake(tmp_path, "-n", "main_table", "--config",
                                           "main_iterations=2")))
    assert "results/eval/arith/grpo-s1/iter_2/metrics.json" in planned
    assert "/iter_3" not in planned and "/iter_4" not in planned
    # the same runs, continued to their `iterations` by the sweep
    planned = " ".join(_planned(_snakemake(tmp_path, "-n", "sweep", "--config",
                                           "main_iterations=2")))
    assert "results/runs/arith/grpo-s0/iter_4/model" in planned
    assert "results/tracking/grpo-s0/upto_4.json" in planned


def test_an_ablation_table_shows_the_reference_row_on_its_own_tasks(tmp_path):
    res = _snakemake(tmp_path, "-n", "ablation_lr", "--config", "ablation_reference=grpo")
    assert res.returncode == 0, res.stderr[-2000:]
    planned = " ".join(_planned(res))
    # the reference row, at the ablation's length (2 iterations), not its own end (4)
    assert "results/eval/arith/grpo-s0/iter_2/metrics.json" in planned
    assert "results/eval/arith/grpo-s0/iter_4/metrics.json" not in planned
    assert "results/runs/intfn/grpo-s0" not in planned  # the ablation is arith only
    res = _snakemake(tmp_path, "-n", "--config", "ablation_reference=nope")
    assert res.returncode != 0
    assert "ablation_reference: no main-table row 'nope'" in res.stdout + res.stderr


def test_tune_scores_grid_points_on_validation_and_writes_them_into_a_config(finished_run,
                                                                             tmp_path):
    import shutil

    import yaml

    from mintrl import tune
    from mintrl.config import load_config
    from mintrl.config.runs import resolve_runs

    res = _snakemake(finished_run, "tune")
    assert res.returncode == 0, res.stderr[-3000:]
    m = json.loads((finished_run / "results/tune/arith/tune-grpo-1/metrics.json").read_text())
    assert list(m["splits"]) == ["validation"] and m["samples"] == 2  # never the reported splits
    chosen = yaml.safe_load((finished_run / "results/tune/chosen.yaml").read_text())
    assert set(chosen) == {"grpo", "mintrl-proxy"}
    # every row over the same learning rates, crossed with its own knob
    for row, knob in (("grpo", "clip_eps"), ("mintrl-proxy", "beta2")):
        grid = chosen[row]["grid"]
        assert [g["values"]["lr"] for g in grid] == [1.0e-4, 1.0e-3, 3.0e-3]
        assert all(knob in g["values"] for g in grid)
        # the guard pairs each point with the base on the easy (known-fact) problems
        assert all(len(g["guard"]) == 3 for g in grid)
        allowed = [g for g in grid if not g["rejected"]] or grid
        assert chosen[row]["pass@1"] == max(g["pass@1"] for g in allowed)
    assert (finished_run / "results/tune/arith/lab/base/samples.parquet").exists()
    config = tmp_path / "config.yaml"
    shutil.copy(ROOT / "tests" / "micro.yaml", config)
    for _ in range(2):  # applying again replaces the block
        tune.main(["--apply", str(finished_run / "results/tune/chosen.yaml"), "--to", str(config)])
    text = config.read_text()
    assert text.count("# >>> tuned") == 1 and "validation Pass@1" in text
    cfg = load_config(config)
    assert cfg.tuned["grpo"] == chosen["grpo"]["values"]
    runs = resolve_runs(cfg)
    assert runs["grpo-s0"].spec.lr == chosen["grpo"]["values"]["lr"]  # same run name, tuned
    assert runs["tune-grpo-0"].spec.lr == 1.0e-4  # tuning runs start from the row's own values


def test_tune_apply_refuses_values_that_break_the_config(tmp_path):
    import shutil

    import pytest

    from mintrl import tune

    config = tmp_path / "config.yaml"
    shutil.copy(ROOT / "tests" / "micro.yaml", config)
    before = config.read_text()
    chosen = tmp_path / "chosen.yaml"
    chosen.write_text("grpo: {values: {lr: -1.0}, pass@1: 0.5, grid: []}\n")
    with pytest.raises(SystemExit, match="nothing written"):
        tune.main(["--apply", str(chosen), "--to", str(config)])
    assert config.read_text() == before


def test_a_configfile_given_replaces_the_default_config_not_merges_into_it(tmp_path):
    # A working copy has config/config.yaml (the fact toy); a user who names another config
    # must get that config's tasks only: merged, the length toy would keep the default's fact
    # table and its medium split, and the paper setting would run the toy tasks as well.
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text((ROOT / "config" / "config.yaml").read_text())
    import yaml

    def tasks(config):
        # one cheap job (a task's splits), so Snakemake writes the config the jobs read
        res = _snakemake(tmp_path, "--quiet", "rules", "--forceall",
                         "results/data/arith/train.parquet", config=config)
        assert res.returncode == 0, res.stderr[-3000:]
        resolved = yaml.safe_load((tmp_path / "results" / "config" / "resolved.yaml").read_text())
        return resolved["tasks"]

    length = tasks(ROOT / "config" / "length_toy.yaml")
    assert [length[t]["facts"] for t in ("arith", "intfn")] == [None, None]
    assert [length[t]["medium"] for t in ("arith", "intfn")] == [None, None]
    default = tasks(None)  # no --configfile: the working copy's config/config.yaml
    assert default["arith"]["facts"]["partial"] == [0.2, 0.35, 0.5]
