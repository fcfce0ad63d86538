"""Studies of the ERI engine (FusionRCG): GPU benchmarks (``bench``), the GPU campaign
(``campaign``), the comparison with PySCF (``verify``) and the published tables and figures
(``reporting``)."""
