"""GPU backend against PySCF (run on the GPU machine; skipped without a GPU)."""

import numpy as np
import pytest

import fusionrcg
from fusionrcg.runtime.launch import DeviceError
from fusionrcg.verify import Tolerance, reference_eri, sample_quartets

TOL = Tolerance()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "ls", [(0, 0, 0, 0), (2, 0, 2, 0), (2, 2, 1, 1), (3, 3, 2, 2), (4, 4, 4, 4)]
)
def test_gpu_matches_pyscf(get_molecule, ls):
    mol = get_molecule("water_clusters/002", "cc-pvqz")
    cls = fusionrcg.QuartetClass(*ls)
    quartets = sample_quartets(mol, cls, 3, np.random.default_rng(5))
    for q, value in zip(quartets, fusionrcg.eri_quartets(mol, quartets, backend="gpu")):
        ref = reference_eri(mol, q)
        assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0


def test_gpu_backend_without_gpu_says_so(get_molecule, gpu_present):
    if gpu_present:
        pytest.skip("a GPU is present")
    mol = get_molecule("water_clusters/002", "sto-3g")
    with pytest.raises(DeviceError, match="GPU backend needs"):
        fusionrcg.shell_quartet_eri(mol, (0, 0, 0, 0), backend="gpu")
