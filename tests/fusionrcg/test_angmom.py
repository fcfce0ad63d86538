import numpy as np
import pytest
from pyscf import gto

from fusionrcg.angmom import (
    ClassError,
    QuartetClass,
    canonical_classes,
    cart2sph,
    cart_components,
    ncart,
    nsph,
)


def test_parse_accepts_common_spellings():
    assert QuartetClass.parse("2,2,1,1") == QuartetClass(2, 2, 1, 1)
    assert QuartetClass.parse("(2,1|1,0)") == QuartetClass(2, 1, 1, 0)
    assert QuartetClass.parse(" 0 0 0 0 ") == QuartetClass(0, 0, 0, 0)


@pytest.mark.parametrize("text", ["2,2,1", "2,2,1,1,0", "a,b,c,d", "", "2.5,1,1,1"])
def test_parse_rejects_malformed(text):
    with pytest.raises(ClassError, match="four integers"):
        QuartetClass.parse(text)


@pytest.mark.parametrize(
    "ls, message",
    [((5, 0, 0, 0), "exceeds"), ((0, -1, 0, 0), "negative"), ((0, 0, 1.0, 0), "integer")],
)
def test_class_rejects_bad_l(ls, message):
    with pytest.raises(ClassError, match=message):
        QuartetClass(*ls)


def test_canonical_classes_count_and_invariance():
    classes = canonical_classes(4)
    assert len(classes) == 120  # 15 ordered pairs, 15*16/2 pairs of pairs
    assert all(q.is_canonical() for q in classes)
    assert QuartetClass(0, 2, 3, 1).canonical() == QuartetClass(3, 1, 2, 0)
    assert QuartetClass(1, 1, 2, 0).canonical() == QuartetClass(2, 0, 1, 1)


def test_cartesian_order_matches_pyscf_labels():
    mol = gto.M(atom="O 0 0 0", basis={"O": [[4, (1.0, 1.0)]]}, cart=True, spin=0, charge=8)
    labels = [lab.split()[-1] for lab in mol.cart_labels()]
    expected = ["".join("x" * i + "y" * j + "z" * k) for i, j, k in cart_components(4)]
    assert [lab[2:] for lab in labels] == expected


@pytest.mark.parametrize("l", range(5))
def test_cart2sph_shapes_and_identity_for_s_p(l):
    t = cart2sph(l)
    assert t.shape == (ncart(l), nsph(l))
    if l <= 1:
        np.testing.assert_array_equal(t, np.eye(ncart(l)))
    else:
        np.testing.assert_array_equal(t, gto.cart2sph(l))


def test_class_tags_round_trip():
    from fusionrcg.angmom import ClassError

    for cls in (QuartetClass(2, 2, 1, 1), QuartetClass(1, 0, 1, 0, deriv=3)):
        assert QuartetClass.from_tag(cls.tag) == cls
    for bad in ("221", "2211_dE", "22x1"):
        with pytest.raises(ClassError):
            QuartetClass.from_tag(bad)
