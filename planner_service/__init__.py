"""planner_service: the KIP-6 planner as a long-running service, ``reassignd planner serve``.

It sits above both :mod:`spark_jobs` (the planner it runs: ``spark_jobs.api.plan``, batching)
and :mod:`client` (the AdminClient it executes plans through, ``--command-config``'s loader);
neither imports it. ``kafka-reassign --planner URL`` reaches it over HTTP only.

Modules, the pure ones first:

- :mod:`planner_service.model`: the cluster model (pure: no I/O, no asyncio), the planner's input.
- :mod:`planner_service.clock`: the wall clock in milliseconds.
- :mod:`planner_service.http_server`: a small HTTP/1.1 JSON server on asyncio streams.
- :mod:`planner_service.zk_feed`: the model kept current from ZooKeeper watches.
- :mod:`planner_service.execution`: a plan's waves sent through the AdminClient.
- :mod:`planner_service.sizes`: the brokers' DescribeLogDirs sizes, with ``--command-config``'s
  TLS and SASL at the brokers' endpoints of its protocol.
- :mod:`planner_service.endpoints`: the REST API's routes and views.
- :mod:`planner_service.service`: the service (Spark session, proposals, sizes, executions,
  self-healing).
- the command line, `reassignd planner`, is :mod:`reassignd.planner`.
"""
