"""What splitting a quartet's outputs over threads would cost the slot-bound Tier 1 classes
(no GPU): the outputs grouped by one output index, each group with the accumulators its
Phase 2 cone reads and the VRR vertices those need (pruned, so a VRR vertex several groups
need is computed once per group). Per class: the largest group's accumulators against the
whole bank, and the graph FLOPs per contracted quartet of all groups against the class's at
its benchmark primitive count.

    python estimate.py > estimate.md
"""

from fusionrcg.angmom import QuartetClass
from fusionrcg.graph.ir import node_flops
from fusionrcg.orchestration.plan import plan_class

# mean primitive quartets per contracted quartet on the benchmark bases (reports/eri/gpu)
CLASSES = {(2, 2, 1, 1): 2.25, (2, 1, 2, 1): 2.25, (3, 1, 1, 1): 2.13}


def cone(dag, roots) -> set[int]:
    seen, stack = set(), list(roots)
    while stack:
        v = stack.pop()
        if v not in seen:
            seen.add(v)
            stack.extend(t.src for t in dag.nodes[v].terms)
    return seen


def main() -> None:
    print("| class | split by output index | groups | accumulators (largest group / bank) |"
          " VRR FLOPs (groups / class) | FLOPs per quartet (groups / class) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for ls, prims in CLASSES.items():
        plan = plan_class(QuartetClass(*ls))
        g = plan.graph
        n_acc = plan.n_accumulators
        shape = g.output_shape
        vrr_flops = sum(node_flops(n) for n in g.vrr.nodes)
        base = prims * (vrr_flops + n_acc) + plan.flops.hrr_per_contracted
        for axis in range(4):
            if shape[axis] == 1:
                continue
            groups = {}
            for k, v in enumerate(g.hrr.outputs):
                index = k
                for size in reversed(shape[axis + 1 :]):
                    index //= size
                groups.setdefault(index % shape[axis], []).append(v)
            acc = [{u for u in cone(g.hrr, roots) if u < n_acc} for roots in groups.values()]
            vrr = [cone(g.vrr, [g.vrr.outputs[k] for k in a]) for a in acc]
            split_vrr = sum(sum(node_flops(g.vrr.nodes[u]) for u in part) for part in vrr)
            split = prims * (split_vrr + n_acc) + plan.flops.hrr_per_contracted
            print(f"| {QuartetClass(*ls)} | {'abcd'[axis]} | {len(groups)} | "
                  f"{max(map(len, acc))} / {n_acc} | {split_vrr / vrr_flops:.2f}x | "
                  f"{split / base:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
