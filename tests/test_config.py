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
    ],
)
def test_bad_key_or_value_is_named(path, value, key):
    data = copy.deepcopy(_default())
    node = data
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    with pytest.raises(ConfigError) as err:
        parse_config(data, "my.yaml")
    assert key in str(err.value) and "my.yaml" in str(err.value)
