"""DescribeUserScramCredentials (KIP-554) over a ZooKeeper session, for both servers that answer
it: the controller's listener and the simulated brokers. A ZooKeeper-mode Kafka broker answers
it from ZooKeeper whether or not it is the controller (KafkaApis.
handleDescribeUserScramCredentialsRequest, ZkAdminManager.describeUserScramCredentials); the
bodies and words are protocol.scram_users', the credentials znodes.users'::

    answer = await describe(store, {"users": [{"name": "alice"}]})
    answer = await describe(store, {"users": None})         # every user with a credential

    No users (null or empty): every user with a credential, sorted, under its own name (Kafka
    lists the URL-encoded znode names). Named users in request order, once each: "" ->
    RESOURCE_NOT_FOUND "Username must not be empty"; named twice -> DUPLICATE_RESOURCE "Cannot
    describe SCRAM credentials for the same user twice in a single request: <user>"; no
    credential -> RESOURCE_NOT_FOUND "Attempt to describe a user credential that does not
    exist: <user>"; a stored credential or config znode that does not parse -> that user's
    UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.scram_users import (
    DUPLICATE_DESCRIBE,
    EMPTY_NAME,
    NOT_THERE_DESCRIBE,
    UNREADABLE,
    described,
    user_error,
)
from znodes import users
from znodes.api import Store
from znodes.errors import ZnodeFormatError


async def _named(store: Store, user: str) -> dict:
    """A user the request names (once, not empty)."""
    try:
        texts = await users.read_credentials(store, user)
    except ZnodeFormatError:
        return user_error(user, ErrorCode.UNKNOWN_SERVER_ERROR, UNREADABLE)
    if not texts:
        return user_error(user, ErrorCode.RESOURCE_NOT_FOUND, f"{NOT_THERE_DESCRIBE}: {user}")
    return described(user, texts)


async def describe(store: Store, body: dict) -> dict:
    """DescribeUserScramCredentials' answer (see the module's docstring)."""
    names = [u["name"] for u in body.get("users") or []]
    results = []
    if not names:
        for user, texts in (await users.all_credentials(store)).items():
            results.append(described(user, texts))
    else:
        for user in dict.fromkeys(names):
            if not user:
                results.append(user_error(user, ErrorCode.RESOURCE_NOT_FOUND, EMPTY_NAME))
            elif names.count(user) > 1:
                results.append(user_error(user, ErrorCode.DUPLICATE_RESOURCE, f"{DUPLICATE_DESCRIBE}: {user}"))
            else:
                results.append(await _named(store, user))
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}
