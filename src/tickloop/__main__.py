"""`python -m tickloop`: the same as the `tickloop` console script."""

import sys

from tickloop.cli import main

sys.exit(main())
