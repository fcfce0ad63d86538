#!/bin/bash
# git bisect run step: the generated C++ (backend="cpu") value of the (3,3|0,0) ANO-RCC element
# against its exact value; good while the error is under 8e-13. Run from a worktree of the
# repository (git bisect start 4e45f54 f1a513d; git bisect run $HERE/bis.sh).
HERE=$(cd "$(dirname "$0")" && pwd)
out=$(FUSIONRCG_KERNEL_DIR=${KDIR:-$PWD/.bisect-kernels} PYTHONPATH=$PWD/src timeout 300 \
      python3 "$HERE/val.py" cpu 2>/dev/null | tail -1)
echo "$(git log --oneline -1 | cut -c1-60) :: $out" >> "$HERE/bis.log"
[ -z "$out" ] && exit 125
python3 -c "import sys; sys.exit(0 if abs(float('$out'.split()[1])) < 8e-13 else 1)"
