import json

import pandas as pd
import pyarrow as pa
import pytest

from mintrl.io import atomic_path, read_table, write_json, write_table

SCHEMA = pa.schema([("a", pa.int32()), ("b", pa.string())])


def test_failed_write_leaves_previous_file_and_no_temporary(tmp_path):
    target = tmp_path / "m.json"
    write_json(target, {"v": 1})
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a fi")
        raise RuntimeError("killed")
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_folder_replaces_folder(tmp_path):
    target = tmp_path / "ckpt"
    for v in ("old", "new"):
        with atomic_path(target) as tmp:
            tmp.mkdir()
            (tmp / "w.txt").write_text(v)
    assert (target / "w.txt").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]


def test_parquet_round_trip_with_schema(tmp_path):
    write_table(tmp_path / "t.parquet", [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], SCHEMA)
    df = read_table(tmp_path / "t.parquet")
    assert df.to_dict("records") == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, KeyError)):
        write_table(tmp_path / "bad.parquet", [{"a": "not a number", "b": "x"}], SCHEMA)
    assert not (tmp_path / "bad.parquet").exists()


def test_rollouts_round_trip_through_parquet_with_their_schema(tmp_path):
    from mintrl.schemas import INTERVENTION, POLICY, ROLLOUTS

    row = {"run": "grpo-s0", "iteration": 3, "problem_id": "arith-1", "difficulty": 5,
           "sample": 0, "kind": "semi", "prompt_ids": [5, 6, 7], "response_ids": [8, 9, 1],
           "provenance": [POLICY, INTERVENTION, INTERVENTION],
           "logprobs": [-0.5, -1.25, -0.125], "reward": 1.0, "finish_reason": "stop",
           "reviews": 2, "interventions": 1, "verdicts": [-1, 1], "text": "ab"}
    write_table(tmp_path / "r.parquet", [row], ROLLOUTS)
    back = read_table(tmp_path / "r.parquet").to_dict("records")[0]
    assert {k: (list(v) if hasattr(v, "__len__") and not isinstance(v, str) else v)
            for k, v in back.items()} == row
    import pyarrow.parquet as pq

    assert pq.read_schema(tmp_path / "r.parquet").remove_metadata() == ROLLOUTS


def test_a_table_missing_a_column_is_refused_naming_it(tmp_path):
    from mintrl.schemas import ROLLOUTS

    with pytest.raises(KeyError, match="reward"):
        write_table(tmp_path / "r.parquet", pd.DataFrame({"run": ["x"]}), ROLLOUTS)
    assert not (tmp_path / "r.parquet").exists()


def _tiny_filesystem(path):
    """A 64 KiB tmpfs at ``path`` (root only), or None where mounting is not allowed."""
    import subprocess

    path.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)],
                         capture_output=True)
    return path if res.returncode == 0 else None


def test_a_write_that_runs_out_of_disk_leaves_the_previous_file_and_no_partial_one(tmp_path):
    import errno
    import subprocess

    disk = _tiny_filesystem(tmp_path / "disk")
    if disk is None:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        target = disk / "rollouts.parquet"
        write_table(target, [{"a": 1, "b": "x"}], SCHEMA)
        big = [{"a": i, "b": f"{i:x}" * 40} for i in range(20_000)]  # far beyond 64 KiB
        with pytest.raises(OSError) as err:
            write_table(target, big, SCHEMA)
        assert err.value.errno == errno.ENOSPC or "No space" in str(err.value)
        assert read_table(target).to_dict("records") == [{"a": 1, "b": "x"}]
        assert [p.name for p in disk.iterdir()] == ["rollouts.parquet"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)
