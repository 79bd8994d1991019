"""The admin API's shared parts: one table entry per API, and the context a handler sees.

Every API the controller's listener serves is one :class:`Api` in the table that
``controller.shell.admin.registry`` builds from the modules it lists. A module adds its APIs by
defining ``APIS: list[Api]``::

    async def handle_list(ctx: AdminContext, version: int, body: dict) -> dict:
        active = ctx.require_active()          # raises NotController on a standby
        ...
        return {"throttle_time_ms": 0, "error_code": 0, ...}

    APIS = [Api(46, "ListPartitionReassignments", 0, 0, controller_only=True,
                handle=handle_list, error_response=list_error)]

``error_response(version, body, code, message)`` builds the whole response for a request that
fails as a whole (NOT_CONTROLLER on a standby, an unexpected failure): APIs answer per
partition or per resource, so only the module knows where the code goes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.core import acl
from controller.shell import admin_events
from controller.shell.active import NotTheController
from controller.shell.listener import SESSION
from protocol.errors import ErrorCode
from znodes.api import ConnectionLossError, FencedError, SessionExpiredError

if TYPE_CHECKING:
    from controller.core.config import ControllerConfig
    from controller.shell.active import ActiveController
    from controller.shell.role import Role
    from znodes.api import Store


class ApiError(Exception):
    """A request that fails as a whole with a Kafka error code (see ``Api.error_response``)."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code
        self.message = message


class NotController(ApiError):
    def __init__(self) -> None:
        super().__init__(ErrorCode.NOT_CONTROLLER, "this controller instance is a standby")


def session_failure(e: BaseException) -> ApiError | None:
    """The error for a ZooKeeper failure part-way through a request that is about the session,
    not the request, or None for any other failure.

    A fenced write or an expired session means this instance is no longer the controller:
    NOT_CONTROLLER, so the client finds the new one. A lost connection leaves the write's
    outcome unknown (ZooKeeper may have applied it): REQUEST_TIMED_OUT, which Kafka's clients
    retry, as they retry a request a broker could not finish in time. Both are retriable;
    UNKNOWN_SERVER_ERROR, which clients do not retry, is for real server faults.
    """
    cause = getattr(e, "cause", None)
    for err in (e, cause):
        if isinstance(err, (FencedError, SessionExpiredError)):
            return NotController()
    for err in (e, cause):
        if isinstance(err, ConnectionLossError):
            return ApiError(ErrorCode.REQUEST_TIMED_OUT,
                            "the ZooKeeper connection was lost mid-request; it may or may not have been applied")
    return None


def not_recorded(e) -> ApiError:
    """The answer to a request whose writes did not land (controller.shell.admin_events.NotRecorded):
    its flush's failure as :func:`session_failure` says, else NOT_CONTROLLER (deposed, or
    resigned before taking it) or, after every retry lost its race, UNKNOWN_SERVER_ERROR."""
    cause = getattr(e, "cause", None)
    found = session_failure(cause) if cause is not None else None
    if found is not None:
        return found
    if getattr(e, "retry", False):
        return ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{e}; other writers kept changing the same znodes")
    return ApiError(ErrorCode.NOT_CONTROLLER, str(e))


async def take_event(ctx: AdminContext, event, timeout_s: float):
    """Hand an admin request's event to the active controller (one writer:
    controller.shell.admin_events) and wait up to ``timeout_s`` for its Answer, once its writes
    landed. Raises ApiError for the whole request: NOT_CONTROLLER (a standby, or deposed before
    the writes landed), REQUEST_TIMED_OUT (not taken in time: it may still be), or the engine's
    request-wide error (INVALID_CONFIG for a malformed throttle znode)."""
    active = ctx.require_active()
    try:
        answer = await admin_events.submit(active, event, timeout_s)
    except TimeoutError:
        raise ApiError(ErrorCode.REQUEST_TIMED_OUT,
                       "the controller did not take the request in time; it may still be taken: check with --verify") from None
    except admin_events.NotRecorded as e:
        raise not_recorded(e) from None
    if answer.error is not None:
        raise ApiError(*answer.error)
    return answer


async def decided(ctx: AdminContext, make_event: Callable[[asyncio.Future], object], wait_s: float):
    """Queue a broker's request to the active controller (``make_event(future)``: an engine
    event carrying the future its step settles, once its writes landed) and wait up to
    ``wait_s`` for the decision. Raises ApiError for the whole request, on which the broker asks
    again: REQUEST_TIMED_OUT (no decision in time; the event is dropped), NOT_CONTROLLER (the
    controller resigned with it queued), UNKNOWN_SERVER_ERROR (the step's writes failed)."""
    active = ctx.require_active()
    future = asyncio.get_running_loop().create_future()
    active.inbox.queue.put_nowait(make_event(future))
    try:
        return await asyncio.wait_for(asyncio.shield(future), wait_s)
    except asyncio.TimeoutError:
        future.cancel()
        raise ApiError(ErrorCode.REQUEST_TIMED_OUT, f"no decision within {wait_s:g} s") from None
    except NotTheController:
        raise NotController() from None
    except Exception as e:
        raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, f"the controller's writes failed: {e!r}") from None


def no_wait_answers(results, body: dict, validate_only: bool = False) -> None:
    """Kafka's ZooKeeper-mode rule for CreateTopics, CreatePartitions and DeleteTopics: a
    ``timeout_ms`` of 0 or less asks for no wait, and every topic the request got under way
    is answered REQUEST_TIMED_OUT at once (the change goes on); refusals keep their codes and
    ``validate_only`` answers NONE."""
    timeout_ms = body.get("timeout_ms")
    if timeout_ms is None or timeout_ms > 0 or validate_only:
        return
    for out in results:
        if out["error_code"] == ErrorCode.NONE:
            out["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
            out["error_message"] = f"under way, not waited for: timeout_ms is {timeout_ms}"


@dataclass(frozen=True)
class Api:
    key: int
    name: str
    min_version: int
    max_version: int
    controller_only: bool  # a standby answers NOT_CONTROLLER without calling ``handle``
    handle: Callable[[AdminContext, int, dict], Awaitable[dict]]
    error_response: Callable[[int, dict, ErrorCode, str | None], dict]


class AdminContext:
    """What a handler may use: the instance's role (active or standby), its ZooKeeper session,
    its listener address and configuration."""

    def __init__(self, role: Role, config: ControllerConfig, host: str = "", port: int = 0):
        self.role = role
        self.config = config
        self.host = host
        self.port = port
        # controller.shell.authorizer.Authorizer when ACLs are enforced (authorizer.class.name);
        # None: every request is allowed.
        self.authorizer = None
        # AlterConfigs and IncrementalAlterConfigs of this instance take turns: each is a read
        # and a write conditional on it, so concurrent ones of the same config would lose
        # their races to each other (controller.shell.admin.alter_configs).
        self.config_writes = asyncio.Lock()

    @property
    def controller_id(self) -> int:
        return self.role.controller_id

    @property
    def store(self) -> Store:
        """The current ZooKeeper session; ApiError(COORDINATOR_NOT_AVAILABLE-like) if none."""
        store = self.role.store
        if store is None:
            raise ApiError(ErrorCode.NOT_CONTROLLER, "this controller instance has no ZooKeeper session")
        return store

    @property
    def active(self) -> ActiveController | None:
        return self.role.active

    def require_active(self) -> ActiveController:
        active = self.role.active
        if active is None or active.state is None:
            raise NotController()
        return active


async def allows(ctx: AdminContext, operation: int, resource_type: int, name: str) -> bool:
    """Whether the request's principal may do ``operation`` on the resource (always without an
    authorizer)."""
    authorizer = getattr(ctx, "authorizer", None)
    if authorizer is None:
        return True
    return await authorizer.allows(SESSION.get(), operation, resource_type, name)


async def allows_on_topic(ctx: AdminContext, operation: int, name: str, *, or_cluster: bool = False) -> bool:
    """Kafka's rule for the topic administration APIs: ``operation`` on the topic itself.

    Only CreateTopics passes ``or_cluster`` (CREATE on the cluster covers every topic, Kafka's
    ``hasClusterAuthorization``); DeleteTopics (DELETE) and CreatePartitions (ALTER) look at the
    topic alone, as Kafka's KafkaApis does: a cluster grant must not delete or grow topics."""
    if or_cluster and await allows(ctx, operation, acl.CLUSTER, acl.CLUSTER_NAME):
        return True
    return await allows(ctx, operation, acl.TOPIC, name)
