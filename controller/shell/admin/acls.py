"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31): KIP-4's ACL administration, over the
authorizer's ZooKeeper store (controller.shell.authorizer). Served by every instance, active or
standby: ACLs live in ZooKeeper, not in the active controller's memory.

    DescribeAcls  -> the ACLs matching the filter, grouped by resource pattern
    CreateAcls    -> one result per creation; one Kafka refuses (controller.core.acl.validate)
                     gets INVALID_REQUEST and is logged
    DeleteAcls    -> per filter, the ACLs it deleted

Without an authorizer (no ``authorizer.class.name``) each answers SECURITY_DISABLED, as Kafka.
Who may call them (DESCRIBE / ALTER on the cluster) is checked before, by the handler.
"""

from __future__ import annotations

import logging
from itertools import groupby

from controller.core.acl import Acl, AclFilter, Resource, filter_error, validate
from controller.shell.admin.base import AdminContext, Api, ApiError
from protocol import ApiKey
from protocol.errors import ErrorCode

log = logging.getLogger("reassignd.authorizer")



def _authorizer(ctx: AdminContext):
    authorizer = getattr(ctx, "authorizer", None)
    if authorizer is None:
        raise ApiError(ErrorCode.SECURITY_DISABLED, "no authorizer is configured")
    return authorizer


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
    authorizer = _authorizer(ctx)
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
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "resources": []}


async def handle_create(ctx: AdminContext, version: int, body: dict) -> dict:
    authorizer = _authorizer(ctx)
    results = []
    for c in body["creations"]:
        acl = Acl(Resource(c["resource_type"], c["resource_name"], c.get("resource_pattern_type", 3)),
                  c["principal"], c["host"], c["operation"], c["permission_type"])
        problem = validate(acl)
        if problem is None:
            try:
                await authorizer.create(acl)
            except ValueError as e:  # a name ZooKeeper cannot hold
                problem = str(e)
        if problem:
            log.warning("CreateAcls refused %s: %s", acl, problem)
        results.append({"error_code": int(ErrorCode.INVALID_REQUEST) if problem else 0, "error_message": problem})
    return {"throttle_time_ms": 0, "results": results}


def create_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0,
            "results": [{"error_code": int(code), "error_message": message} for _ in body.get("creations") or ()]}


async def handle_delete(ctx: AdminContext, version: int, body: dict) -> dict:
    authorizer = _authorizer(ctx)
    out = []
    for raw in body["filters"]:
        f = _filter(raw)
        problem = filter_error(f)
        if problem:
            out.append({"error_code": int(ErrorCode.INVALID_REQUEST), "error_message": problem, "matching_acls": []})
            continue
        deleted = await authorizer.delete(f)
        out.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": a.resource.type,
             "resource_name": a.resource.name, "pattern_type": a.resource.pattern, **_acl_fields(a)}
            for a in deleted]})
    return {"throttle_time_ms": 0, "filter_results": out}


def delete_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": int(code), "error_message": message, "matching_acls": []} for _ in body.get("filters") or ()]}


APIS = [
    Api(ApiKey.DESCRIBE_ACLS, "DescribeAcls", 0, 3, controller_only=False, handle=handle_describe,
        error_response=describe_error),
    Api(ApiKey.CREATE_ACLS, "CreateAcls", 0, 3, controller_only=False, handle=handle_create, error_response=create_error),
    Api(ApiKey.DELETE_ACLS, "DeleteAcls", 0, 3, controller_only=False, handle=handle_delete, error_response=delete_error),
]
