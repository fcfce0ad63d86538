"""``python -m fusionrcg``: the ``fusionrcg`` command line."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
