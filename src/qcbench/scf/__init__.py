"""SCF benchmarks of the J/K engine against GPU4PySCF (FusionRCG section V-C, Figs. 9-10)."""
