"""kafka-reassign's exit codes: one per class of failure, so scripts can tell them apart.

The table is data; the CLI's ``--help`` epilog and module docstring are generated from it.
"""

from __future__ import annotations

from client import errors

OK = 0
INTERNAL = 1
USAGE = 2
BAD_INPUT_FILE = 3
CLUSTER_UNREACHABLE = 4
REJECTED = 5
IN_PROGRESS = 6
VERIFY_FAILED = 7
CLUSTER_MISMATCH = 8
CONFLICT = 9
CLUSTER_DATA = 10
PLAN_REFUSED = 11
INTERRUPTED = 130

TABLE: tuple[tuple[int, str], ...] = (
    (OK, "success (for --verify: every reassignment complete)"),
    (INTERNAL, "unexpected internal error (a bug: please report it)"),
    (USAGE, "bad command line: unknown, missing, conflicting or invalid options or values"),
    (BAD_INPUT_FILE, "bad input file: missing, unreadable, malformed JSON, wrong shape or version, "
                     "duplicate partitions or replicas, negative ids"),
    (CLUSTER_UNREACHABLE, "cannot reach the cluster (ZooKeeper or the admin listener) or the planner service "
                          "(--planner: also any status but 400/401/403/409, a 5xx among them), timed out (--planner: "
                          "no whole answer within --timeout), or the peer spoke a protocol this tool cannot use"),
    (REJECTED, "the controller rejected the request, or some partitions of it (--planner: 401/403)"),
    (IN_PROGRESS, "--verify / --verify-queue: some reassignments are still in progress or queued"),
    (VERIFY_FAILED, "--verify / --verify-queue: some partitions ended on another assignment"),
    (CLUSTER_MISMATCH, "the input names a topic, partition or broker the cluster does not have"),
    (CONFLICT, "refused: a reassignment, cancellation or queued batch is already in flight "
               "(--planner: 409, also a reviewed proposal the cluster has moved past)"),
    (CLUSTER_DATA, "the cluster holds data this tool cannot read (a malformed znode)"),
    (PLAN_REFUSED, "the planner cannot satisfy the request (--generate, --rebalance, --decommission-broker, "
                   "--demote-broker; --planner: 400)"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
)


def for_error(exc: BaseException) -> int:
    """The exit code for an exception the CLI caught."""
    if isinstance(exc, errors.InputFileError):
        return BAD_INPUT_FILE
    if isinstance(exc, errors.InputError):
        return USAGE
    if isinstance(exc, errors.ClusterMismatchError):
        return CLUSTER_MISMATCH
    if isinstance(exc, errors.ConflictError):
        return CONFLICT
    if isinstance(exc, errors.ClusterDataError):
        return CLUSTER_DATA
    if isinstance(exc, errors.PlanRefusedError):
        return PLAN_REFUSED
    if isinstance(exc, errors.VerificationIncomplete):
        return IN_PROGRESS
    if isinstance(exc, errors.VerificationFailed):
        return VERIFY_FAILED
    if isinstance(exc, errors.ReassignmentInProgressError):
        return CONFLICT
    if isinstance(exc, errors.KafkaApiError):
        return REJECTED
    if isinstance(exc, (errors.ConnectionFailedError, errors.RequestTimedOutError,
                        errors.ProtocolViolationError, errors.UnsupportedVersionError)):
        return CLUSTER_UNREACHABLE
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    return INTERNAL


def table_text(indent: str = "  ") -> str:
    return "\n".join(f"{indent}{code:>3}  {text}" for code, text in TABLE)
