"""``python -m kerneldi``: says how the library is used and where its one command is."""

from __future__ import annotations

import subprocess
import sys


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "kerneldi", *args], capture_output=True, text=True, timeout=120
    )


def test_python_m_kerneldi_explains_the_library():
    for args in ((), ("--help",)):
        res = run(*args)
        assert res.returncode == 0, res.stderr
        assert "kerneldi.NumInt(backend=" in res.stdout
        assert "python -m kerneldi.bench --help" in res.stdout


def test_python_m_kerneldi_rejects_arguments():
    res = run("scf")
    assert res.returncode == 2 and "unrecognized arguments: scf" in res.stderr
