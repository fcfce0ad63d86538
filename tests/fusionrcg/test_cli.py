import json
import shutil

import pytest

from fusionrcg.cli import main


def test_graph_json(capsys):
    assert main(["graph", "--quartet", "1,1,1,1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "(1,1|1,1)"
    assert set(out["peak_live"]) == {"variant", "priority", "conventional"}
    assert set(out["peak_live"]["priority"]) == {"dsa", "topological"}
    assert out["accumulators"] == {"hrr_inputs": 81, "eq5": 81}
    assert out["buffer_slots"]["after_packing"] <= out["buffer_slots"]["before_packing"]
    assert out["flops"]["vrr_per_primitive_quartet"] > 0
    assert out["tier"]["chosen"] in (1, 2)


def test_graph_text_and_variant(capsys):
    assert main(["graph", "--quartet", "(2,1|1,0)", "--variant", "no-spherical"]) == 0
    assert "no-spherical" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["graph", "--quartet", "5,0,0,0"], "l <= 4"),
        (["graph", "--quartet=-1,0,0,0"], "negative"),
        (["graph", "--quartet", "1,1"], "four integers"),
        (["graph", "--quartet", "1,1,1,1", "--variant", "nope"], "known variants"),
    ],
)
def test_graph_bad_input(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (no GPU needed)")
def test_build_json(capsys, tmp_path):
    argv = ["build", "--quartet", "2,0,1,1", "--variant", "tier2-only", "--json"]
    assert main([*argv, "--kernel-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "(2,0|1,1)" and out["tier"] == 2
    assert out["slot_bank"] == "shared" and out["kernel2"] == f"{out['kernel']}_jk"
    assert out["registers"] <= 255 and out["spill_store_bytes"] >= 0
    assert main(["build", "--quartet", "2,0,2,0", "--json", "--kernel-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tier"] == 1 and out["spill_store_bytes"] == 0 and out["slot_bank"] is None
    assert out["ptxas_level"] == 3
