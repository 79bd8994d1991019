"""A ZooKeeper failure of the session part-way through an admin request gets a retriable code
(controller.shell.admin.base.session_failure), not UNKNOWN_SERVER_ERROR, which clients do not
retry: found by the chaos suite, where a controller woken from SIGSTOP answered requests that
had waited in its sockets while its connection was gone."""

from __future__ import annotations

import logging

import pytest

from controller.core.config import ControllerConfig
from controller.shell.admin.base import AdminContext, Api, session_failure
from controller.shell.admin.handler import AdminHandler
from controller.shell.role import Role
from protocol.errors import ErrorCode
from znodes.api import BadVersionError, ConnectionLossError, FencedError, SessionExpiredError
from znodes.batch import FlushError


def _flush_error(cause: Exception) -> FlushError:
    return FlushError("multi failed", cause, index=None, results=[], in_doubt=[], unsent=[])


def _error(version, body, code, message):
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "topics": []}


@pytest.mark.parametrize(
    "failure, code",
    [
        (ConnectionLossError("gone"), ErrorCode.REQUEST_TIMED_OUT),
        (_flush_error(ConnectionLossError("gone")), ErrorCode.REQUEST_TIMED_OUT),
        (SessionExpiredError("expired"), ErrorCode.NOT_CONTROLLER),
        (FencedError("fenced"), ErrorCode.NOT_CONTROLLER),
        (_flush_error(SessionExpiredError("expired")), ErrorCode.NOT_CONTROLLER),
        (BadVersionError("raced"), ErrorCode.UNKNOWN_SERVER_ERROR),
    ],
)
async def test_a_handler_s_zookeeper_failure_is_answered_with_a_code_that_fits(failure, code, caplog):
    async def fails(ctx, version, body):
        raise failure

    handler = AdminHandler(AdminContext(Role(5), ControllerConfig()), {46: Api(46, "ListPartitionReassignments", 0, 0, False, fails, _error)})
    header = {"request_api_key": 46, "request_api_version": 0, "correlation_id": 1, "client_id": "t"}
    with caplog.at_level(logging.WARNING, logger="reassignd.admin"):
        body = await handler.handle(header, {"timeout_ms": 0, "topics": None})
    assert body["error_code"] == int(code)
    record = caplog.records[-1]
    # The session's trouble is a warning without a traceback; anything else keeps its traceback.
    assert (record.exc_info is None) == (code != ErrorCode.UNKNOWN_SERVER_ERROR)


def test_other_failures_are_not_the_session_s():
    assert session_failure(ValueError("x")) is None
    assert session_failure(_flush_error(BadVersionError("raced"))) is None
