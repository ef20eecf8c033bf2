"""The stage CLIs end to end on the micro config: prepare -> pretrain -> evaluate."""

import json

import pandas as pd
import pytest

from mintrl import evaluate, prepare, pretrain
from mintrl.config import load_config

MICRO = "tests/micro.yaml"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    prepare.main(["--config", MICRO, "--task", "arith", "--out", str(root / "data")])
    pretrain.main(["--config", MICRO, "--task", "arith", "--role", "base",
                   "--exclude", str(root / "data"), "--out", str(root / "base")])
    return root


def test_prepare_writes_distinct_splits_of_the_configured_sizes(lab):
    sizes = load_config(MICRO).tasks["arith"].sizes
    frames = {s: pd.read_parquet(lab / "data" / f"{s}.parquet")
              for s in ("train", "validation", "easy", "medium", "hard")}
    for split, df in frames.items():
        assert len(df) == getattr(sizes, split) and set(df["split"]) == {split}
    ids = pd.concat(frames.values())["id"]
    assert ids.is_unique
    # the fact toy: each evaluation split looks up its kind of fact, validation all three in
    # equal thirds, train the config's mix (1/4 known, 1/2 partial, 1/4 unknown)
    kinds = {s: [json.loads(x)["facts"]["kind"] for x in df["spec"]] for s, df in frames.items()}
    assert {s: set(kinds[s]) for s in ("easy", "medium", "hard")} == {
        "easy": {"known"}, "medium": {"partial"}, "hard": {"unknown"}}
    assert sorted(kinds["validation"]) == ["known"] * 3 + ["partial"] * 3 + ["unknown"] * 3
    assert sorted(kinds["train"]) == ["known"] * 4 + ["partial"] * 8 + ["unknown"] * 4
    assert all(frames[s]["difficulty"].between(2, 3).all() for s in frames)


def test_pretrain_writes_a_loadable_checkpoint(lab):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(lab / "base")
    tok = AutoTokenizer.from_pretrained(lab / "base")
    assert model.config.vocab_size == len(tok)
    report = json.loads((lab / "base.json").read_text())
    assert report["final_loss"] < report["first_loss"]


def test_evaluate_writes_metrics_and_one_row_per_sample(lab):
    out = lab / "eval"
    evaluate.main(["--config", MICRO, "--checkpoint", str(lab / "base"), "--prompts",
                   str(lab / "data" / "easy.parquet"), str(lab / "data" / "hard.parquet"),
                   "--out", str(out)])
    metrics = json.loads((out / "metrics.json").read_text())
    samples = pd.read_parquet(out / "samples.parquet")
    assert len(samples) == (6 + 6) * 4
    for split in ("easy", "hard"):
        m = metrics["splits"][split]
        rows = samples[samples["split"] == split]
        assert m["pass@1"] == pytest.approx(rows["reward"].mean())
        assert m["pass@1"] <= m["pass@2"] <= m["pass@4"] <= 1
        assert m["strict"] <= m["step_accuracy"] + 1e-9  # strict samples have accuracy 1
        assert 0 <= m["lucky"] <= 1


def test_evaluate_reads_jsonl_with_a_named_reward(lab, tmp_path):
    rows = pd.read_parquet(lab / "data" / "easy.parquet").head(3)
    jsonl = tmp_path / "mine.jsonl"
    rows[["id", "prompt", "spec"]].to_json(jsonl, orient="records", lines=True)
    evaluate.main(["--config", MICRO, "--checkpoint", str(lab / "base"), "--prompts", str(jsonl),
                   "--reward", "arith", "--samples", "2", "--out", str(tmp_path / "ev")])
    metrics = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert metrics["splits"]["mine"]["problems"] == 3
    assert metrics["splits"]["mine"]["strict"] is None  # no reference steps: not graded


def test_filter_drops_always_solved_prompts_but_keeps_a_share(lab, tmp_path):
    from mintrl import filter as filter_stage

    filter_stage.main(["--config", MICRO, "--checkpoint", str(lab / "base"), "--prompts",
                       str(lab / "data" / "train.parquet"), "--out", str(tmp_path / "f.parquet"),
                       "--rates", str(tmp_path / "rates.parquet")])
    rates = pd.read_parquet(tmp_path / "rates.parquet")
    kept = pd.read_parquet(tmp_path / "f.parquet")
    assert len(rates) == 16 and (rates["samples"] == 4).all()
    assert set(kept["id"]) == set(rates.loc[rates["kept"], "problem_id"])
    assert rates.loc[rates["pass_rate"] < 1, "kept"].all()


def test_choose_prompts_keeps_the_configured_share_of_solved_ones():
    from mintrl.config import FilterSpec
    from mintrl.filtering import choose_prompts

    rates = pd.DataFrame({"problem_id": list("abcdefgh"),
                          "pass_rate": [1, 1, 1, 1, 0.5, 0, 1, 0.25]})
    kept = choose_prompts(rates, FilterSpec(keep_solved=0.4), seed=0)
    assert kept[rates["pass_rate"] < 1].all()
    assert kept[rates["pass_rate"] == 1].sum() == 2  # ceil(0.4 * 5)


def test_rollout_then_train_carry_a_checkpoint_and_optimizer_state(lab, tmp_path):
    from mintrl import rollout, train

    prompts = str(lab / "data" / "train.parquet")
    rollout.main(["--config", MICRO, "--run", "grpo-s0", "--task", "arith", "--checkpoint",
                  str(lab / "base"), "--prompts", prompts, "--out", str(tmp_path / "r1.parquet")])
    df = pd.read_parquet(tmp_path / "r1.parquet")
    spec = load_config(MICRO).rl
    assert len(df) == spec.prompts_per_iteration * spec.group_size
    assert (df["response_ids"].map(len) == df["logprobs"].map(len)).all()
    assert (df["provenance"].map(sum) == 0).all()  # on-policy: every token the policy's
    train.main(["--config", MICRO, "--run", "grpo-s0", "--init", str(lab / "base"),
                "--rollouts", str(tmp_path / "r1.parquet"), "--iteration", "1",
                "--out-model", str(tmp_path / "m1"), "--out-optim", str(tmp_path / "o1")])
    train.main(["--config", MICRO, "--run", "grpo-s0", "--init", str(tmp_path / "m1"),
                "--init-optim", str(tmp_path / "o1"), "--rollouts", str(tmp_path / "r1.parquet"),
                "--iteration", "2", "--out-model", str(tmp_path / "m2"),
                "--out-optim", str(tmp_path / "o2")])
    assert (tmp_path / "m2" / "model.safetensors").exists()
    assert (tmp_path / "o2" / "state").is_dir()


def test_train_names_a_file_that_is_not_a_rollouts_table(lab, tmp_path):
    from mintrl import train

    with pytest.raises(SystemExit, match="missing columns"):
        train.main(["--config", MICRO, "--run", "grpo-s0", "--init", str(lab / "base"),
                    "--rollouts", str(lab / "data" / "easy.parquet"), "--iteration", "1",
                    "--out-model", str(tmp_path / "m"), "--out-optim", str(tmp_path / "o")])


def test_sft_fine_tunes_on_teacher_trajectories_and_reports_its_compute(lab, tmp_path):
    from mintrl import sft

    out = tmp_path / "sft"
    sft.main(["--config", MICRO, "--run", "sft-grpo", "--task", "arith",
              "--teacher", str(lab / "base"), "--init", str(lab / "base"),
              "--prompts", str(lab / "data" / "train.parquet"), "--out", str(out)])
    m = json.loads((out / "metrics.json").read_text())
    assert m["samples"] == 16 * 2 and m["kept"] == m["samples"]  # micro: only_correct off
    assert m["sft/optimizer_steps"] == 2 * 4  # 2 epochs of 32 samples in minibatches of 8
    assert m["compute/flops_estimate"] > 0 and m["time/teacher_generate"] > 0
    assert (out / "model" / "model.safetensors").exists()
    samples = pd.read_parquet(out / "samples.parquet")
    assert len(samples) == 32 and set(samples["kind"]) == {"sft"}


def test_opd_training_without_a_teacher_is_refused(lab, tmp_path):
    from mintrl import rollout, train

    rollout.main(["--config", MICRO, "--run", "opd", "--task", "arith", "--checkpoint",
                  str(lab / "base"), "--prompts", str(lab / "data" / "train.parquet"),
                  "--out", str(tmp_path / "r.parquet")])
    with pytest.raises(SystemExit, match="needs the teacher"):
        train.main(["--config", MICRO, "--run", "opd", "--init", str(lab / "base"),
                    "--rollouts", str(tmp_path / "r.parquet"), "--iteration", "1",
                    "--out-model", str(tmp_path / "m"), "--out-optim", str(tmp_path / "o")])
    assert not (tmp_path / "m").exists()


STAGES = ["prepare", "pretrain", "evaluate", "filter", "rollout", "train", "segment",
          "sft", "summarize", "track"]


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_explains_itself(stage):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", f"mintrl.{stage}", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0
    assert f"python -m mintrl.{stage}" in res.stdout
    assert "--config" in res.stdout or stage == "summarize"
