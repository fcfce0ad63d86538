"""Studies of the XC engine (KerneLDI): benchmarks against PySCF and GPU4PySCF (``bench``),
the CPU experiments of the pipeline (``experiments``) and their tables and figures
(``figures``)."""
