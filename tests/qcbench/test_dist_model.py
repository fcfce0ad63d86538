"""The scaling model (qcbench.dist.model) on cases worked by hand, and the measure -> model
commands end to end on a small molecule."""

from __future__ import annotations

import csv
import json

import pytest

from qcbench.dist import model
from qcbench.dist.__main__ import main

COSTS = [4.0, 3.0, 3.0, 2.0, 2.0, 2.0]


def test_pull_hands_the_largest_tasks_out_first_to_the_free_rank():
    # 4 | 3 ; 3 -> rank 1 (free at 3): 6 ; 2 -> rank 0 (4): 6 ; 2 -> 8 ; 2 -> 8
    assert model.pull_makespan(COSTS, 2, 0.0) == pytest.approx(8.0)
    # each draw costs the fetch, and every rank draws once more past the end
    assert model.pull_makespan([1.0], 1, 0.5) == pytest.approx(2.0)


def test_static_gives_contiguous_equal_counts():
    assert model.static_makespan(COSTS, 2) == pytest.approx(10.0)  # 4+3+3 against 2+2+2
    assert model.static_makespan(COSTS, 4) == pytest.approx(7.0)  # [4,3] [3,2] [2] [2]


def test_communication_uses_the_slowest_link_crossed():
    links = model.Links(gpus_per_node=4, nvlink_gbs=100.0, infiniband_gbs=10.0, latency_s=0.0)
    assert model.communication_seconds(1, 1e9, 1e9, links) == 0.0
    within = model.communication_seconds(4, 1e9, 1e9, links)
    across = model.communication_seconds(8, 1e9, 1e9, links)
    assert within == pytest.approx(0.01 + 2 * 3 / 4 * 0.01)
    assert across == pytest.approx(0.1 + 2 * 7 / 8 * 0.1)


def test_scaling_keeps_the_work_and_multiplies_the_tasks():
    scaled = model.scaled_tasks(COSTS, 10.0, 3.0)
    assert len(scaled) == 3 * len(COSTS)
    assert sum(scaled) == pytest.approx(10.0 * sum(COSTS))


def test_one_device_has_efficiency_one_and_more_devices_less():
    rows = model.predict(COSTS, 0.1, [1, 2, 4], 8e6, 16e6, model.Links())
    one = [r for r in rows if r["ranks"] == 1]
    assert all(r["efficiency"] == pytest.approx(1.0) for r in one)
    assert all(r["efficiency"] < 1.0 for r in rows if r["ranks"] > 1)


def test_formula_and_basis_size():
    assert model.parse_formula("C378H629N105O118S1")["H"] == 629
    assert model.nao_of(model.parse_formula("H2O"), "cc-pvdz") == 24
    with pytest.raises(ValueError):
        model.parse_formula("water")


def test_measure_then_model(tmp_path):
    costs = tmp_path / "costs.json"
    main(["measure", "--molecule", "water_clusters/002", "--jk-basis", "sto-3g", "--xc-basis",
          "sto-3g", "--grid-level", "0", "--repeats", "1", "--out", str(costs)])  # fmt: skip
    found = json.loads(costs.read_text())
    assert len(found["jk"]["tasks"]) > 1 and len(found["xc"]["tasks"]) >= 1
    assert all(t["seconds"] >= 0.0 for t in found["jk"]["tasks"])
    table = tmp_path / "m.csv"
    main(["model", "--costs", str(costs), "--ranks", "1", "8", "64", "--out-table", str(table),
          str(tmp_path / "m.md"), "--out-figure", str(tmp_path / "m.png")])  # fmt: skip
    rows = list(csv.DictReader(table.open()))
    assert {r["engine"] for r in rows} == {"jk", "xc"}
    paper = [
        r for r in rows if r["engine"] == "jk" and r["ranks"] == "64" and r["schedule"] == "pull"
    ]
    assert paper[0]["paper_efficiency"] == "0.75"
    assert (tmp_path / "m.png").stat().st_size > 0


def test_device_command_keeps_the_subcommand_apart_from_its_command_option():
    from qcbench.dist.__main__ import parser

    args = parser().parse_args(["device", "--command", "snakemake dist_record", "--out", "d.json"])
    assert (args.command, args.made_by) == ("device", "snakemake dist_record")
