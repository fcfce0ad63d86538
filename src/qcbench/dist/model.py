"""The scaling model: one build's time on P devices under the pull and the static schedule,
from per-task costs measured on one device and a model of the links between devices.

Assumptions, each a parameter:

* A task costs on any device what it cost on the measured one (devices alike; no contention
  between ranks). Every rank also pays the build's fixed part (``overhead``: screening maxima,
  symmetrization, which do not divide among the ranks) once.
* Pull: tasks go out largest first, each to the rank that is free first, and each draw costs
  one fetch-and-add on the shared counter (``fetch_s``; every rank draws once more to find the
  counter past the end). Static: the tasks in the engine's order, in equal counts per rank.
* The density broadcast (pipelined: bytes / bandwidth + log2(P) latencies) and the reduction
  of the partial results (ring: 2 (P - 1) / P bytes / bandwidth + 2 (P - 1) latencies) run at
  the bandwidth of the slowest link they cross: NVLink within a node of ``gpus_per_node``
  devices, InfiniBand between nodes.
* A larger system than the measured one (``scaled_tasks``): its work grows as
  (nao ratio) ** work_exponent and its task count as (nao ratio) ** task_exponent; each
  measured task stands for that many tasks of the same share of the work, in the same order.
  This keeps the measured spread of task sizes, which is what separates the two schedules; it
  is a stand-in for a measurement on the larger system itself.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from qcdist.schedule import largest_first, static_share

# parallel efficiencies the papers report (fraction of ideal), by number of devices
PAPER = {
    ("jk", "pull"): {64: 0.75},  # FusionRCG, 64 A100s
    ("xc", "pull"): {16: 0.924, 32: 0.878, 64: 0.792},  # KerneLDI, V100s, dynamic scheduling
    ("xc", "static"): {16: 0.897, 32: 0.821, 64: 0.644},  # KerneLDI, without it
}


@dataclass(frozen=True)
class Links:
    """Bandwidths (GB/s, one direction), latencies (s) and devices per node."""

    gpus_per_node: int = 4
    nvlink_gbs: float = 200.0
    infiniband_gbs: float = 25.0
    latency_s: float = 5e-6
    fetch_s: float = 5e-6

    def bandwidth(self, ranks: int) -> float:
        gbs = self.nvlink_gbs if ranks <= self.gpus_per_node else self.infiniband_gbs
        return gbs * 1e9


def communication_seconds(ranks: int, broadcast_bytes: float, reduce_bytes: float,
                          links: Links) -> float:  # fmt: skip
    """The broadcast and the reduction of one build among ``ranks`` devices."""
    if ranks == 1:
        return 0.0
    bw = links.bandwidth(ranks)
    bcast = broadcast_bytes / bw + math.ceil(math.log2(ranks)) * links.latency_s
    reduce = 2 * (ranks - 1) / ranks * reduce_bytes / bw + 2 * (ranks - 1) * links.latency_s
    return bcast + reduce


def pull_makespan(costs: Sequence[float], ranks: int, fetch_s: float) -> float:
    """When the last rank finishes, tasks drawn largest first by whichever rank is free."""
    free = [(0.0, r) for r in range(ranks)]
    for i in largest_first(costs):
        t, r = heapq.heappop(free)
        heapq.heappush(free, (t + fetch_s + costs[i], r))
    return max(t for t, _ in free) + fetch_s


def static_makespan(costs: Sequence[float], ranks: int) -> float:
    """When the last rank finishes its equal-count contiguous share."""
    return max(sum(costs[i] for i in static_share(len(costs), r, ranks)) for r in range(ranks))


def scaled_tasks(costs: Sequence[float], work_ratio: float, task_ratio: float) -> list[float]:
    """The tasks of a system ``work_ratio`` times the measured work in ``task_ratio`` times as
    many tasks (module note): each task repeated, in place, with its share of the work."""
    m = max(1, round(task_ratio))
    return [c * work_ratio / m for c in costs for _ in range(m)]


def predict(costs: Sequence[float], overhead: float, ranks: Sequence[int],
            broadcast_bytes: float, reduce_bytes: float, links: Links) -> list[dict]:  # fmt: skip
    """Per device count and schedule: predicted seconds per build, speedup over one device
    (no communication, no draws) and efficiency (speedup / devices)."""
    one = sum(costs) + overhead
    rows = []
    for p in ranks:
        comm = communication_seconds(p, broadcast_bytes, reduce_bytes, links)
        for schedule in ("pull", "static"):
            if p == 1:
                work = sum(costs)
            elif schedule == "pull":
                work = pull_makespan(costs, p, links.fetch_s)
            else:
                work = static_makespan(costs, p)
            seconds = overhead + work + comm
            rows.append({"ranks": p, "schedule": schedule, "seconds": seconds,
                         "communication_seconds": comm, "speedup": one / seconds,
                         "efficiency": one / seconds / p})  # fmt: skip
    return rows


def nao_of(composition: dict[str, int], basis: str) -> int:
    """Basis functions of a molecule of this composition (element: count) in ``basis``."""
    from pyscf import gto

    total = 0
    for element, count in composition.items():
        atom = gto.M(atom=f"{element} 0 0 0", basis=basis, spin=None, verbose=0)
        total += atom.nao * count
    return total


def parse_formula(formula: str) -> dict[str, int]:
    """"C378H629N105O118S1" -> {"C": 378, "H": 629, ...}."""
    import re

    found = re.findall(r"([A-Z][a-z]?)(\d*)", formula)
    if not found or "".join(e + n for e, n in found) != formula:
        raise ValueError(f"not a molecular formula: {formula!r}")
    out: dict[str, int] = {}
    for element, n in found:
        out[element] = out.get(element, 0) + (int(n) if n else 1)
    return out
