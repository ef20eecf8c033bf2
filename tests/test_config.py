import copy

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
    # the base's knowledge gap: it never trains on the hard split's lengths
    for spec in cfg.tasks.values():
        assert spec.base.difficulties.hi < spec.hard.lo <= spec.teacher.difficulties.hi


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
    from mintrl.runs import resolve_runs

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
    from mintrl.runs import kept_iterations, segment_ends

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
