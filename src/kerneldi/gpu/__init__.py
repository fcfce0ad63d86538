"""GPU backend: CuPy host code, CUDA block-pair kernels (``kernels.cu``), the cuBLAS baseline."""
