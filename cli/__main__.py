"""``python -m initmem.cli``: the command line, as the ``initmem`` script runs it."""

import sys

from initmem.cli.main import main

sys.exit(main())
