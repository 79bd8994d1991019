"""client: the async AdminClient (:mod:`client.admin`) and the ``kafka-reassign`` command line
(:mod:`client.cli`).

Usage::

    from client import AdminClient

    async with AdminClient("127.0.0.1:9190") as admin:
        (await admin.reassign_partitions({("orders", 0): [4, 5, 6]}, throttle=10_000_000)).all()

Errors for callers are in :mod:`client.errors`. ``AdminClient`` is imported on first use, so
``kafka-reassign --zookeeper`` does not pay for the wire client.
"""

__all__ = ["AdminClient"]


def __getattr__(name: str):
    if name == "AdminClient":
        from client.admin import AdminClient

        return AdminClient
    raise AttributeError(f"module 'client' has no attribute {name!r}")
