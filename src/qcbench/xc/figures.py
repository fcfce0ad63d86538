"""Plots and tables of the XC engine's results: KerneLDI Fig. 3 from the CPU threshold sweep,
Figs. 2 and 4 from the GPU benchmark's JSON (``python -m qcbench.xc.bench``), with the figures
the paper states for its V100 beside ours."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..records import Record, ordered
from .bench import joined

FLOOR = 1e-16  # errors that are exactly zero are drawn here on log axes
PHASES = ("ao", "density", "potential")  # the engine's timed phases (bench: ours_phases_s)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def threshold_sweep_figure(df: pd.DataFrame, path: str | Path, default_t_d: float) -> None:
    """Fig. 3: |dExc| and max |dVxc| against t_d, one line per molecule (error against the
    engine without screening, so only the pair screening is measured)."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for molecule, rows in df.groupby("molecule", sort=False):
        rows = rows.sort_values("t_d")
        label = f"{molecule} ({rows['natm'].iloc[0]} atoms, {rows['basis'].iloc[0]})"
        for ax, col in zip(axes, ("d_exc_vs_unscreened", "max_d_vxc_vs_unscreened")):
            ax.loglog(rows["t_d"], rows[col].clip(lower=FLOOR), "o-", label=label)
    for ax, what in zip(axes, ("|dExc| (Hartree)", "max |dVxc|")):
        ax.axvline(default_t_d, ls="--", c="gray", label="default $t_d$")
        ax.set_xlabel("block-pair threshold $t_d$")
        ax.set_ylabel(what)
        ax.invert_xaxis()  # as in the paper: looser thresholds on the left
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_title(f"Exc error vs t_d (zeros drawn at {FLOOR:g})")
    axes[1].set_title("Vxc error vs t_d")
    axes[1].legend(fontsize=8)
    fig.savefig(path, dpi=130)
    plt.close(fig)


# -- GPU results ---------------------------------------------------------------------------


SIZE_SECTIONS = ("sweep", "tzvp", "madft", "gradient", "madft_gradient")
GRADIENT_SECTIONS = ("gradient", "madft_gradient")


def _sections(record: Record) -> dict[str, object]:
    """The JSON files of an ``xc-bench`` record by stem (its manifest lists them)."""
    names = [f["path"] for f in record.manifest["files"] if f["path"].endswith(".json")]
    return {Path(n).stem: json.loads(record.file(n).read_text()) for n in names}


def load_gpu(records: Sequence[Record]) -> dict:
    """The ``xc-bench`` records joined in the records' order as ``bench --merge`` joins parts:
    a later measured record of a molecule replaces the earlier one."""
    return joined([(r.id, _sections(r)) for r in ordered(records)])


def bench_keys(record: Record) -> set[tuple[str, str]]:
    """What an ``xc-bench`` record measured (``qcbench.runs.measurement_keys``): each
    measured molecule of the size sections."""
    return {
        (section, r["molecule"])
        for section, rows in _sections(record).items()
        if section in SIZE_SECTIONS
        for r in _measured(rows)
    }


def _measured(records) -> list[dict]:
    return [r for r in records if "skipped" not in r and "error" not in r]


def sweep_table(results: dict) -> pd.DataFrame:
    """One row per measured system of the sweep, def2-TZVP and Fig. 2 sets."""
    rows = []
    for section in ("sweep", "tzvp", "madft"):
        for r in _measured(results.get(section, [])):
            row = {
                "section": section,
                "molecule": r["molecule"],
                "natm": r["natm"],
                "nao": r["nao"],
                "basis": r["basis"],
                "npoints": r["npoints"],
                "gpu4pyscf_s": r["gpu4pyscf"]["median_s"],
                "exc_cublas_s": r.get("exc_cublas", {}).get("median_s", np.nan),
                "ours_setup_s": r.get("ours_first_call_s", np.nan),
                "ao_cached": r.get("ours_stats", {}).get("ao_cached"),
                # records from before the partial cache held all blocks or none
                "ao_cached_fraction": r.get("ours_stats", {}).get("ao_cached_fraction", np.nan),
                "retained_fraction": r.get("ours_stats", {}).get("retained_fraction", np.nan),
            }
            for mma in ("fp64", "fp64-tc", "fp16-tc"):
                ours = r.get(f"ours_{mma}", {})
                row[f"ours_{mma}_s"] = ours.get("median_s", np.nan)
                row[f"d_exc_{mma}_vs_gpu4pyscf"] = ours.get("vs_gpu4pyscf", {}).get("d_exc")
            row["ours_fp64_recompute_s"] = r.get("ours_fp64_recompute", {}).get("median_s")
            # from the first FP64 mode measured (the FP64 tensor cores where only they ran; both
            # do FP64 arithmetic and run the same pairs): the screening error against the dense
            # run, the pair fractions and the density form
            measured = [r.get(f"ours_{m}", {}) for m in ("fp64", "fp64-tc")]
            dense = (m.get("vs_exc_cublas", {}) for m in measured)
            row["d_exc_fp64_vs_exc_cublas"] = next(
                (e["d_exc"] for e in dense if "d_exc" in e), np.nan
            )
            pf = next((m["pair_fractions"] for m in measured if "pair_fractions" in m), {})
            # records from before the orbital form ran R = D Phi
            row["density_form"] = pf.get("density_form", "matrix")
            row["ours_matrix_form_s"] = r.get("ours_matrix_form", {}).get("median_s", np.nan)
            cluster = r.get("ours_cluster_order", {})
            row["ours_cluster_order_s"] = cluster.get("median_s", np.nan)
            row["cluster_order_retained_fraction"] = cluster.get("retained_fraction", np.nan)
            unrotated = r.get("ours_unrotated_orbitals", {})
            row["ours_unrotated_orbitals_s"] = unrotated.get("median_s", np.nan)
            row["unrotated_density_s"] = unrotated.get("phases_s", {}).get("density", np.nan)
            warp = r.get("ours_fp64-tc_warp", {})
            row["ours_fp64-tc_warp_s"] = warp.get("median_s", np.nan)
            for phase in ("density", "potential"):
                row[f"warp_{phase}_s"] = warp.get("phases_s", {}).get(phase, np.nan)
            # records from before the asynchronous staging was the default ran "sync"
            row["staging"] = pf.get("staging", "sync")
            staged = r.get("ours_fp64-tc_sync", {})
            row["ours_fp64-tc_sync_s"] = staged.get("median_s", np.nan)
            row["sync_density_s"] = staged.get("phases_s", {}).get("density", np.nan)
            # records from before the 2 x 2 output tiles were the default ran "1x1"
            row["potential_tiles"] = pf.get("potential_tiles", "1x1")
            for tiles in ("1x1", "2x2", "4x4"):
                other = r.get(f"ours_fp64-tc_{tiles}", {})
                row[f"ours_fp64-tc_{tiles}_s"] = other.get("median_s", np.nan)
                row[f"tiles{tiles}_potential_s"] = other.get("phases_s", {}).get(
                    "potential", np.nan
                )
            row["density_pair_fraction"] = pf.get("density_pair_fraction")
            row["potential_pair_fraction"] = pf.get("potential_pair_fraction")
            # one call timed phase by phase; "other" is the functional (libxc) and host work
            phases = r.get("ours_phases_s", {})
            row["phases_mode"] = phases.get("mode")
            for phase in PHASES:
                row[f"{phase}_s"] = phases.get(phase, 0.0 if phases else np.nan)
            row["other_s"] = phases.get("call", np.nan) - sum(row[f"{p}_s"] for p in PHASES)
            rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    # the faster of the two FP64 modes (CUDA cores, tensor cores); FP16 is reported apart
    df["best_fp64_s"] = df[[f"ours_{m}_s" for m in ("fp64", "fp64-tc")]].min(axis=1)
    df["speedup_vs_exc_cublas"] = df["exc_cublas_s"] / df["best_fp64_s"]
    df["speedup_vs_gpu4pyscf"] = df["gpu4pyscf_s"] / df["best_fp64_s"]
    return df.sort_values(["section", "natm"]).reset_index(drop=True)


def _label_speedups(ax, rows: pd.DataFrame, time_col: str) -> None:
    """Each point of ``time_col`` (ms) labelled with its speedup over EXC-cuBLAS."""
    for _, r in rows.iterrows():
        if np.isfinite(r["speedup_vs_exc_cublas"]):
            ax.annotate(
                f"{r['speedup_vs_exc_cublas']:.1f}x",
                (r["natm"], r[time_col] * 1e3),
                textcoords="offset points",
                xytext=(4, -12),
                fontsize=7,
            )


def gradient_table(results: dict) -> pd.DataFrame:
    """One row per measured system of the gradient sections: the XC gradient's time by
    GPU4PySCF (``grad.rks.get_exc``), ours and the dense path (EXC-cuBLAS), and the largest
    difference of ours and of the dense path from GPU4PySCF's (Eh/Bohr)."""
    rows = []
    for section in GRADIENT_SECTIONS:
        for r in _measured(results.get(section, [])):
            ours, dense = r.get("ours", {}), r.get("exc_cublas", {})
            rows.append(
                {
                    "section": section,
                    "molecule": r["molecule"],
                    "natm": r["natm"],
                    "nao": r["nao"],
                    "basis": r["basis"],
                    "npoints": r["npoints"],
                    "gpu4pyscf_s": r.get("gpu4pyscf", {}).get("median_s", np.nan),
                    "ours_s": ours.get("median_s", np.nan),
                    "ours_setup_s": ours.get("setup_s", np.nan),
                    "exc_cublas_s": dense.get("median_s", np.nan),
                    "ours_max_d_grad": ours.get("max_d_grad", np.nan),
                    "exc_cublas_max_d_grad": dense.get("max_d_grad", np.nan),
                }
            )
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["speedup_vs_exc_cublas"] = df["exc_cublas_s"] / df["ours_s"]
    df["speedup_vs_gpu4pyscf"] = df["gpu4pyscf_s"] / df["ours_s"]
    return df.sort_values(["section", "natm"]).reset_index(drop=True)


def fig4_gradient(df: pd.DataFrame, path: str | Path) -> None:
    """Fig. 4b: XC gradient time (M06-2X, def2-SVP, grid level 4) against the number of
    atoms: ours, EXC-cuBLAS and GPU4PySCF."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 5), constrained_layout=True)
    if not df.empty:
        rows = df[df["section"] == "gradient"].sort_values("natm")
        for col, label, style in (
            ("ours_s", "KerneLDI", "o-"),
            ("exc_cublas_s", "EXC-cuBLAS", "D-"),
            ("gpu4pyscf_s", "GPU4PySCF grad.rks.get_exc", "v-"),
        ):
            ok = rows[col].notna()
            if ok.any():
                ax.semilogy(rows["natm"][ok], rows[col][ok] * 1e3, style, label=label)
        _label_speedups(ax, rows, "ours_s")
    ax.set_xlabel("atoms")
    ax.set_ylabel("XC gradient time (ms)")
    ax.set_title("XC nuclear gradient vs size (labels: ours over EXC-cuBLAS)")
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def fig2_gradient(df: pd.DataFrame, path: str | Path) -> None:
    """Fig. 2 (right): speedup of the XC gradient over EXC-cuBLAS against its largest
    difference from GPU4PySCF's, over the MADFT molecules (def2-TZVP), colored by basis size."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.8), constrained_layout=True)
    part = df[df["section"] == "madft_gradient"] if not df.empty else df
    if not part.empty:
        part = part[part["speedup_vs_exc_cublas"].notna() & part["ours_max_d_grad"].notna()]
    if not part.empty:
        sc = ax.scatter(
            part["ours_max_d_grad"].clip(lower=FLOOR),
            part["speedup_vs_exc_cublas"],
            c=part["nao"],
            cmap="viridis",
        )
        fig.colorbar(sc, ax=ax, label="basis functions")
    ax.axvspan(1e-11, 1e-9, color="orange", alpha=0.15, label="paper: gradient MAE range")
    ax.set_xscale("log")
    ax.set_xlabel("max |dE_xc/dR (ours) - GPU4PySCF| (Eh/Bohr)")
    ax.set_ylabel("speedup over EXC-cuBLAS")
    ax.set_title("XC gradient: speedup vs error (M06-2X, def2-TZVP, grid level 4)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def gradient_summary(df: pd.DataFrame) -> list[str]:
    """Markdown lines: the gradient goals (at least 5x over EXC-cuBLAS at 400+ atoms, faster
    than GPU4PySCF at 100+ atoms def2-TZVP) and the accuracy, from the gradient table."""
    if df.empty:
        return ["No XC gradient measured yet."]
    lines = []
    big = df[(df["natm"] >= 400) & df["speedup_vs_exc_cublas"].notna()]
    if not big.empty:
        worst = big["speedup_vs_exc_cublas"].min()
        lines.append(
            f"- over EXC-cuBLAS at >= 400 atoms: {worst:.1f}x at least (goal 5x: "
            f"{'MET' if worst >= 5 else 'NOT MET'})"
        )
    tz = df[(df["natm"] >= 100) & (df["basis"] == "def2-tzvp") & df["speedup_vs_gpu4pyscf"].notna()]
    if not tz.empty:
        worst = tz["speedup_vs_gpu4pyscf"].min()
        lines.append(
            f"- over GPU4PySCF at >= 100 atoms, def2-TZVP: {worst:.2f}x at least (goal > 1x: "
            f"{'MET' if worst > 1 else 'NOT MET'})"
        )
    err = df["ours_max_d_grad"].max()
    lines.append(f"- largest difference from GPU4PySCF's XC gradient: {err:.1e} Eh/Bohr")
    return lines


def fig4(df: pd.DataFrame, path: str | Path, paper: dict) -> None:
    """Fig. 4: EXC energy time (M06-2X, def2-SVP, grid level 4) against the number of atoms."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 5), constrained_layout=True)
    rows = df[df["section"] == "sweep"]
    series = [
        ("ours_fp64_s", "KerneLDI FP64", "o-"),
        ("ours_fp64-tc_s", "KerneLDI FP64 tensor cores", "s-"),
        ("ours_fp16-tc_s", "KerneLDI FP16 tensor cores", "^:"),
        ("exc_cublas_s", "EXC-cuBLAS", "D-"),
        ("gpu4pyscf_s", "GPU4PySCF nr_rks", "v-"),
    ]
    for family, marker_fill in (("water", "full"), ("gly", "none")):
        part = rows[rows["molecule"].str.contains(family)].sort_values("natm")
        if part.empty:
            continue
        for col, label, style in series:
            ok = part[col].notna()
            if not ok.any():  # a mode this run did not measure
                continue
            ax.semilogy(
                part["natm"][ok],
                part[col][ok] * 1e3,
                style,
                fillstyle=marker_fill,
                label=f"{label} ({family})",
            )
    _label_speedups(ax, rows, "best_fp64_s")
    lo, hi = paper["crossover_atoms"]
    ax.axvspan(lo, hi, color="gray", alpha=0.12, label="paper (V100): crossover range")
    ax.set_xlabel("atoms")
    ax.set_ylabel("EXC energy time (ms)")
    ax.set_title(
        "Time vs size on this GPU (labels: faster FP64 mode over EXC-cuBLAS)\n"
        f"paper on a V100: up to {paper['max_speedup_over_exc_cublas']:.0f}x over EXC-cuBLAS"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6.5, ncol=2)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def fig2(df: pd.DataFrame, path: str | Path, paper: dict) -> None:
    """Fig. 2: speedup over EXC-cuBLAS against the energy difference to it, colored by basis
    size, with the paper's V100 range."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.8), constrained_layout=True)
    ok = df["speedup_vs_exc_cublas"].notna() & df["d_exc_fp64_vs_exc_cublas"].notna()
    part = df[ok]
    sc = ax.scatter(
        part["d_exc_fp64_vs_exc_cublas"].clip(lower=FLOOR),
        part["speedup_vs_exc_cublas"],
        c=part["nao"],
        cmap="viridis",
    )
    fig.colorbar(sc, ax=ax, label="basis functions")
    lo, hi = paper["energy_mae_range_hartree"]
    ax.axvspan(lo, hi, color="orange", alpha=0.15, label="paper (V100): error range")
    ax.axhline(paper["max_speedup_over_exc_cublas"], ls=":", c="orange", label="paper: max speedup")
    ax.set_xscale("log")
    ax.set_xlabel("|Exc(ours) - Exc(EXC-cuBLAS)| (Hartree)")
    ax.set_ylabel("speedup over EXC-cuBLAS")
    ax.set_title("Speedup vs error (M06-2X, def2-SVP, grid level 4)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _fmt(x, spec=".3g") -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return format(x, spec) if isinstance(x, (int, float, np.floating)) else str(x)


def gpu_summary(results: dict, table: pd.DataFrame) -> str:
    """Markdown: device, accuracy verdicts, SCF energies, timings and the paper's figures."""
    from qcbench.tables import to_markdown

    prov = results.get("provenance", {})
    lines = ["# XC engine on the GPU", ""]
    cupy_version = prov.get("versions", {}).get("cupy-cuda13x", "?")
    lines.append(
        f"Device: {prov.get('gpu', '?')} ({prov.get('memory_gib', 0):.0f} GiB), "
        f"CUDA runtime {prov.get('cuda_runtime')}, CuPy {cupy_version}, "
        f"GPU4PySCF {prov.get('gpu4pyscf')}; commit {prov.get('commit')}; "
        f"cuBLAS DGEMM {_fmt(prov.get('dgemm_fp64_tflops'))} TFLOP/s."
    )
    lines.append(f"Command: `{prov.get('command')}`")
    for name, other in sorted(results.items()):
        if name.startswith("provenance_"):
            lines.append(
                f"Also ({name.removeprefix('provenance_')}): {other.get('gpu', '?')}, commit "
                f"{other.get('commit')}, `{other.get('command')}`"
            )
    acc = _measured(results.get("accuracy", []))
    if acc:
        lines += ["", "## Accuracy against PySCF's NumInt on the same grid", ""]
        rows = [
            {
                "molecule": a["molecule"],
                "kind": a["kind"],
                "xc": a["xc"],
                "mode": a["mma"],
                "|dExc|": a["vs_pyscf"]["d_exc"],
                "max |dVxc|": a["vs_pyscf"]["max_d_vxc"],
                "|dExc| vs GPU4PySCF": a["vs_gpu4pyscf"]["d_exc"],
                "meets 1e-9 / 1e-8": a["pass"],
            }
            for a in acc
        ]
        lines.append(to_markdown(pd.DataFrame(rows)))
    for scf in results.get("scf", []):
        lines += [
            "",
            f"## M06-2X SCF ({scf['molecule']}, {scf['basis']}, grid {scf['grid_level']})",
        ]
        lines.append("")
        for label, r in scf.items():
            if isinstance(r, dict) and "energy" in r:
                extra = f", |dE| = {_fmt(r['d_energy'])} Eh" if "d_energy" in r else ""
                lines.append(
                    f"- {label}: E = {r['energy']:.10f} Eh, {r['cycles']} cycles, "
                    f"nr_rks median {_fmt(r['nr_rks_median_after_first_s'])} s{extra}"
                )
    if not table.empty:
        cols = [
            "section",
            "molecule",
            "natm",
            "nao",
            "npoints",
            "ours_fp64_s",
            "ours_fp64-tc_s",
            "ours_fp16-tc_s",
            "ours_fp64_recompute_s",
            "density_form",
            "ours_matrix_form_s",
            "ours_unrotated_orbitals_s",
            "ours_cluster_order_s",
            "cluster_order_retained_fraction",
            "ours_fp64-tc_warp_s",
            "staging",
            "ours_fp64-tc_sync_s",
            "potential_tiles",
            "ours_fp64-tc_1x1_s",
            "ours_fp64-tc_2x2_s",
            "ours_fp64-tc_4x4_s",
            "best_fp64_s",
            "exc_cublas_s",
            "gpu4pyscf_s",
            "speedup_vs_exc_cublas",
            "speedup_vs_gpu4pyscf",
            "ours_setup_s",
            "ao_cached",
            "ao_cached_fraction",
            "retained_fraction",
            "potential_pair_fraction",
            "d_exc_fp64_vs_exc_cublas",
        ]
        lines += ["", "## EXC energy time (M06-2X, grid level 4; seconds, medians)", ""]
        lines.append(
            "Speedups use the faster FP64 mode (CUDA cores or tensor cores); the engine's setup "
            "(orders, blocks, AO cache) is the first call, paid once per geometry and grid. "
            "density_form: the densities from R = D Phi (matrix, the paper's) or from the "
            "occupied orbitals the SCF density carries (orbitals, chosen by the estimated block "
            "products); ours_matrix_form_s: the same call with R = D Phi where the orbitals ran; "
            "ours_unrotated_orbitals_s: the orbitals as the SCF gave them instead of their "
            "Cholesky rotation (records without it ran them unrotated); ours_fp64-tc_warp_s: "
            "FP64 tensor cores with the warp-tiled kernels (tiling='warp'); staging: how the "
            "density kernels of ours_fp64-tc staged their operands (async: cp.async into two "
            "buffers, the default since 2026-12-01; sync: through registers); "
            "ours_fp64-tc_sync_s: the same call with staging='sync'; potential_tiles: the "
            "output tiles per thread block of the potential that ran (potential_tiles='auto': "
            "2x2 where at least 60% of the blocks are kept, else 1x1, until the support basis "
            "order; from then 2x2 from 20% kept under that order); ours_fp64-tc_1x1_s, _2x2_s, "
            "_4x4_s: the same call with those tiles. Basis order: the records of Taxol and "
            "madft/130282525 (tzvp), water_clusters/010 and the 14 MADFT systems ran the "
            "support order (the default since 2026-12-01, seventh session; provenance parts "
            "xc_support_*), the others the paper's overlap-row clusters; "
            "ours_cluster_order_s: the same call with basis_order='cluster' (new blocks), "
            "cluster_order_retained_fraction its kept blocks."
        )
        lines.append("")
        lines.append(to_markdown(table[cols]))
        phased = table[table["phases_mode"].notna()]
        if not phased.empty:
            lines += ["", "## Where the time goes (one call timed phase by phase; seconds)", ""]
            lines.append(
                "AO values: evaluation and gathering of the kept blocks when they are not cached "
                "(0 when cached; ao_cached_fraction: the share of the kept blocks held between "
                "calls when not all fit, the others evaluated once per call); density and "
                "potential: the block-pair kernels; other: the "
                "functional (libxc) and the host's work; warp_*: the phases with the warp-tiled "
                "kernels (FP64 tensor cores) where measured; unrotated_density_s: the density "
                "with the orbitals not rotated; sync_density_s: with staging='sync'; "
                "tiles*_potential_s: the potential with those output tiles per thread block."
            )
            lines.append("")
            pcols = ["section", "molecule", "natm", "nao", "phases_mode"]
            pcols += [f"{p}_s" for p in PHASES] + ["other_s", "warp_density_s", "warp_potential_s"]
            pcols += ["unrotated_density_s", "sync_density_s"]
            pcols += [f"tiles{t}_potential_s" for t in ("1x1", "2x2", "4x4")]
            pcols += ["ao_cached", "ao_cached_fraction"]
            lines.append(to_markdown(phased[pcols]))
    paper = prov.get("paper_v100", {})
    if paper:
        lines += ["", "## The paper's V100 figures (as its text states them)", ""]
        lines.append(
            f"- up to {paper['max_speedup_over_exc_cublas']}x over EXC-cuBLAS; energy MAE "
            f"{paper['energy_mae_range_hartree'][0]:g} to {paper['energy_mae_range_hartree'][1]:g}"
            f" Eh; crossover at {paper['crossover_atoms'][0]}-{paper['crossover_atoms'][1]} atoms"
        )
        speedups = ", ".join(
            f"{k} {v}x" for k, v in paper["scf_speedup_over_gpu4pyscf_def2tzvp"].items()
        )
        lines.append(f"- end-to-end SCF speedup over GPU4PySCF (def2-TZVP): {speedups}")
    lines += ["", "## XC nuclear gradient (Figs. 2 right and 4b)", ""]
    lines += gradient_summary(gradient_table(results))
    skipped = [
        f"{s}: {r['molecule']} ({r.get('skipped') or r.get('error')})"
        for s in ("accuracy", "sweep", "tzvp", "madft", *GRADIENT_SECTIONS)
        for r in results.get(s, [])
        if "skipped" in r or "error" in r
    ]
    if skipped:
        lines += ["", "## Not measured", "", *(f"- {s}" for s in skipped)]
    return "\n".join(lines) + "\n"
