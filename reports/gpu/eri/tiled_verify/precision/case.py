"""The (3,3|0,0) element the GPU check found outside tolerance: water dimer in ANO-RCC, shell
quartet (12, 3, 0, 0), element (6, 20, 7, 6), its exact value, and the NumPy reference
evaluator set up for it (imported by the other scripts here)."""

from fusionrcg.angmom import QuartetClass
from fusionrcg.engine import _inverse, canonical_permutation
from fusionrcg.orchestration.plan import plan_class
from fusionrcg.reference import evaluator
from fusionrcg.shells import shell_quartet
from fusionrcg.variants import get_variant
from fusionrcg.verify import exact_element
from qcbench.molecules import load

MOL = load("water_clusters/002", "ano")
QUARTET = (12, 3, 0, 0)
ELEMENT = (6, 20, 7, 6)
EXACT = exact_element(MOL, QUARTET, ELEMENT, "full")
SHELLS = shell_quartet(MOL, QUARTET)
PERM = canonical_permutation([s.l for s in SHELLS])
PLAN = plan_class(QuartetClass(*[SHELLS[i].l for i in PERM]), get_variant("full"), True)
CANON = tuple(SHELLS[i] for i in PERM)


def reference_error(shells=CANON) -> float:
    """The reference evaluator's value of the element minus the exact one."""
    value = evaluator.evaluate_batch(PLAN, [shells])[0].transpose(_inverse(PERM))
    return float(value[ELEMENT] - EXACT)
