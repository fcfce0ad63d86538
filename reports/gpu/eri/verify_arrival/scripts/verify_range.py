"""``python -m fusionrcg.campaign verify`` restricted to the classes of MIN <= total <= MAX:
same molecules, bases, tolerance, and the same sampled quartets (every class is sampled in
the campaign's order so the random stream matches; only the classes in range are checked)."""

import json
import sys
from pathlib import Path

import cupy
import numpy as np

from fusionrcg.angmom import canonical_classes
from fusionrcg.campaign import _command, _jsonl
from fusionrcg.verify import Tolerance, adjudicate, sample_quartets, verify_class
from qcbench.molecules import load
from qcbench.provenance import gpu_info, provenance

out, low, high = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
out.mkdir(parents=True, exist_ok=True)
(out / "verify_device.json").write_text(
    json.dumps(provenance(**gpu_info(cupy), command=_command()), indent=1)
)
tol = Tolerance()
for name, basis in (("water_clusters/002", "cc-pvqz"), ("water_clusters/002", "ano")):
    for cart in (False, True):
        mol = load(name, basis, cart=cart)
        rng = np.random.default_rng(5)
        rows = []
        for cls in canonical_classes(4):
            quartets = sample_quartets(mol, cls, 2, rng)
            if quartets and low <= cls.total <= high:
                rows.append(verify_class(mol, cls, quartets, "gpu", "full", tol))
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
