"""Studies of the two engines: benchmarks, verification campaigns, tables and figures.

``qcbench.eri`` studies FusionRCG and ``qcbench.xc`` KerneLDI, laid out alike (``bench``: the
measurements; the rest: what the pipeline publishes from them). The modules at this level are
shared by both: molecules, provenance records, tables, work partitioning. The engines never
import this package.
"""
