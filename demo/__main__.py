"""``python -m demo``: see demo.run."""

import sys

from demo.run import main

sys.exit(main())
