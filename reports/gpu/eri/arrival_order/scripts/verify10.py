"""``python -m fusionrcg.campaign verify`` restricted to classes up to total MAX (those whose
kernels were built): same molecules, bases, sampling seed and tolerance."""

import json
import sys
from pathlib import Path

import cupy

from fusionrcg.campaign import _command, _jsonl
from fusionrcg.verify import Tolerance, adjudicate, verify_molecule
from qcbench.molecules import load
from qcbench.provenance import gpu_info, provenance

out, max_total = Path(sys.argv[1]), int(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
(out / "verify_device.json").write_text(
    json.dumps(provenance(**gpu_info(cupy), command=_command()), indent=1)
)
tol = Tolerance()
for name, basis in (("water_clusters/002", "cc-pvqz"), ("water_clusters/002", "ano")):
    for cart in (False, True):
        mol = load(name, basis, cart=cart)
        rows = verify_molecule(mol, 4, 2, seed=5, backend="gpu", max_total=max_total, tol=tol)
        for row in rows:
            rec = row.row() | {"molecule": name, "basis": basis, "cartesian": cart}
            if not row.passed:
                a = adjudicate(mol, row.worst_quartet, row.worst_element, tol=tol, backend="gpu")
                rec |= {
                    "exact": a.exact,
                    "engine_error": a.engine_error,
                    "pyscf_error": a.pyscf_error,
                    "engine_right": a.engine_right,
                }
            _jsonl(out / "verify_gpu.jsonl", rec)
        print(
            f"{name} {basis} cart={cart}: {len(rows)} classes, "
            f"worst {max(r.max_normalized_error for r in rows):.3g}",
            flush=True,
        )
