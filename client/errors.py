"""The one error hierarchy for callers of :mod:`client` (the AdminClient and the CLI).

Everything the client raises derives from :class:`ReassignError`. The branches tell a caller
what to do next:

* :class:`InputError` - the caller's input is wrong (arguments; :class:`InputFileError` for
  JSON files); nothing was sent.
* :class:`ClusterMismatchError` - well-formed input that names topics, partitions or brokers
  the cluster does not have; nothing was written.
* :class:`ConnectionFailedError`, :class:`RequestTimedOutError` - the cluster could not be
  reached or did not answer in time.
* :class:`ProtocolViolationError`, :class:`UnsupportedVersionError` - the peer spoke a wire
  format or version we cannot use.
* :class:`KafkaApiError` - the peer answered with a Kafka error code. Codes with their own
  class (``NotControllerError`` ...) are looked up with :func:`error_for_code`; per-partition
  errors carry ``topic``/``partition`` and :class:`PartitionErrors` collects several.
* :class:`ConflictError` - refused because a reassignment (or queue) is already in flight.
* :class:`VerificationIncomplete` / :class:`VerificationFailed` - ``--verify`` outcomes.

Usage::

    try:
        (await admin.reassign_partitions({("t", 0): [1, 2]})).all()
    except client.errors.PartitionErrors as exc:
        for (topic, partition), err in exc.errors.items():
            print(topic, partition, err.code, err.message)
"""

from __future__ import annotations

from protocol.errors import ErrorCode, error_name, is_retriable


class ReassignError(Exception):
    """Base of every error the client raises."""


# ---- caller input -------------------------------------------------------------------------


class InputError(ReassignError):
    """Bad input (an argument or a JSON file). ``source`` names the file or option."""

    def __init__(self, message: str, source: str | None = None):
        super().__init__(f"{source}: {message}" if source else message)
        self.source = source
        self.detail = message


class InputFileError(InputError):
    """A bad input file (missing, unreadable, malformed, wrong shape). ``source`` is its path."""


class ClusterMismatchError(ReassignError):
    """Input names topics, partitions or brokers the cluster does not have."""


class ConflictError(ReassignError):
    """Refused: a reassignment (or a queued batch) is already in flight."""


class PlanRefusedError(ReassignError):
    """The planner cannot satisfy the request (e.g. a replication factor larger than the
    brokers left, brokers with and without racks)."""


class VerificationIncomplete(ReassignError):
    """``--verify``: some reassignments are still in progress."""


class VerificationFailed(ReassignError):
    """``--verify``: some partitions ended on an assignment other than the requested one."""


# ---- transport ----------------------------------------------------------------------------


class ConnectionFailedError(ReassignError):
    """No connection could be made to the cluster, or one broke mid-request.

    ``request_sent``: it broke after the request went out, so the peer may have applied it (as
    after a :class:`RequestTimedOutError`); kafka-reassign then says how to check."""

    request_sent = False


class RequestTimedOutError(ReassignError):
    """A request got no answer within ``request_timeout_ms``."""


class ProtocolViolationError(ReassignError):
    """The peer sent a frame this client cannot decode.

    ``request_sent``: it was the answer to a request that went out, so the peer may have applied
    it (as after a :class:`RequestTimedOutError`); kafka-reassign then says how to check."""

    request_sent = False


class UnsupportedVersionError(ReassignError):
    """The peer and this client share no version of an API."""


# ---- Kafka error codes --------------------------------------------------------------------

# Names, messages and retriability come from protocol.errors, the one table of Kafka's codes;
# this module only gives some codes an exception class of their own to catch.
_BY_CODE: dict[int, type["KafkaApiError"]] = {}


class KafkaApiError(ReassignError):
    """The peer answered with a non-zero Kafka error code.

    ``code`` is the numeric code, ``name`` Kafka's name for it, ``message`` the peer's
    error_message (may be None), ``topic``/``partition``/``broker_id`` the entity it is about
    when it is a per-entity error.
    """

    code: int = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(
        self,
        message: str | None = None,
        *,
        code: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        broker_id: int | None = None,
    ):
        self.code = int(self.code if code is None else code)
        self.name = error_name(self.code)
        self.message = message
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        where = ""
        if topic is not None:
            where = f"{topic}-{partition}: " if partition is not None else f"{topic}: "
        elif broker_id is not None:
            where = f"broker {broker_id}: "
        text = f"{where}{self.name} ({self.code})"
        if message:
            text += f": {message}"
        super().__init__(text)

    @property
    def retriable(self) -> bool:
        """Whether Kafka lets a client retry the same request (protocol.errors' table)."""
        return is_retriable(self.code)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "code" in cls.__dict__:
            _BY_CODE[cls.code] = cls


class UnknownTopicOrPartitionError(KafkaApiError):
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class ClusterAuthorizationFailedError(KafkaApiError):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class UnsupportedVersionCodeError(KafkaApiError):
    code = ErrorCode.UNSUPPORTED_VERSION


class InvalidTopicError(KafkaApiError):
    code = ErrorCode.INVALID_TOPIC_EXCEPTION


class UnknownMemberIdError(KafkaApiError):
    """KIP-179 uses UNKNOWN_MEMBER_ID for a broker id the cluster does not have."""

    code = ErrorCode.UNKNOWN_MEMBER_ID


class InvalidReplicaAssignmentError(KafkaApiError):
    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class NotControllerError(KafkaApiError):
    code = ErrorCode.NOT_CONTROLLER


class InvalidRequestError(KafkaApiError):
    code = ErrorCode.INVALID_REQUEST


class PolicyViolationError(KafkaApiError):
    code = ErrorCode.POLICY_VIOLATION


class ReassignmentInProgressError(KafkaApiError):
    """Kafka's REASSIGNMENT_IN_PROGRESS; the KIPs' PARTITION_REASSIGNMENT_IN_PROGRESS."""

    code = ErrorCode.REASSIGNMENT_IN_PROGRESS


class NoReassignmentInProgressError(KafkaApiError):
    code = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


class InvalidThrottleError(KafkaApiError):
    """INVALID_THROTTLE (KIP-179, this project's code 1001): throttle <= 0."""

    code = ErrorCode.INVALID_THROTTLE


def error_for_code(
    code: int,
    message: str | None = None,
    *,
    topic: str | None = None,
    partition: int | None = None,
    broker_id: int | None = None,
) -> KafkaApiError:
    """The exception for a non-zero Kafka error code (its own class when it has one)."""
    cls = _BY_CODE.get(code, KafkaApiError)
    return cls(message, code=code, topic=topic, partition=partition, broker_id=broker_id)


class PartitionErrors(KafkaApiError):
    """Several per-entity errors from one request. ``errors`` maps key -> KafkaApiError.

    Its own ``code`` is the first error's code, so a caller that only looks at one code
    still sees a real one.
    """

    def __init__(self, errors: dict):
        self.errors = dict(errors)
        first = next(iter(self.errors.values()))
        lines = "; ".join(str(e) for e in self.errors.values())
        super().__init__(f"{len(self.errors)} failed: {lines}", code=first.code)


class ClusterDataError(ReassignError):
    """The cluster holds data this tool cannot read (a malformed znode payload, say)."""
