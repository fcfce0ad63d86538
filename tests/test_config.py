"""The pipeline's default configuration satisfies its schema, and the schema rejects bad input."""

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def load(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def test_default_config_is_valid():
    jsonschema.validate(load("config.yaml"), load("schema.yaml"))


@pytest.mark.parametrize(
    "path, value",
    [(("eri", "lmax"), 5), (("eri", "variants"), ["full", "turbo"]), (("results_dir",), "")],
)
def test_schema_rejects_bad_values(path, value):
    config = copy.deepcopy(load("config.yaml"))
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(config, load("schema.yaml"))
