import pytest

from qcbench.molecules import GeometryError, load, read_xyz, resolve


def test_reads_project_geometries():
    atoms = read_xyz(resolve("water_clusters/002"))
    assert [a[0] for a in atoms] == ["O", "H", "H"]
    mol = load("water_clusters/002", "sto-3g")
    assert mol.natm == 3 and mol.nelectron == 10


def test_comment_line_charge_and_multiplicity(tmp_path):
    mol = load("proteins/1UAO", "sto-3g")  # chignolin, charge=-2 multiplicity=1
    assert mol.charge == -2 and mol.spin == 0 and mol.natm == 138
    path = tmp_path / "oh.xyz"
    path.write_text("2\nhydroxyl charge=0 multiplicity=2\nO 0 0 0\nH 0 0 0.97\n")
    mol = load(str(path), "sto-3g", root=tmp_path)
    assert mol.charge == 0 and mol.spin == 1
    assert load(str(path), "sto-3g", root=tmp_path, charge=-1, spin=0).nelectron == 10
    path.write_text("2\ncharge=minus\nO 0 0 0\nH 0 0 0.97\n")
    with pytest.raises(GeometryError, match="integer"):
        load(str(path), "sto-3g", root=tmp_path)


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
