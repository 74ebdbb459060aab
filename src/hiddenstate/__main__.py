"""``python -m hiddenstate``: the command line (see :mod:`hiddenstate.cli`)."""

import sys

from .cli import main

sys.exit(main())
