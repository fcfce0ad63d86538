"""Distributed builds on the GPU backend (skipped without a CUDA GPU and CuPy): several ranks
on one GPU, whose reduction then goes through MPI (NCCL refuses two ranks on one device), and
one rank per GPU through NCCL where the machine has two."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mpi_case import BASIS, XC, densities, grid, water_xyz

from qcdist.__main__ import molecule

cupy = pytest.importorskip("cupy")
try:
    DEVICES = cupy.cuda.runtime.getDeviceCount()
except cupy.cuda.runtime.CUDARuntimeError:
    DEVICES = 0
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICES == 0, reason="no CUDA GPU")]
GPU_TOL = 1e-9  # the device's FP64 sums against PySCF's, and the ranks' partial sums
CASE = str(Path(__file__).with_name("mpi_case.py"))


@pytest.fixture(scope="module")
def pyscf_results(tmp_path_factory):
    from pyscf.dft import numint
    from pyscf.scf import hf

    mol = molecule(water_xyz(str(tmp_path_factory.mktemp("w") / "w.xyz")), BASIS)
    sym, general, pair = densities(mol)
    g = grid(mol)
    ref = numint.NumInt()
    vj, vk = hf.get_jk(mol, sym)
    gj, gk = hf.get_jk(mol, general, hermi=0)
    return {"vj": vj, "vk": vk, "gj": gj, "gk": gk,
            "rks": ref.nr_rks(mol, g, XC, sym), "uks": ref.nr_uks(mol, g, XC, pair)}  # fmt: skip


def check(got, want) -> None:
    for schedule in ("pull", "static"):
        for key in ("vj", "vk", "gj", "gk"):
            assert np.abs(got[f"{schedule}_{key}"] - want[key]).max() < GPU_TOL, (schedule, key)
        for kind in ("rks", "uks"):
            nelec, exc, vxc = want[kind]
            assert abs(float(got[f"{schedule}_{kind}_exc"]) - exc) < GPU_TOL
            assert np.abs(got[f"{schedule}_{kind}_vxc"] - vxc).max() < GPU_TOL


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_sharing_one_gpu_reduce_through_mpi(ranks, run_mpi, pyscf_results, tmp_path):
    out = tmp_path / "case.npz"
    run_mpi(ranks, CASE, str(out), "gpu", env={"CUDA_VISIBLE_DEVICES": "0"})
    got = np.load(out)
    assert str(got["pull_reduction"]) == "mpi"
    check(got, pyscf_results)


@pytest.mark.skipif(DEVICES < 2, reason="needs two GPUs")
def test_one_rank_per_gpu_reduces_through_nccl(run_mpi, pyscf_results, tmp_path):
    out = tmp_path / "case.npz"
    run_mpi(2, CASE, str(out), "gpu")
    got = np.load(out)
    assert str(got["pull_reduction"]) == "nccl"
    check(got, pyscf_results)


def test_scf_of_two_ranks_on_one_gpu_gives_the_one_rank_energy(run_mpi, tmp_path):
    xyz = water_xyz(str(tmp_path / "w.xyz"))
    energies = []
    for ranks in (1, 2):
        out = tmp_path / f"scf{ranks}.json"
        run_mpi(ranks, "-m", "qcdist", "scf", xyz, "--basis", BASIS, "--xc", XC,
                "--grid-level", "1", "--conv-tol", "1e-11", "--backend", "gpu",
                "--output", str(out), env={"CUDA_VISIBLE_DEVICES": "0"})  # fmt: skip
        got = json.loads(out.read_text())
        assert got["converged"] and got["backend"] == "gpu"
        energies.append(got["energy"])
    assert abs(energies[0] - energies[1]) < 1e-9
