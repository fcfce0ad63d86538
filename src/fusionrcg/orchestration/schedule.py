"""Evaluation orders of a fixed graph: the DSA greedy and a plain topological order.

DSA keeps a ready set and repeatedly schedules the ready vertex with the best key. The key is

1. the demand rank: the position, in the demand order, of the first output the vertex serves.
   The demand order is the loop nest that the axis policy induces (the component reduced first
   varies fastest), so consecutive outputs share their reduction chains and every value is
   consumed soon after it is made;
2. the paper's Eq. (7) "register release potential" ``sum over w in Reach(v) of out(w) - in(w)``,
   larger first (Reach(v) includes v);
3. the vertex id, for determinism.

Eq. (7) alone, without the demand rank, is also available (``eq7_only``) so the reports can show
what each part contributes. The plain order ("no-DSA" ablation) is Kahn's algorithm with a FIFO
queue over vertex ids: safe, deterministic, oblivious to liveness.
"""

from __future__ import annotations

import enum
import heapq
import weakref
from collections import deque
from collections.abc import Sequence

from ..graph.ir import Dag


class OrderKind(str, enum.Enum):
    DSA = "dsa"
    TOPOLOGICAL = "topological"
    EQ7_ONLY = "eq7-only"


def _initially_done(dag: Dag) -> list[bool]:
    return [dag.leaves_preexist and n.is_leaf for n in dag.nodes]


def topological_order(dag: Dag) -> list[int]:
    done = _initially_done(dag)
    waiting = [sum(1 for p in dag.parents[v] if not done[p]) for v in range(len(dag))]
    queue = deque(v for v in range(len(dag)) if not done[v] and waiting[v] == 0)
    order: list[int] = []
    while queue:
        v = queue.popleft()
        order.append(v)
        for c in dag.consumers[v]:
            waiting[c] -= 1
            if waiting[c] == 0:
                queue.append(c)
    return order


_SCORE_CACHE: weakref.WeakKeyDictionary[Dag, list[int]] = weakref.WeakKeyDictionary()


def release_scores(dag: Dag) -> list[int]:
    """Eq. (7) scores of ``dag``, computed once per graph object."""
    if dag not in _SCORE_CACHE:
        _SCORE_CACHE[dag] = _compute_release_scores(dag)
    return _SCORE_CACHE[dag]


def _compute_release_scores(dag: Dag) -> list[int]:
    """Eq. (7) for every vertex, from descendant sets kept as bitsets.

    Vertex ids are topological, so a reverse sweep sees every consumer before its sources; a
    descendant set is dropped once all its sources have used it. The weighted count
    sum_{w in Reach(v)} (out(w) - in(w)) is taken plane by plane over the binary digits of the
    positive and negative parts. O(|V| |E| / wordsize).
    """
    n = len(dag)
    parents, consumers = dag.parents, dag.consumers
    planes: list[tuple[int, int]] = []  # (signed weight, bitset of vertices with that digit)
    weights = [len(consumers[v]) - len(parents[v]) for v in range(n)]
    for sign in (1, -1):
        digit = 0
        while any((sign * w) >> digit > 0 for w in weights):
            members = sum(
                1 << v for v, w in enumerate(weights) if ((sign * w) >> digit) & 1 and sign * w > 0
            )
            planes.append((sign << digit, members))
            digit += 1
    pending = [len(p) for p in parents]
    reach: dict[int, int] = {}
    scores = [0] * n
    for v in range(n - 1, -1, -1):
        r = 1 << v
        for c in consumers[v]:
            r |= reach[c]
            pending[c] -= 1
            if pending[c] == 0:
                del reach[c]
        if pending[v]:
            reach[v] = r
        scores[v] = sum(w * (r & m).bit_count() for w, m in planes)
    return scores


def demand_ranks(dag: Dag, demand_order: Sequence[int]) -> list[int]:
    """Position in ``demand_order`` of the earliest output each vertex contributes to."""
    n = len(dag)
    rank = [n + len(demand_order)] * n
    for pos, v in enumerate(demand_order):
        rank[v] = min(rank[v], pos)
    for v in range(n - 1, -1, -1):
        for c in dag.consumers[v]:
            if rank[c] < rank[v]:
                rank[v] = rank[c]
    return rank


def list_schedule(dag: Dag, keys: Sequence) -> list[int]:
    """Ready-set list scheduling: always take the ready vertex with the smallest key."""
    done = _initially_done(dag)
    waiting = [sum(1 for p in dag.parents[v] if not done[p]) for v in range(len(dag))]
    ready = [(keys[v], v) for v in range(len(dag)) if not done[v] and waiting[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for c in dag.consumers[v]:
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, (keys[c], c))
    return order


def dsa_order(dag: Dag, demand_order: Sequence[int], use_release_score: bool = True) -> list[int]:
    """The DSA greedy. ``use_release_score=False`` drops the Eq. (7) tie-break, which the
    scheduler uses on graphs too large for the O(|V| |E|) score (see ``Orchestrator``)."""
    rank = demand_ranks(dag, demand_order)
    score = release_scores(dag) if use_release_score else [0] * len(dag)
    return list_schedule(dag, [(rank[v], -score[v], v) for v in range(len(dag))])


def eq7_only_order(dag: Dag) -> list[int]:
    score = release_scores(dag)
    return list_schedule(dag, [(-score[v], v) for v in range(len(dag))])
