import copy
import re

import pytest
import yaml

from mintrl.config import ConfigError, load_config, parse_config

DEFAULT = "config/config.yaml"


def _default():
    with open(DEFAULT) as f:
        return yaml.safe_load(f)


def test_default_config_is_valid():
    cfg = load_config(DEFAULT)
    assert set(cfg.tasks) == {"arith", "intfn"}
    # the gap is one of knowledge, at the same lengths: the base reads every split's length,
    # and its data shows the facts with gaps where the teacher's shows them all
    for spec in cfg.tasks.values():
        assert spec.eval_splits == ("easy", "medium", "hard")
        for split in (spec.easy, spec.medium, spec.hard, spec.train):
            assert spec.base.difficulties.lo <= split.lo and split.hi <= spec.base.difficulties.hi
        assert spec.base.difficulties == spec.teacher.difficulties
        assert (spec.base.facts, spec.teacher.facts) == ("gapped", "true")
    # the length toy, kept for comparison: the base never trains on the hard split's lengths
    for spec in load_config("config/length_toy.yaml").tasks.values():
        assert spec.eval_splits == ("easy", "hard")
        assert spec.base.difficulties.hi < spec.hard.lo <= spec.teacher.difficulties.hi


@pytest.mark.parametrize("change,message", [
    ({"medium": None}, "medium`: required with `facts`"),
    ({"facts": None}, "`medium`: only with `facts`"),
    ({"facts": {"known": 5, "partial": [0.3, 0.3, 0.3], "unknown": 3}}, "at most 10"),
    ({"facts": {"partial": [1.5]}}, "tasks.arith.facts.partial.0"),
])
def test_a_fact_table_that_cannot_be_is_a_one_line_error_naming_its_key(change, message):
    data = _default()
    data["tasks"]["arith"].update(change)
    with pytest.raises(ConfigError, match=re.escape(message)) as err:
        parse_config(data, "config.yaml")
    assert "tasks.arith" in str(err.value)


def test_gapped_facts_need_a_table():
    with open("config/length_toy.yaml") as f:
        data = yaml.safe_load(f)
    data["tasks"]["arith"]["base"]["facts"] = "gapped"
    with pytest.raises(ConfigError, match="`facts: gapped` needs the task's `facts` table"):
        parse_config(data, "length_toy.yaml")


@pytest.mark.parametrize(
    "path,value,key",
    [
        (("tasks", "arith", "base", "steps"), 0, "tasks.arith.base.steps"),
        (("tasks", "arith", "base", "stepz"), 5, "tasks.arith.base.stepz"),  # typo
        (("tasks", "intfn", "hard", "lo"), 9, "tasks.intfn.hard"),  # lo > hi
        (("evaluation", "samples"), "many", "evaluation.samples"),
        (("threads",), -1, "threads"),
        (("vllm_gpu_memory",), 1.5, "vllm_gpu_memory"),  # a share of one GPU
        (("rl", "group_size"), 1, "rl.group_size"),
        (("rl", "engine"), "vllm2", "rl.engine"),
        (("rl", "generation_cache"), "paged", "rl.generation_cache"),
        (("rl", "minibatch_size"), 48, "rl"),  # not a multiple of micro_batch_size (32)
        (("runs", 0, "overrides", "lr"), -1.0, "runs.0.overrides.lr"),
        (("runs", 0, "overrides", "sampling.temprature"), 0.7,
         "runs.0.overrides.sampling.temprature"),
        (("runs", 0, "overrides", "tasks"), ["chess"], "runs.0.overrides.tasks"),
        (("runs", 0, "method"), "ppo", "runs.0.method"),
        (("runs", 0, "seedz"), [1], "runs.0.seedz"),
        (("runs", 0, "lab_seeds"), [0, 1], "runs.0.lab_seeds"),  # 3 RL seeds, 2 lab seeds
        (("runs", 1, "lab_seeds"), [0, -1, 2], "runs.1.lab_seeds.1"),
        (("tasks", "arith", "teacher", "seed"), 1000, "tasks.arith.teacher.seed"),  # lab 1's
    ],
)
def test_bad_key_or_value_is_named(path, value, key):
    data = copy.deepcopy(_default())
    data.pop("tuned", None)  # tuned values replace a row's overrides (runs.0.overrides.lr here)
    node = data
    for p in path[:-1]:
        node = node.setdefault(p, {}) if isinstance(node, dict) else node[p]
    node[path[-1]] = value
    with pytest.raises(ConfigError) as err:
        parse_config(data, "my.yaml")
    assert key in str(err.value) and "my.yaml" in str(err.value)


def test_a_static_cache_on_the_vllm_engine_is_refused_naming_the_key():
    data = _default()
    data["rl"] |= {"engine": "vllm", "generation_cache": "static"}
    with pytest.raises(ConfigError, match="generation_cache"):
        parse_config(data, "my.yaml")


def _with_runs(runs):
    """The default config with other runs (and no tuning grid or reference naming its rows)."""
    data = _default()
    for key in ("tune", "tuned", "ablation_reference"):
        data.pop(key, None)
    data["runs"] = runs
    return data


def test_runs_are_base_run_plus_overrides_plus_seed():
    from mintrl.config.runs import resolve_runs

    data = _with_runs(None)
    data["runs"] = [{"method": "grpo", "seeds": [0, 1]},
                    {"method": "grpo", "overrides": {"lr": 3e-5, "sampling.temperature": 0.7}}]
    runs = resolve_runs(parse_config(data))
    assert list(runs) == ["grpo-s0", "grpo-s1", "grpo-lr3e-05-temperature0.7-s0"]
    tuned = runs["grpo-lr3e-05-temperature0.7-s0"].spec
    assert tuned.lr == 3e-5 and tuned.sampling.temperature == 0.7
    assert tuned.group_size == data["rl"]["group_size"]  # untouched keys come from `rl`
    assert runs["grpo-s1"].seed == 1


def test_two_runs_with_one_name_are_refused():
    data = _with_runs([{"method": "grpo"}, {"method": "grpo"}])
    with pytest.raises(ConfigError, match="runs.1: run name 'grpo-s0' is used twice"):
        parse_config(data)


def test_segments_end_at_evaluation_points_and_the_last_iteration():
    from mintrl.config import RunSpec
    from mintrl.config.runs import kept_iterations, segment_ends

    spec = RunSpec(iterations=25, iterations_per_job=10, eval_every=15)
    assert kept_iterations(spec) == [15, 25]
    assert segment_ends(spec) == [10, 15, 20, 25]


def test_committed_json_schema_is_generated_from_the_model():
    import json
    from pathlib import Path

    from mintrl.config import json_schema

    committed = json.loads(Path("workflow/schemas/config.schema.json").read_text())
    assert committed == json_schema(), "run: python -m mintrl.config --schema " \
        "workflow/schemas/config.schema.json"


def test_json_schema_rejects_what_the_model_rejects():
    import jsonschema

    from mintrl.config import json_schema

    data = _default()
    data["rl"]["stepz"] = 1
    with pytest.raises(jsonschema.ValidationError, match="stepz"):
        jsonschema.validate(data, json_schema())


def test_which_segments_load_the_teacher_and_what_each_method_optimises():
    from mintrl.config import RunSpec

    opd = RunSpec(method="opd", iterations=10)
    mentor = RunSpec(method="mentor", iterations=10, intervention_iterations=4)
    mintrl = RunSpec(method="mintrl", iterations=10, intervention_iterations=4)
    self_oracle = RunSpec(method="mintrl", iterations=10, intervener="self")
    assert [opd.teacher_needed(t) for t in (1, 9)] == [True, True]
    assert [mentor.teacher_needed(t) for t in (4, 5)] == [True, False]
    assert [mintrl.teacher_needed(t) for t in (4, 5)] == [True, False]
    assert not self_oracle.teacher_needed(1)
    assert not RunSpec(method="sft_grpo").teacher_needed(1)  # only its SFT stage uses it
    assert [RunSpec(method=m).objective_at(1) for m in ("grpo", "sft_grpo", "opd")] == \
        ["grpo", "grpo", "opd"]
    assert RunSpec(method="mintrl").rollouts_per_prompt == 8 == RunSpec().rollouts_per_prompt


def test_an_intervention_phase_beyond_the_run_is_refused_naming_the_key():
    data = _with_runs([{"method": "mintrl", "overrides": {"intervention_iterations": 99}}])
    with pytest.raises(ConfigError, match=r"runs\.0\.overrides\.intervention_iterations: T_I "
                                          r"\(99\) is beyond the iterations"):
        parse_config(data)
    data = _with_runs([{"method": "mentor"}])
    data["rl"]["intervention_iterations"] = data["rl"].get("iterations", 40) + 1
    with pytest.raises(ConfigError, match=r"rl\.intervention_iterations"):
        parse_config(data)


def test_committed_config_reference_is_generated_from_the_model():
    """docs/config.md lists every key of the model with its default and range."""
    from pathlib import Path

    from mintrl.config_reference import reference

    text = reference()
    assert Path("docs/config.md").read_text() == text, \
        "run: python -m mintrl.config_reference docs/config.md"
    assert "| `rl.beta2` | float | `0.01` | > 0 |" in text
    assert "| `tasks.<task>.benchmarks.<benchmark>.sha256` |" in text
    assert "| `runs.<i>.overrides` |" in text


def test_the_workflow_is_snakefmt_clean():
    """Snakemake's formatter (line length 100, pyproject.toml) leaves every rule file as is."""
    import subprocess
    import sys
    from pathlib import Path

    snakefmt = Path(sys.executable).with_name("snakefmt")
    res = subprocess.run([str(snakefmt), "--check", "workflow"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr + "\nrun: snakefmt workflow"


def test_lab_seeds_pair_with_the_rl_seeds_and_name_the_runs():
    from mintrl.config.runs import resolve_runs

    data = _with_runs([{"method": "grpo", "seeds": [0, 1, 2], "lab_seeds": [0, 1, 2]},
                       {"method": "opd", "name": "opd", "seeds": [0, 1], "lab_seeds": [0, 1]},
                       {"method": "mentor", "name": "solo", "seeds": [3], "lab_seeds": [2]}])
    runs = resolve_runs(parse_config(data))
    assert list(runs) == ["grpo-s0", "grpo-lab1-s1", "grpo-lab2-s2", "opd-s0", "opd-lab1-s1",
                          "solo"]
    assert [(runs[n].lab_seed, runs[n].seed) for n in runs] == [(0, 0), (1, 1), (2, 2), (0, 0),
                                                                  (1, 1), (2, 3)]
    # the main command runs each row's first pair
    assert [n for n, r in runs.items() if r.primary] == ["grpo-s0", "opd-s0", "solo"]
    assert {r.entry for r in runs.values()} == {"grpo", "opd", "solo"}


def test_without_lab_seeds_every_rl_seed_is_on_lab_zero():
    from mintrl.config import RunEntry
    from mintrl.config.runs import resolve_runs

    assert RunEntry(method="grpo", seeds=[4, 5]).pair_lab_seeds == [0, 0]
    runs = resolve_runs(parse_config(_with_runs([{"method": "grpo", "seeds": [0, 1]}])))
    assert list(runs) == ["grpo-s0", "grpo-s1"]  # the names they had before lab seeds
    assert [r.lab_seed for r in runs.values()] == [0, 0]


def test_the_default_main_table_pairs_three_labs_and_the_rest_stays_on_lab_zero():
    from mintrl.config.runs import resolve_runs

    runs = resolve_runs(load_config(DEFAULT))
    paired = {"main", "control"}  # the wrong-correction control is paired like the table
    for group in paired:
        pairs = {(r.lab_seed, r.seed) for r in runs.values() if r.group == group}
        assert pairs == {(0, 0), (1, 1), (2, 2)}, group
    assert runs["grpo-s0"].primary and runs["mintrl-const-lab2-s2"].lab_seed == 2
    # ablations and tuning: lab 0; an ablation's further pairs only for `snakemake claims`
    others = [r for r in runs.values() if r.group not in (*paired, "claims")]
    assert others and all(r.lab_seed == 0 for r in others)
    assert all(r.seed == 0 for r in others if r.group == "tune")


def test_tuning_runs_use_the_rows_first_pair():
    from mintrl.config.runs import resolve_runs

    data = _with_runs([{"method": "grpo", "name": "grpo", "seeds": [5, 6],
                        "lab_seeds": [2, 0]}])
    data["tune"] = {"tasks": ["arith"], "grids": {"grpo": {"lr": [1e-5, 1e-4]}}}
    tune = [r for r in resolve_runs(parse_config(data)).values() if r.group == "tune"]
    assert [(r.name, r.lab_seed, r.seed) for r in tune] == [("tune-grpo-0", 2, 5),
                                                             ("tune-grpo-1", 2, 5)]


def test_lab_model_names_and_their_inverse():
    from mintrl.config.runs import lab_model, lab_suffix, run_lab_seed, split_lab_model

    assert [lab_model("base", 0), lab_model("teacher", 2)] == ["base", "teacher-lab2"]
    assert lab_suffix(0) == "" and lab_suffix(3) == "-lab3"
    for name in ("base", "teacher", "base-lab1", "teacher-lab12"):
        role, lab = split_lab_model(name)
        assert lab_model(role, lab) == name
    for name in ("grpo-s0", "base-lab0", "base-lab", "base-lab1-s1", "teachers"):
        assert split_lab_model(name) is None, name
    assert run_lab_seed({}, "base-lab3") == 3 and run_lab_seed({}, "grpo-s0") == 0
    with pytest.raises(ValueError, match="role"):
        lab_model("student", 1)


def test_a_run_named_like_a_lab_model_is_refused():
    data = _with_runs([{"method": "grpo", "name": "base-lab1"}])
    with pytest.raises(ConfigError, match="run name 'base-lab1' is used twice \\(or is reserved"):
        parse_config(data)


def test_a_dataset_task_has_only_lab_seed_zero():
    """Its base and teacher are fetched (pinned weights): no pre-training to seed."""
    with open("config/paper.yaml") as f:
        data = yaml.safe_load(f)
    data["runs"][0]["lab_seeds"] = [0, 1, 2]
    with pytest.raises(ConfigError, match=r"runs\.0\.lab_seeds: task '\w+' fetches its base"):
        parse_config(data, "paper.yaml")
