import pytest

from qcbench.molecules import GeometryError, load, read_xyz, resolve


def test_reads_project_geometries():
    atoms = read_xyz(resolve("water_clusters/002"))
    assert [a[0] for a in atoms] == ["O", "H", "H"]
    mol = load("water_clusters/002", "sto-3g")
    assert mol.natm == 3 and mol.nelectron == 10


@pytest.mark.parametrize(
    "text, message",
    [
        ("x\n\nH 0 0 0\n", "atom count"),
        ("2\n\nH 0 0 0\n", "lists 1"),
        ("1\n\nH 0 zero 0\n", "symbol x y z"),
    ],
)
def test_malformed_geometry(tmp_path, text, message):
    path = tmp_path / "bad.xyz"
    path.write_text(text)
    with pytest.raises(GeometryError, match=message):
        read_xyz(path)


def test_missing_geometry(tmp_path):
    with pytest.raises(GeometryError, match="no such"):
        read_xyz(tmp_path / "absent.xyz")
