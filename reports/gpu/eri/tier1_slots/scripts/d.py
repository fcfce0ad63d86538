"""The campaign bench with Tier 1 launched in blocks of 32 threads instead of 128."""

import sys

import fusionrcg.runtime.gpu as gpu
from fusionrcg.campaign import main

gpu.THREADS = 32
sys.exit(main(sys.argv[1:]))
