"""Errors for bad znode paths and bad znode payloads.

Both are ``ValueError`` subclasses: they describe bad input, never a store failure (those are
the :class:`znodes.api.ZkError` family). Each names the path concerned and what is wrong::

    try:
        models.parse("/admin/reassign_partitions", data)
    except ZnodeFormatError as e:
        log.warning("ignoring %s: %s", e.path, e.reason)
"""

from __future__ import annotations


class InvalidPathError(ValueError):
    """A znode path ZooKeeper would refuse (relative, trailing "/", empty segment, NUL...)."""

    def __init__(self, path: object, reason: str):
        super().__init__(f"invalid znode path {path!r}: {reason}")
        self.path = path
        self.reason = reason


class ZnodeFormatError(ValueError):
    """A znode payload that is not what its path must hold. The one error ``znodes.models`` raises."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"malformed znode {path}: {reason}")
        self.path = path
        self.reason = reason
