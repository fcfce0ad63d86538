"""The kernel library: the engine's compiles through the toolchain (``compiler``) and the
content-addressed store of built kernels with their launch metadata (``store``)."""
