"""spark_jobs: the KIP-6 planner on Spark (snapshots, plans, batches, fleet mode).

Entry points: ``reassignd snapshot`` (:mod:`reassignd.snapshot`, writing with
:mod:`spark_jobs.snapshot`), ``python -m spark_jobs.plan`` (:mod:`reassignd.plan`, writing with
:mod:`spark_jobs.outputs`), the Python API :mod:`spark_jobs.api`, and Kafka's old ``--generate``
algorithm as :func:`legacy_generate`.
"""

from spark_jobs.legacy import legacy_generate

__all__ = ["legacy_generate"]
