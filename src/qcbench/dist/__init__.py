"""Benchmarks of the distributed engines (``qcdist``): the pull-versus-static ablation under
MPI, per-task costs measured on one device, communication costs measured between ranks, and
the scaling model that predicts many devices from them (``python -m qcbench.dist``)."""
