"""The paper setting's pipeline offline: dataset tasks (config, fetch, prepare, chat prompts)
and the whole Snakemake DAG, run end to end on fixtures in the datasets' real formats with
local models, and `config/paper.yaml`'s DAG built without a network."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from mintrl.config import ConfigError, load_config, parse_config
from mintrl.config.runs import resolve_runs

ROOT = Path(__file__).resolve().parents[1]
# A chat template in the shape of Qwen3's: a non-thinking answer opens with an empty think block.
TEMPLATE = ("{% for m in messages %}<u>{{ m['content'] }}</u>\n{% endfor %}"
            "{% if add_generation_prompt %}<a>{% if enable_thinking is defined and "
            "not enable_thinking %}<think></think>{% endif %}{% endif %}")


def _chat_model(path: Path, seed: int) -> Path:
    """A tiny random Qwen3 over the character tokenizer, with a chat template, saved as a
    Hugging Face folder (what a hub snapshot is)."""
    from mintrl.config import ModelArch
    from mintrl.models import build_model
    from mintrl.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer()
    tok.chat_template = TEMPLATE
    arch = ModelArch(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2,
                     num_kv_heads=1, max_positions=512)
    build_model(arch, tok, seed).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _math_fixtures(root: Path) -> dict[str, Path]:
    """AceReason-Math's math.jsonl (problem, answer strings) and a MathArena parquet."""
    train = root / "acereason" / "math.jsonl"
    train.parent.mkdir(parents=True)
    rows = [{"problem": f"What is ${a}+{b}$?", "answer": str(a + b)}
            for a in range(1, 6) for b in range(1, 5)]
    rows.append({"problem": "", "answer": "3"})  # a bad row: counted, named, skipped
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench = root / "aime25" / "train.parquet"
    bench.parent.mkdir()
    pq.write_table(pa.table({"problem_idx": pa.array([1, 2, 3], pa.int64()),
                             "problem": ["Find $17+53$.", "Compute $2^{3}$.", "Find $1+1$."],
                             "answer": pa.array([70, 8, 2], pa.int64())}), bench)
    return {"train": train, "aime25": bench.parent}


def _task(fx, base, teacher, **extra):
    return {"kind": "dataset", "reward": "math",
            "train": {"acereason": {"format": "acereason_math", "path": str(fx["train"])}},
            "benchmarks": {"aime25": {"format": "matharena", "path": str(fx["aime25"])}},
            "validation_size": 4, "base": {"path": str(base)}, "teacher": {"path": str(teacher)},
            "max_new_tokens": 24, **extra}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    fx = _math_fixtures(root / "data")
    base = _chat_model(root / "models" / "base", 0)
    teacher = _chat_model(root / "models" / "teacher", 1)
    cfg = {
        "seed": 0, "threads": 1,
        "tasks": {"math_small": _task(fx, base, teacher, rl={"chunk_tokens": 8})},
        "evaluation": {"samples": 2, "pass_k": [1, 2], "batch_size": 64},
        "filter": {"samples": 2, "keep_solved": 1.0},
        "rl": {"iterations": 2, "iterations_per_job": 2, "eval_every": 2,
               "prompts_per_iteration": 4, "group_size": 4, "n_semi": 2, "n_control": 2,
               "minibatch_size": 8, "micro_batch_size": 4, "max_reviews": 2,
               "correction_tokens": 8, "intervention_iterations": 2, "judge": "chat",
               "intervener": "chat", "lr": 1.0e-4},
        "runs": [{"method": "grpo", "name": "grpo"},
                 {"method": "mintrl", "name": "mintrl-const",
                  "overrides": {"anchor": "const", "const_c": -2.0}}],
    }
    path = root / "paper_micro.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return root, path, cfg


def _snakemake(workdir: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"),
           "--directory", str(workdir), "--configfile", str(config), "--cores", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def test_paper_config_builds_its_whole_dag_offline(tmp_path):
    """Every method and ablation on four tasks, six benchmarks: planned without a network."""
    res = _snakemake(tmp_path, ROOT / "config" / "paper.yaml", "sweep", "-n", "--quiet", "rules")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    counts = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    # 4 tasks x (base, teacher); math 1 + 3 sources, code 3 + 3: 2 x (4 + 6) fetches
    assert counts["fetch_model"] == 8 and counts["fetch_data"] == 20
    assert counts["prepare_benchmark"] == 12 and counts["prepare_train"] == 4
    assert "pretrain" not in counts and "prepare" not in counts  # nothing toy in it
    cfg = load_config(ROOT / "config" / "paper.yaml")
    assert cfg.tasks["code_1p7b"].eval_splits == ("livecodebench", "humaneval_plus", "mbpp_plus")
    runs = resolve_runs(cfg)
    assert runs["mintrl-const-s0"].spec_for("math_1p7b").chunk_tokens == 512
    assert runs["mintrl-const-s0"].spec_for("code_4b").chunk_tokens == 1024
    assert runs["C256"].spec_for("math_1p7b").chunk_tokens == 256  # a run's override wins


def test_every_paper_source_is_pinned():
    """A branch name would let a rerun fetch other weights or problems: every Hub model and
    dataset file of the paper's setting names a commit, every release file a sha256."""
    import re

    def commit(rev):
        return re.fullmatch(r"[0-9a-f]{40}", rev or "")

    cfg = load_config(ROOT / "config" / "paper.yaml")
    unpinned = []
    for name, task in cfg.tasks.items():
        for role in ("base", "teacher"):
            ref = getattr(task, role)
            if ref.hub and not commit(ref.revision):
                unpinned.append(f"{name}.{role}: {ref.hub}@{ref.revision}")
        for part in ("train", "benchmarks"):
            for src_name, src in getattr(task, part).items():
                ok = (commit(src.revision) if src.hub
                      else bool(src.sha256) if src.url else True)
                if not ok:
                    unpinned.append(f"{name}.{part}.{src_name}")
    assert not unpinned, unpinned


def test_dataset_task_keys_are_checked_naming_the_key(lab):
    _, path, cfg = lab
    def bad(mutate):
        data = json.loads(json.dumps(cfg))
        mutate(data)
        with pytest.raises(ConfigError) as err:
            parse_config(data, "x.yaml")
        return str(err.value)

    task = lambda d: d["tasks"]["math_small"]  # noqa: E731
    assert "tasks.math_small.base: Value error, a `hub` model needs a `revision`" in bad(
        lambda d: task(d).update(base={"hub": "Qwen/x"}))
    assert "needs `file` and a `revision`" in bad(
        lambda d: task(d)["benchmarks"]["aime25"].update(path=None, hub="MathArena/aime_2025"))
    assert "tasks.math_small.rl.iterations: shapes the run's jobs" in bad(
        lambda d: task(d)["rl"].update(iterations=5))
    assert "tasks.math_small.rl.chunk_size: not a key of the run" in bad(
        lambda d: task(d)["rl"].update(chunk_size=5))
    assert "runs.1.overrides.judge: task 'math_small' reads its problems from datasets" in bad(
        lambda d: d["runs"][1]["overrides"].update(judge="oracle"))
    assert "intervener: self_chat" in bad(
        lambda d: d["runs"][1]["overrides"].update(intervener="self"))
    assert "source name 'train'" in bad(
        lambda d: task(d)["benchmarks"].update(train=task(d)["benchmarks"]["aime25"]))


def test_chat_prompts_render_the_template_with_thinking_disabled(lab):
    from transformers import AutoTokenizer

    from mintrl.prompting import encode_prompts, prompt_text
    from mintrl.tasks import Problem

    root, _, _ = lab
    tok = AutoTokenizer.from_pretrained(root / "models" / "base")
    chat = Problem("p", "math", 0, "Find 2+2.", "", {"answer": "4"}, chat=True)
    plain = Problem("q", "math", 0, "Find 2+2.", "", {"answer": "4"})
    assert prompt_text(tok, chat) == "<u>Find 2+2.</u>\n<a><think></think>"
    assert prompt_text(tok, plain) == "Find 2+2."
    ids = encode_prompts(tok, [chat, plain])
    assert tok.decode(ids[0]) == prompt_text(tok, chat) and tok.decode(ids[1]) == "Find 2+2."
    from mintrl.tokenizer import build_char_tokenizer

    with pytest.raises(ValueError, match="no chat template"):
        encode_prompts(build_char_tokenizer(), [chat])


def test_fetch_links_a_local_model_and_records_what_it_fetched(lab, tmp_path):
    from mintrl.fetch import main as fetch

    root, _, _ = lab
    out = tmp_path / "models" / "base"
    fetch(["model", "--path", str(root / "models" / "base"), "--out", str(out)])
    assert (out / "config.json").is_symlink() and (out / "model.safetensors").exists()
    report = json.loads((tmp_path / "models" / "base.json").read_text())
    assert report["path"] == str(root / "models" / "base") and "config.json" in report["files"]
    with pytest.raises(SystemExit, match="pass the pinned --revision"):
        fetch(["model", "--hub", "Qwen/Qwen3-1.7B", "--out", str(out)])
    with pytest.raises(SystemExit, match="not a Hugging Face model folder"):
        fetch(["model", "--path", str(tmp_path), "--out", str(tmp_path / "x")])


def test_fetch_checks_a_release_file_against_its_sha256(tmp_path):
    import hashlib

    from mintrl.fetching import download

    src = tmp_path / "HumanEvalPlus.jsonl.gz"
    src.write_bytes(b"release bytes")
    good = hashlib.sha256(b"release bytes").hexdigest()
    got = download(src.as_uri(), good, tmp_path / "cache")
    assert got.read_bytes() == b"release bytes" and got.name == src.name
    with pytest.raises(SystemExit, match="the config pins"):
        download(src.as_uri(), "0" * 64, tmp_path / "cache2")
    assert not any((tmp_path / "cache2").rglob("*.gz"))  # nothing half-written left


def test_the_pipeline_runs_a_dataset_task_end_to_end(lab):
    """fetch (local models) -> prepare (train + validation held out; the benchmark) ->
    filter -> GRPO and MInTRL with the chat judge and intervener -> evaluation -> table."""
    root, path, _ = lab
    work = root / "work"
    res = _snakemake(work, path)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    r = work / "results"
    train = pq.read_table(r / "data/math_small/train.parquet").to_pandas()
    val = pq.read_table(r / "data/math_small/validation.parquet").to_pandas()
    assert len(val) == 4 and len(train) == 16 and not set(train["id"]) & set(val["id"])
    assert train["chat"].all() and (train["task"] == "math").all()
    report = json.loads((r / "data/math_small/train.report.json").read_text())
    assert report["bad"] == {"acereason:acereason-20": "missing or empty 'problem'"}
    bench = pq.read_table(r / "data/math_small/aime25.parquet").to_pandas()
    assert list(bench["id"]) == ["aime25-1", "aime25-2", "aime25-3"]
    assert (r / "models/math_small/base/config.json").is_symlink()
    # rollouts were generated from the chat-rendered prompt
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(r / "models/math_small/base")
    roll = pq.read_table(r / "runs/math_small/mintrl-const/iter_1/rollouts.parquet").to_pandas()
    prompt = tok.decode(list(roll["prompt_ids"].iloc[0]))
    assert prompt.startswith("<u>") and prompt.endswith("<a><think></think>")
    assert set(roll["kind"]) == {"control", "semi"}
    metrics = json.loads((r / "eval/math_small/grpo/iter_2/metrics.json").read_text())
    assert metrics["task"] == "math_small" and set(metrics["splits"]) == {"aime25"}
    table = (r / "summary/main/table.csv").read_text()
    assert "math_small/aime25" in table and "grpo" in table and "mintrl-const" in table
    # no reference steps in these datasets: said so, not shown as 0 % strict correctness
    assert "Not graded" in (r / "summary/main/quality.md").read_text()


def test_the_slurm_profile_gives_each_gpu_job_one_gpu(tmp_path):
    """The cluster profile, planned dry: GPU stages on the GPU partition with one GPU each,
    downloads on CPU nodes."""
    res = _snakemake(tmp_path, ROOT / "config" / "paper.yaml", "-n", "--workflow-profile",
                     str(ROOT / "workflow" / "profiles" / "slurm"))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    blocks = {}
    for block in out.split("\nrule ")[1:]:
        name = block.split(":")[0].strip()
        res_line = next((ln for ln in block.splitlines() if "resources:" in ln), "")
        blocks.setdefault(name, res_line)
    for rule in ("segment", "segment_handoff", "evaluate_run", "filter_prompts", "sft"):
        assert "gpu=1" in blocks[rule] and "slurm_partition=gpu" in blocks[rule], rule
    assert "gpu=" not in blocks["fetch_model"] and "slurm_partition=cpu" in blocks["fetch_model"]
