"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31): KIP-4's ACL administration, over the
authorizer's ZooKeeper store (controller.shell.authorizer). Served by every instance, active or
standby: ACLs live in ZooKeeper, not in the active controller's memory.

    DescribeAcls  -> the ACLs matching the filter, grouped by resource pattern
    CreateAcls    -> one result per creation; one Kafka refuses (controller.core.acl.validate)
                     gets INVALID_REQUEST and is logged
    DeleteAcls    -> per filter, the ACLs it deleted

As Kafka's AclAuthorizer, a ZooKeeper failure of one resource (its update lost every race,
ZooKeeper's ACLs refused it) fails only that resource: its creations, or its matching ACLs in
a DeleteAcls result, are answered UNKNOWN_SERVER_ERROR and the rest of the request goes on. A
failure of the session (``base.session_failure``) still fails the whole request, retriably.

Without an authorizer (no ``authorizer.class.name``) each answers SECURITY_DISABLED with
Kafka's words, as the simulated brokers do (protocol.no_authorizer, whose shapes are also these
requests' whole-request errors). Who may call them (DESCRIBE / ALTER on the cluster) is checked
before, by the handler. tests/admin/test_acls_probe.py holds these answers against Kafka's.
"""

from __future__ import annotations

import logging
from itertools import groupby

from controller.core.acl import CLUSTER, CLUSTER_NAME, Acl, AclFilter, Resource, filter_error, validate
from controller.shell.admin.base import AdminContext, Api, ApiError, session_failure
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.no_authorizer import NO_AUTHORIZER, create_failure, delete_failure, describe_failure
from znodes.api import ZkError

log = logging.getLogger("reassignd.authorizer")


def _authorizer(ctx: AdminContext, key: int):
    authorizer = getattr(ctx, "authorizer", None)
    if authorizer is None:
        raise ApiError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER[key])
    return authorizer


def _resource_failure(e: ZkError) -> str:
    """The message of a ZooKeeper failure that fails one resource, not the request; a failure
    of the session is re-raised (the handler answers it for the whole request)."""
    if session_failure(e) is not None:
        raise e
    return f"the ACL znode could not be updated: {e!r}"


def _creation_error(acl: Acl) -> str | None:
    """Kafka's AclApis checks, in its order, before the authorizer's (controller.core.acl.validate):
    a CLUSTER resource not named kafka-cluster (an empty name included), then an empty name."""
    if acl.resource.type == CLUSTER and acl.resource.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    return validate(acl)


def _filter(body: dict) -> AclFilter:
    return AclFilter(
        resource_type=body["resource_type_filter"],
        name=body["resource_name_filter"],
        pattern=body.get("pattern_type_filter", 3),
        principal=body["principal_filter"],
        host=body["host_filter"],
        operation=body["operation"],
        permission=body["permission_type"],
    )


def _acl_fields(acl: Acl) -> dict:
    return {"principal": acl.principal, "host": acl.host, "operation": acl.operation, "permission_type": acl.permission}


async def handle_describe(ctx: AdminContext, version: int, body: dict) -> dict:
    authorizer = _authorizer(ctx, ApiKey.DESCRIBE_ACLS)
    f = _filter(body)
    problem = filter_error(f)
    if problem:
        raise ApiError(ErrorCode.INVALID_REQUEST, problem)
    acls = await authorizer.describe(f)
    resources = [
        {"resource_type": r.type, "resource_name": r.name, "pattern_type": r.pattern,
         "acls": [_acl_fields(a) for a in group]}
        for r, group in groupby(acls, key=lambda a: a.resource)
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": resources}


def describe_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return describe_failure(code, message)


async def handle_create(ctx: AdminContext, version: int, body: dict) -> dict:
    authorizer = _authorizer(ctx, ApiKey.CREATE_ACLS)
    acls = [Acl(Resource(c["resource_type"], c["resource_name"], c.get("resource_pattern_type", 3)),
                c["principal"], c["host"], c["operation"], c["permission_type"]) for c in body["creations"]]
    problems = [_creation_error(acl) for acl in acls]
    # The valid ones, one write and one notification per resource (Kafka's createAcls); a
    # resource's failure is its creations' alone.
    failed: dict[Acl, Exception] = {}
    await authorizer.create_all([a for a, p in zip(acls, problems) if p is None], failed)
    results = []
    for acl, problem in zip(acls, problems):
        code = ErrorCode.INVALID_REQUEST
        error = failed.get(acl) if problem is None else None
        if isinstance(error, ValueError):  # a name ZooKeeper cannot hold
            problem = str(error)
        elif isinstance(error, ZkError):  # this resource's failure, not the request's
            problem, code = _resource_failure(error), ErrorCode.UNKNOWN_SERVER_ERROR
        if problem:
            log.warning("CreateAcls refused %s: %s", acl, problem)
        results.append({"error_code": int(code) if problem else 0, "error_message": problem})
    return {"throttle_time_ms": 0, "results": results}


def create_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return create_failure(body, code, message)


async def handle_delete(ctx: AdminContext, version: int, body: dict) -> dict:
    authorizer = _authorizer(ctx, ApiKey.DELETE_ACLS)
    out = []
    for raw in body["filters"]:
        f = _filter(raw)
        problem = filter_error(f)
        if problem:
            out.append({"error_code": int(ErrorCode.INVALID_REQUEST), "error_message": problem, "matching_acls": []})
            continue
        # Kafka's deleteAcls: a resource's failure goes on each of its matching ACLs, and the
        # other resources go on; the session's fails the request.
        errors: dict[Acl, ZkError] = {}
        deleted = await authorizer.delete(f, errors)
        failed = {a: _resource_failure(e) for a, e in errors.items()}
        out.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": int(ErrorCode.UNKNOWN_SERVER_ERROR) if a in failed else 0, "error_message": failed.get(a),
             "resource_type": a.resource.type, "resource_name": a.resource.name, "pattern_type": a.resource.pattern,
             **_acl_fields(a)}
            for a in sorted({*deleted, *failed})]})
    return {"throttle_time_ms": 0, "filter_results": out}


def delete_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return delete_failure(body, code, message)


APIS = [
    Api(ApiKey.DESCRIBE_ACLS, "DescribeAcls", 0, 3, controller_only=False, handle=handle_describe,
        error_response=describe_error),
    Api(ApiKey.CREATE_ACLS, "CreateAcls", 0, 3, controller_only=False, handle=handle_create, error_response=create_error),
    Api(ApiKey.DELETE_ACLS, "DeleteAcls", 0, 3, controller_only=False, handle=handle_delete, error_response=delete_error),
]
