"""``python -m spark_jobs.plan`` and ``spark-submit spark_jobs/plan.py``: the planner's command
(:mod:`reassignd.plan`), kept at the path the README, Spark users and the planner image's
entrypoint name. Nothing else lives here: what the command writes is :mod:`spark_jobs.outputs`.
"""

import sys
from pathlib import Path

if __name__ == "__main__":
    if __package__ in (None, ""):  # spark-submit spark_jobs/plan.py: make the packages importable
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from reassignd.plan import main

    sys.exit(main())
