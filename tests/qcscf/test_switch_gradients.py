"""qcscf.apply's gradient hooks on SCF classes laid out as PySCF's and GPU4PySCF's are: each
hook of an object with both engines gives one gradient object with both engines' parts, whichever
of ``nuc_grad_method`` and ``Gradients`` makes it and whichever calls the other. The stand-ins
are PySCF CPU classes with GPU4PySCF's hooks, so that no GPU is needed."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from pyscf import dft, gto, lib, scf
from pyscf.grad import rhf as rhf_grad
from pyscf.grad import rks as rks_grad

import fusionrcg
import kerneldi
import qcscf
from fusionrcg.jk.grad import FusionGradMixin
from kerneldi.grad import KerneLDIGradMixin

GRADIENT_TOL = 1e-7  # Hartree/Bohr


class GPU4PySCFLayoutRKS(dft.rks.RKS):
    """GPU4PySCF 1.9: ``SCF.nuc_grad_method`` returns ``self.Gradients()``, and ``RKS``'s
    ``Gradients`` makes the gradient object."""

    def nuc_grad_method(self):
        return self.Gradients()

    def Gradients(self):  # noqa: N802 (PySCF's name)
        return rks_grad.Gradients(self)


class GPU4PySCFLayoutRHF(scf.hf.RHF):
    def nuc_grad_method(self):
        return self.Gradients()

    def Gradients(self):  # noqa: N802 (PySCF's name)
        return rhf_grad.Gradients(self)


class ReversedLayoutRKS(dft.rks.RKS):
    """``Gradients`` returns ``self.nuc_grad_method()``, which makes the gradient object."""

    def nuc_grad_method(self):
        return rks_grad.Gradients(self)

    def Gradients(self):  # noqa: N802 (PySCF's name)
        return self.nuc_grad_method()


class AliasedLayoutRKS(dft.rks.RKS):
    Gradients = lib.class_as_method(rks_grad.Gradients)
    nuc_grad_method = Gradients


RKS_CLASSES = [dft.rks.RKS, GPU4PySCFLayoutRKS, ReversedLayoutRKS, AliasedLayoutRKS]
RKS_IDS = ["pyscf", "gpu4pyscf-layout", "reversed", "aliased"]


def water():
    return gto.M(atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59", basis="sto-3g", verbose=0)


def mixins_in(grad) -> list[type]:
    return [c for c in type(grad).__mro__ if c in (FusionGradMixin, KerneLDIGradMixin)]


@pytest.mark.parametrize("hook", ["nuc_grad_method", "Gradients"])
@pytest.mark.parametrize("cls", RKS_CLASSES, ids=RKS_IDS)
def test_both_engines_give_one_gradient_object_with_both_parts(cls, hook):
    mf = qcscf.apply(cls(water(), xc="m062x"))
    grad = getattr(mf, hook)()  # GPU4PySCF's layout recursed without end here
    assert isinstance(grad, rks_grad.Gradients) and grad.base is mf
    assert sorted(c.__name__ for c in mixins_in(grad)) == ["FusionGradMixin", "KerneLDIGradMixin"]


@pytest.mark.parametrize("hook", ["nuc_grad_method", "Gradients"])
@pytest.mark.parametrize("cls", RKS_CLASSES, ids=RKS_IDS)
def test_xc_engine_alone(cls, hook):
    mf = qcscf.apply(cls(water(), xc="m062x"), jk=False)
    grad = getattr(mf, hook)()
    assert mixins_in(grad) == [KerneLDIGradMixin]


@pytest.mark.parametrize("hook", ["nuc_grad_method", "Gradients"])
@pytest.mark.parametrize("cls", [scf.hf.RHF, GPU4PySCFLayoutRHF], ids=["pyscf", "gpu4pyscf-layout"])
def test_jk_engine_alone(cls, hook):
    mf = fusionrcg.apply(cls(water()), backend="cpu")
    grad = getattr(mf, hook)()
    assert isinstance(grad, rhf_grad.Gradients) and mixins_in(grad) == [FusionGradMixin]


def test_a_hook_called_again_after_a_failure_still_wraps():
    """A failed gradient build leaves no hook passing its calls through."""

    class Failing(GPU4PySCFLayoutRKS):
        fail = True

        def Gradients(self):  # noqa: N802 (PySCF's name)
            if self.fail:
                raise RuntimeError("no gradient")
            return super().Gradients()

    mf = qcscf.apply(Failing(water(), xc="pbe"))
    with pytest.raises(RuntimeError, match="no gradient"):
        mf.nuc_grad_method()
    mf.fail = False
    assert len(mixins_in(mf.nuc_grad_method())) == 2


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_gpu4pyscf_layout_gradient_matches_pyscf():
    """M06-2X, as ``qcbench.scf.bench gradient --method m062x`` runs it."""
    mol = water()
    ref = dft.RKS(mol, xc="m062x")
    ref.conv_tol = 1e-11
    ref.kernel()
    ours = qcscf.apply(GPU4PySCFLayoutRKS(mol, xc="m062x"))
    ours.conv_tol = 1e-11
    ours.direct_scf_tol = 1e-14
    ours.kernel()
    assert isinstance(ours._numint, kerneldi.NumInt)
    found = ours.nuc_grad_method().kernel()
    assert np.abs(found - ref.nuc_grad_method().kernel()).max() <= GRADIENT_TOL
