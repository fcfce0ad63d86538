"""The XC benchmark's gradient comparison, run on the CPU (ours, EXC-OpenBLAS, PySCF)."""

from __future__ import annotations

from qcbench.xc.bench import Env, compare_gradient


def test_compare_gradient_on_the_cpu():
    rec = compare_gradient(Env("cpu"), "water_clusters/002", "def2-svp", 0, dense=True)
    assert rec["pyscf"]["median_s"] > 0
    for label in ("ours", "exc_openblas"):
        assert "error" not in rec[label], rec[label].get("traceback")
        assert rec[label]["max_d_grad"] <= 1e-8  # Eh/Bohr, against pyscf.grad.rks.get_vxc per atom
        assert rec[label]["median_s"] > 0
    assert 0 < rec["ours"]["stats"]["gradient_pair_fraction"] <= 1
