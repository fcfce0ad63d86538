"""Distributed J/K, XC and SCF on the CPU backend under mpiexec: the summed results of 1, 2
and 4 ranks, pulled and static, equal the single-process engines' (1e-10) and PySCF's
(1e-10), every task is built once, and the SCF of 2 and 3 ranks (RKS; UKS of the cation) gives
the single-process energy (1e-9 Eh).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mpi_case import BASIS, TASK_PAIRS, XC, densities, grid, water_xyz

import qcdist
from qcbench.dist.__main__ import main
from qcdist.__main__ import molecule

TOL = 1e-10  # the ranks' partial sums differ from one process's sums by rounding only
SCF_TOL = 1e-9  # Eh, with conv_tol 1e-11


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The single-process engines' and PySCF's results of the test case."""
    from pyscf.dft import numint
    from pyscf.scf import hf

    import kerneldi
    from fusionrcg.jk import JK

    mol = molecule(water_xyz(str(tmp_path_factory.mktemp("w") / "w.xyz")), BASIS)
    sym, general, pair = densities(mol)
    g = grid(mol)
    jk = JK(mol, backend="cpu")
    ni = kerneldi.NumInt("cpu")
    ref = numint.NumInt()
    return {
        "engine": {
            "vj": jk.get_jk(sym)[0], "vk": jk.get_jk(sym)[1],
            "gj": jk.get_jk(general, hermi=0)[0], "gk": jk.get_jk(general, hermi=0)[1],
            "rks": ni.nr_rks(mol, g, XC, sym), "uks": ni.nr_uks(mol, g, XC, pair),
        },
        "pyscf": {
            "vj": hf.get_jk(mol, sym)[0], "vk": hf.get_jk(mol, sym)[1],
            "gj": hf.get_jk(mol, general, hermi=0)[0], "gk": hf.get_jk(mol, general, hermi=0)[1],
            "rks": ref.nr_rks(mol, g, XC, sym), "uks": ref.nr_uks(mol, g, XC, pair),
        },
        "jk_tasks": len(JK(mol, backend="cpu", task_pairs=TASK_PAIRS).tasks),
        "xc_tasks": len(ni.xc_tasks(mol, g, XC)),
    }  # fmt: skip


@pytest.fixture(scope="module")
def launched(run_mpi, tmp_path_factory):
    """``launched(n)``: the case's results with n ranks, one launch per n for the module."""
    done: dict[int, dict] = {}

    def get(ranks: int) -> dict:
        if ranks not in done:
            out = tmp_path_factory.mktemp(f"ranks{ranks}") / "case.npz"
            run_mpi(ranks, str(Path(__file__).with_name("mpi_case.py")), str(out))
            done[ranks] = dict(np.load(out))
        return done[ranks]

    return get


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_jk_and_xc_over_ranks_equal_one_process_and_pyscf(ranks, launched, single):
    got = launched(ranks)
    assert int(got["ranks"]) == ranks
    for schedule in qcdist.SCHEDULES:
        for oracle in ("engine", "pyscf"):
            want = single[oracle]
            for key in ("vj", "vk", "gj", "gk"):
                err = np.abs(got[f"{schedule}_{key}"] - want[key]).max()
                assert err < TOL, (schedule, oracle, key, err)
            for kind in ("rks", "uks"):
                nelec, exc, vxc = want[kind]
                assert np.abs(got[f"{schedule}_{kind}_nelec"] - nelec).max() < TOL
                assert abs(float(got[f"{schedule}_{kind}_exc"]) - exc) < TOL, (schedule, kind)
                assert np.abs(got[f"{schedule}_{kind}_vxc"] - vxc).max() < TOL, (schedule, kind)


@pytest.mark.parametrize("ranks", [2, 4])
def test_every_task_is_built_once(ranks, launched, single):
    got = launched(ranks)
    for schedule in qcdist.SCHEDULES:
        for name in ("jk", "xc"):
            shares = [got[f"{schedule}_{name}_tasks_{r}"] for r in range(ranks)]
            built = np.concatenate(shares)
            assert sorted(built.tolist()) == list(range(single[f"{name}_tasks"]))
            if schedule == "static":  # equal counts, contiguous pieces in the engine's order
                sizes = [len(s) for s in shares]
                assert max(sizes) - min(sizes) <= 1
                assert built.tolist() == list(range(len(built)))


@pytest.mark.parametrize(
    ("ranks", "schedule", "charge", "spin"),
    [(2, "pull", 0, 0), (3, "static", 1, 1)],
    ids=["rks-2-pull", "uks-cation-3-static"],
)
def test_scf_over_ranks_gives_the_single_process_energy(ranks, schedule, charge, spin, run_mpi,
                                                         tmp_path):  # fmt: skip
    from pyscf import dft

    import fusionrcg
    import kerneldi

    xyz = water_xyz(str(tmp_path / "w.xyz"))
    out = tmp_path / "scf.json"
    run_mpi(ranks, "-m", "qcdist", "scf", xyz, "--basis", BASIS, "--xc", XC, "--grid-level", "1",
            "--conv-tol", "1e-11", "--backend", "cpu", "--schedule", schedule, "--charge",
            str(charge), "--spin", str(spin), "--output", str(out))  # fmt: skip
    got = json.loads(out.read_text())
    assert got["converged"] and got["ranks"] == ranks
    mol = molecule(xyz, BASIS, charge, spin)
    mf = dft.UKS(mol) if spin else dft.RKS(mol)
    mf.xc, mf.grids.level, mf.conv_tol = XC, 1, 1e-11
    fusionrcg.apply(mf, backend="cpu")
    mf._numint = kerneldi.NumInt("cpu")
    assert abs(got["energy"] - mf.kernel()) < SCF_TOL


def test_static_share_and_largest_first():
    shares = [qcdist.static_share(10, r, 4) for r in range(4)]
    assert shares == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    assert qcdist.static_share(2, 3, 4) == []
    assert qcdist.largest_first([1.0, 5.0, 3.0, 5.0]) == [1, 3, 2, 0]


def test_one_rank_overhead_command_writes_both_engines(run_mpi, tmp_path):
    out, table = tmp_path / "overhead.json", tmp_path / "overhead.md"
    run_mpi(1, "-m", "qcbench.dist", "overhead", "--molecule", "water_clusters/002",
            "--basis", "sto-3g", "--grid-level", "1", "--backend", "cpu", "--repeats", "1",
            "--out", str(out))  # fmt: skip
    assert main(["overhead-table", "--json", str(out), "--out", str(table)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["engine"] for r in rows] == ["jk", "xc"]
    assert all(r["single_seconds"] > 0 and r["one_rank_seconds"] > 0 for r in rows)
    assert "| jk | cpu |" in table.read_text()
