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
    [
        (("eri", "lmax"), 5),
        (("eri", "variants"), ["full", "turbo"]),
        (("results_dir",), ""),
        (("xc", "basis_order", "orders"), ["support", "spectral"]),
        (("gpu",), "maybe"),
        (("eri", "gpu", "ablation", "quartets"), ["5,0,0,0"]),
    ],
)
def test_schema_rejects_bad_values(path, value):
    config = copy.deepcopy(load("config.yaml"))
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(config, load("schema.yaml"))


def merged(base: dict, over: dict) -> dict:
    """``over`` merged into ``base`` key by key, as Snakemake merges --configfile."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def test_full_config_is_valid_and_covers_every_class():
    config = merged(load("config.yaml"), load("full.yaml"))
    jsonschema.validate(config, load("schema.yaml"))
    assert config["eri"]["kernels"]["max_total"] == 16
    assert config["eri"]["verify"]["backends"] == {"reference": 16, "cpu": 16}
    assert config["eri"]["verify"]["sets"] == load("config.yaml")["eri"]["verify"]["sets"]
