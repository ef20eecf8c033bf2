import json
from pathlib import Path

from mintrl.report.tables import eval_records, results_table, to_markdown


def _eval(tmp_path, run, task, it, easy, hard):
    path = tmp_path / f"{run}_{task}_{it}.json"
    path.write_text(json.dumps({"run": run, "task": task, "iteration": it, "splits": {
        "easy": {"pass@1": easy}, "hard": {"pass@1": hard}}}))
    return path


def test_table_rows_are_runs_at_their_last_evaluation_and_columns_benchmarks(tmp_path):
    paths = [_eval(tmp_path, "base", "arith", 0, 0.9, 0.1),
             _eval(tmp_path, "grpo-s0", "arith", 10, 0.5, 0.5),
             _eval(tmp_path, "grpo-s0", "arith", 20, 0.92, 0.2)]
    table = results_table(eval_records(paths), ["base", "grpo-s0"])
    assert list(table.index) == ["base", "grpo-s0"]
    assert table.loc["grpo-s0"].to_dict() == {"arith/easy": 92.0, "arith/hard": 20.0,
                                              "average": 56.0}
    assert "| grpo-s0 | 92.0 | 20.0 | 56.0 |" in to_markdown(table)


def test_an_evaluation_without_run_name_is_named(tmp_path):
    import pytest

    path = tmp_path / "m.json"
    path.write_text(json.dumps({"splits": {}}))
    with pytest.raises(SystemExit, match="m.json: no 'run'"):
        eval_records([path])


def test_a_run_on_fewer_benchmarks_gets_no_average(tmp_path):
    paths = [_eval(tmp_path, "base", "arith", 0, 0.9, 0.1),
             _eval(tmp_path, "base", "intfn", 0, 1.0, 0.0),
             _eval(tmp_path, "opd", "arith", 2, 0.8, 0.2)]
    table = results_table(eval_records(paths), ["base", "opd"])
    assert table.loc["base", "average"] == 50.0
    assert "| opd | 80.0 | 20.0 | – | – | – |" in to_markdown(table)


def test_cell_stats_mean_std_over_seeds_and_a_bootstrap_interval():
    import numpy as np

    from mintrl.report.stats import cell_stats

    # two seeds x four problems: per-seed means 50 and 100
    m = np.array([[0.0, 100.0, 0.0, 100.0], [100.0, 100.0, 100.0, 100.0]])
    st = cell_stats([m], n_boot=2000, seed=0)
    assert st["mean"] == 75.0 and st["seeds"] == 2
    assert st["std"] == np.std([50.0, 100.0], ddof=1)
    assert 0.0 <= st["lo"] < 75.0 < st["hi"] <= 100.0
    # a perfectly consistent cell has a zero-width interval; one seed has std 0
    assert cell_stats([np.full((1, 5), 40.0)]) == {"mean": 40.0, "std": 0.0, "lo": 40.0,
                                                   "hi": 40.0, "seeds": 1}
    # "average" is the mean over benchmarks of their means
    assert cell_stats([m, np.zeros((2, 3))])["mean"] == 37.5


def test_rows_average_their_seeds_from_the_per_sample_files(tmp_path):
    import pandas as pd

    from mintrl.report.tables import problem_scores, seed_table, stats_markdown

    def run(name, seed_rewards):
        folder = tmp_path / name
        folder.mkdir()
        path = _eval(folder, name, "arith", 4, 0.0, 0.0)
        rows = [{"problem_id": f"p{i}", "split": split, "reward": r, "strict": r > 0,
                 "step_accuracy": r} for split in ("easy", "hard")
                for i, r in enumerate(seed_rewards)]
        pd.DataFrame(rows).to_parquet(folder / "samples.parquet")
        return path

    paths = [run("grpo-s0", [1.0, 0.0]), run("grpo-s1", [1.0, 1.0]), run("base", [0.0, 0.0])]
    scores = problem_scores(eval_records(paths), {"grpo-s0": "grpo", "grpo-s1": "grpo"})
    stats = seed_table(scores, "pass@1", n_boot=200)
    grpo = stats[(stats["row"] == "grpo") & (stats["benchmark"] == "arith/easy")].iloc[0]
    assert grpo["mean"] == 75.0 and grpo["seeds"] == 2 and grpo["std"] > 0
    md = stats_markdown(stats, ["base", "grpo"])
    assert "| grpo | **75.0 ± 35.4" in md and "| base | 0.0 [0.0, 0.0]" in md  # n = 1: no ±


def test_an_ablation_on_one_task_has_only_that_tasks_columns(tmp_path):
    """The lab rows are evaluated on every task; an arith-only ablation's table shows arith
    only, with an average for every row over those columns."""
    import pandas as pd

    from mintrl.report.tables import problem_scores, seed_table, trained_benchmarks

    paths = []
    for name, task in (("base", "arith"), ("base", "intfn"), ("C8", "arith")):
        folder = tmp_path / f"{name}_{task}"
        folder.mkdir()
        paths.append(_eval(folder, name, task, 4, 0.0, 0.0))
        pd.DataFrame([{"problem_id": f"p{i}", "split": split, "reward": 1.0, "strict": True,
                       "step_accuracy": 1.0} for split in ("easy", "hard") for i in range(3)]
                     ).to_parquet(folder / "samples.parquet")
    scores = trained_benchmarks(problem_scores(eval_records(paths), {"C8": "C8"}), {"C8"})
    stats = seed_table(scores, "pass@1", n_boot=50)
    assert set(stats["benchmark"]) == {"arith/easy", "arith/hard", "average"}
    assert set(stats[stats["benchmark"] == "average"]["row"]) == {"base", "C8"}


def test_each_method_keeps_its_colour_and_the_figures_are_written(tmp_path):
    import pandas as pd

    from mintrl.report.colours import FIXED, row_colours
    from mintrl.report.plots import plot_curves, plot_pass1

    a = row_colours(["grpo", "C8", "mintrl-const", "C32"])
    b = row_colours(["mintrl-const", "C8", "grpo", "C32"])
    assert a["grpo"] == b["grpo"] == FIXED["grpo"] and a["mintrl-const"] == FIXED["mintrl-const"]
    assert len(set(a.values())) == 4  # distinct colours for the other rows
    stats = pd.DataFrame([{"row": r, "benchmark": bench, "mean": 50.0, "lo": 40.0, "hi": 60.0}
                          for r in ("base", "grpo") for bench in ("arith/easy", "average")])
    plot_pass1(stats, ["base", "grpo"], tmp_path / "p.png")
    iters = pd.DataFrame([{"run": "grpo-s0", "task": "arith", "iteration": i,
                           "rollout/reward": 0.1 * i} for i in (1, 2, 3)])
    plot_curves(iters, {"grpo-s0": "grpo"}, tmp_path / "c.png")
    assert (tmp_path / "p.png").stat().st_size > 1000 and (tmp_path / "c.png").stat().st_size > 1000


def test_ablation_rows_are_placed_on_the_one_knob_they_change():
    from mintrl.config.runs import single_knobs

    ref = {"chunk_tokens": 16, "max_reviews": 12, "const_c": None, "judge": "oracle"}
    specs = {"ref": ref, "C8": ref | {"chunk_tokens": 8}, "C32": ref | {"chunk_tokens": 32},
             "R3": ref | {"max_reviews": 3}, "c-2": ref | {"const_c": -2.0},
             "both": ref | {"chunk_tokens": 8, "max_reviews": 3}, "llm": ref | {"judge": "chat"}}
    knobs = single_knobs(specs, "ref")
    assert knobs == {"chunk_tokens": {"C8": 8, "ref": 16, "C32": 32},
                     "max_reviews": {"R3": 3, "ref": 12}, "const_c": {"c-2": -2.0}}
    assert single_knobs(specs, None) == {}


def _lab_run(tmp_path, name, rewards, task="arith"):
    """An evaluation of ``name`` whose problems p0.. score ``rewards`` on both splits."""
    import pandas as pd

    folder = tmp_path / f"{name}_{task}"
    folder.mkdir()
    path = _eval(folder, name, task, 0 if name.startswith(("base", "teacher")) else 4, 0.0, 0.0)
    pd.DataFrame([{"problem_id": f"p{i}", "split": split, "reward": r, "strict": r > 0,
                   "step_accuracy": r} for split in ("easy", "hard")
                  for i, r in enumerate(rewards)]).to_parquet(folder / "samples.parquet")
    return path


def test_differences_to_the_base_pair_each_run_with_its_own_labs_base(tmp_path):
    """The base scores 0 on lab seed 0 and 50 on lab seed 1. A row on lab 1 only is compared
    with base-lab1, problem by problem (a zero difference has a zero-width interval); the base
    row averages over both labs; the table counts each row's (lab seed, RL seed) pairs."""
    from mintrl.report.tables import (
        problem_scores,
        rows_and_labs,
        seed_table,
        stats_markdown,
        table_markdown,
    )

    paths = [_lab_run(tmp_path, "base", [0.0, 0.0, 0.0, 0.0]),
             _lab_run(tmp_path, "base-lab1", [1.0, 0.0, 1.0, 0.0]),
             _lab_run(tmp_path, "grpo-s0", [0.5, 0.5, 0.5, 0.5]),
             _lab_run(tmp_path, "grpo-lab1-s1", [1.0, 0.5, 1.0, 0.5]),
             _lab_run(tmp_path, "solo", [1.0, 0.0, 1.0, 0.0])]
    evals = eval_records(paths)
    row_of, lab_of = rows_and_labs(evals["run"].unique(), {})
    row_of |= {"grpo-s0": "grpo", "grpo-lab1-s1": "grpo"}
    lab_of |= {"grpo-lab1-s1": 1, "solo": 1}
    stats = seed_table(problem_scores(evals, row_of, lab_of), "pass@1", n_boot=300)
    cell = stats[stats["benchmark"] == "average"].set_index("row")
    assert cell.loc["base", "mean"] == 25.0 and cell.loc["base", "seeds"] == 2  # over labs
    assert cell.loc["base", "labs"] == 2 and cell.loc["base", "delta"] == 0.0
    # solo (lab 1) equals base-lab1 on every problem: +0, not +25 (the base row's mean)
    assert cell.loc["solo", "mean"] == 50.0 and cell.loc["solo", "delta"] == 0.0
    assert cell.loc["solo", "delta_lo"] == cell.loc["solo", "delta_hi"] == 0.0
    # grpo: +50 on lab 0 and +25 on lab 1 (75 - 50), averaged over its two pairs
    assert cell.loc["grpo", "delta"] == 37.5
    assert abs(cell.loc["grpo", "delta_std"] - 17.68) < 0.01
    assert cell.loc["grpo", "labs"] == 2
    md = table_markdown(stats, ["base", "grpo", "solo"])
    assert "pairs per row: base 2, grpo 2, solo 1." in md
    assert "Pass@1 minus the base's of the same lab seed" in md
    assert "| grpo | **+37.5 ± 17.7" in md and "| solo | +0.0 [0.0, 0.0]" in md
    assert "bootstrap 95 % interval over problems and pairs" in stats_markdown(stats, ["base"])


def test_a_run_whose_labs_base_was_not_evaluated_is_named(tmp_path):
    import pytest

    from mintrl.report.tables import problem_scores, seed_table

    paths = [_lab_run(tmp_path, "base", [0.0, 1.0]), _lab_run(tmp_path, "grpo-lab2-s2", [1.0, 1.0])]
    scores = problem_scores(eval_records(paths), {"grpo-lab2-s2": "grpo"}, {"grpo-lab2-s2": 2})
    with pytest.raises(SystemExit, match=r"row 'grpo', arith/easy: no base evaluation of lab "
                                         r"seed\(s\) \[2\]"):
        seed_table(scores, "pass@1", n_boot=10)


def test_lab_models_are_rows_of_their_role_and_one_pair_is_said_so(tmp_path):
    from mintrl.report.tables import problem_scores, rows_and_labs, seed_table, table_markdown

    row_of, lab_of = rows_and_labs(["base", "teacher-lab2", "grpo-s0"], {})
    assert row_of == {"base": "base", "teacher-lab2": "teacher"}
    assert lab_of == {"base": 0, "teacher-lab2": 2}
    paths = [_lab_run(tmp_path, "base", [0.0, 1.0]), _lab_run(tmp_path, "grpo-s0", [1.0, 1.0]),
             _lab_run(tmp_path, "teacher", [1.0, 1.0])]
    stats = seed_table(problem_scores(eval_records(paths), {}), "pass@1", n_boot=10)
    md = table_markdown(stats, ["base", "grpo-s0", "teacher"], spread=tmp_path / "none.md")
    assert "pairs per row: base 1, grpo-s0 1, teacher 1." in md  # the main command's table
    assert "| teacher | +50.0 [" in md and "| base | +" not in md
    assert md.startswith("**One pair.** Every row here is one (lab seed, RL seed) pair")
    assert "`python benchmarks/pair_spread.py --summary results/summary/main_table`" in md


def test_a_one_pair_table_says_how_far_another_pair_moves_it_as_measured(tmp_path):
    """The main command's table quotes the committed three-pair spread (what
    benchmarks/pair_spread.py wrote); a table of several pairs per row needs no such note."""
    from mintrl.report.tables import (
        PAIR_SPREAD,
        one_pair_note,
        problem_scores,
        rows_and_labs,
        seed_table,
        table_markdown,
    )

    committed = one_pair_note(Path(__file__).resolve().parents[1] / PAIR_SPREAD)
    assert "another pair moves a cell by" in committed, "pair_spread.md's closing line moved"
    spread = tmp_path / "pair_spread.md"
    spread.write_text("| table |\n\nLargest range over pairs: 59.6 pp (opd/arith/hard); of a "
                      "difference to the base: 59.4 pp (opd/arith/hard). Median range: 6.3 pp, "
                      "of a difference 10.9 pp.\n")
    assert one_pair_note(spread).endswith(
        "another pair moves a cell by 6.3 pp at the median and by up to 59.6 pp "
        f"(opd/arith/hard), measured over three pairs in `{spread}`.")
    one = [_lab_run(tmp_path, "base", [0.0, 1.0]), _lab_run(tmp_path, "grpo-s0", [1.0, 1.0])]
    two = [*one, _lab_run(tmp_path, "base-lab1", [0.0, 0.0]),
           _lab_run(tmp_path, "grpo-lab1-s1", [1.0, 0.0])]
    for paths, pairs in ((one, 1), (two, 2)):
        evals = eval_records(paths)
        row_of, lab_of = rows_and_labs(evals["run"].unique(), {})
        row_of |= {"grpo-s0": "grpo", "grpo-lab1-s1": "grpo"}
        lab_of |= {"grpo-lab1-s1": 1}
        stats = seed_table(problem_scores(evals, row_of, lab_of), "pass@1", n_boot=10)
        md = table_markdown(stats, ["base", "grpo"], spread=spread)
        assert md.startswith("**One pair.**") == (pairs == 1), md


def test_a_toys_columns_read_easy_medium_hard_and_the_average_comes_last():
    from mintrl.report.stats import benchmark_order

    got = benchmark_order(["average", "intfn/hard", "arith/medium", "arith/hard", "arith/easy",
                           "intfn/easy", "intfn/medium", "code/mbpp_plus", "code/humaneval"])
    assert got == ["arith/easy", "arith/medium", "arith/hard", "code/humaneval",
                   "code/mbpp_plus", "intfn/easy", "intfn/medium", "intfn/hard", "average"]


def test_each_method_is_compared_with_grpo_problem_by_problem_on_its_own_lab(tmp_path):
    """mintrl beats grpo by exactly 25 pp on every problem of lab 0 and ties it on lab 1: the
    paired difference is +12.5 with the spread of the two pairs, while the two rows' own
    intervals (over problems) overlap; a row on a lab seed grpo lacks is left out."""
    from mintrl.report.tables import (
        problem_scores,
        rows_and_labs,
        seed_table,
        table_markdown,
        versus_table,
    )

    paths = [_lab_run(tmp_path, "grpo-s0", [0.0, 0.25, 0.5, 0.75]),
             _lab_run(tmp_path, "grpo-lab1-s1", [1.0, 0.0, 1.0, 0.0]),
             _lab_run(tmp_path, "mintrl-s0", [0.25, 0.5, 0.75, 1.0]),
             _lab_run(tmp_path, "mintrl-lab1-s1", [1.0, 0.0, 1.0, 0.0]),
             _lab_run(tmp_path, "other-lab2-s2", [1.0, 1.0, 1.0, 1.0])]
    evals = eval_records(paths)
    row_of, lab_of = rows_and_labs(evals["run"].unique(), {})
    row_of |= {"grpo-s0": "grpo", "grpo-lab1-s1": "grpo", "mintrl-s0": "mintrl",
               "mintrl-lab1-s1": "mintrl", "other-lab2-s2": "other"}
    lab_of |= {"grpo-lab1-s1": 1, "mintrl-lab1-s1": 1, "other-lab2-s2": 2}
    scores = problem_scores(evals, row_of, lab_of)
    vs = versus_table(scores, "pass@1", "grpo", n_boot=200)
    cell = vs[vs["benchmark"] == "average"].set_index("row")
    assert list(cell.index) == ["mintrl"]  # not grpo itself, not a lab grpo never ran on
    assert cell.loc["mintrl", "mean"] == 12.5 and cell.loc["mintrl", "seeds"] == 2
    assert cell.loc["mintrl", "lo"] >= 0.0  # paired: every problem's difference is 0 or +25
    md = table_markdown(seed_table(scores, "pass@1", n_boot=50), ["grpo", "mintrl"],
                        {"grpo": vs})
    assert "Pass@1 minus grpo's of the same lab seed (pp)" in md
    assert versus_table(scores, "pass@1", "opd").empty  # no opd row: no table


def test_a_difference_is_bold_only_when_its_interval_lies_above_zero():
    import pandas as pd

    from mintrl.report.tables import stats_markdown

    stats = pd.DataFrame([
        {"row": "opd", "benchmark": "arith/hard", "mean": -0.3, "std": 0.0, "lo": -1.7,
         "hi": 0.9, "seeds": 1},   # the largest difference, but no gain
        {"row": "mentor", "benchmark": "arith/hard", "mean": -0.5, "std": 0.0, "lo": -2.3,
         "hi": 1.3, "seeds": 1},
        {"row": "mintrl", "benchmark": "arith/easy", "mean": 1.5, "std": 0.0, "lo": 0.9,
         "hi": 2.2, "seeds": 1}])
    md = stats_markdown(stats, ["opd", "mentor", "mintrl"], signed=True)
    assert "| opd | – | -0.3 [-1.7, 0.9] |" in md
    assert "| mintrl | **+1.5 [0.9, 2.2]** | – |" in md
    # a table of values still marks each column's best
    assert "**-0.3 [-1.7, 0.9]**" in stats_markdown(stats, ["opd", "mentor", "mintrl"])
