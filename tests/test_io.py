import json

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
