"""``python -m pytest_autograd_grader COMMAND``: see ``cli``."""

import sys

from .cli import main

sys.exit(main())
