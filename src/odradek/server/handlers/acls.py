"""CreateAcls, DescribeAcls and DeleteAcls (KIP-11/KIP-290): the ACLs of the authorizer's store, changed
through any broker and applied on all of them (`security/acl_store.py`). Creating and deleting need
ALTER on the cluster, describing DESCRIBE; without an authorizer they answer SECURITY_DISABLED, as Kafka."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)

from odradek.protocol.errors import ErrorCode
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    validate_new_binding,
)
from odradek.server import authz
from odradek.server.registry import RequestContext, handles

NO_AUTHORIZER = "No Authorizer is configured on the broker"
_Creation = CreateAclsResponse.AclCreationResult
_FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
_Matching = _FilterResult.DeleteAclsMatchingAcl
_Resource = DescribeAclsResponse.DescribeAclsResource
_Description = _Resource.AclDescription


def _enum(enum: type[Any], value: int) -> Any:
    try:
        return enum(value)
    except ValueError:
        return enum(0)  # UNKNOWN


def _filter(f: Any, name: str | None, principal: str | None, host: str | None) -> AclBindingFilter:
    return AclBindingFilter(_enum(ResourceType, f.resource_type_filter), name, _enum(PatternType, f.pattern_type_filter),
                            principal, host, _enum(AclOperation, f.operation), _enum(Permission, f.permission_type))


@handles(CreateAclsRequest, CreateAclsResponse, versions=(1, 3))
async def create_acls(ctx: RequestContext, request: Any) -> CreateAclsResponse:
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return CreateAclsResponse(throttle_time_ms=0, results=[
            _Creation(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER) for _ in request.creations])
    if not authz.allowed(ctx, AclOperation.ALTER, authz.CLUSTER):
        failed = authz.failure(authz.CLUSTER)
        return CreateAclsResponse(throttle_time_ms=0, results=[
            _Creation(error_code=failed.code, error_message=failed.message) for _ in request.creations])
    results: list[tuple[int, str | None]] = []
    valid: list[AclBinding] = []
    for c in request.creations:
        binding = AclBinding(
            ResourcePattern(_enum(ResourceType, c.resource_type), c.resource_name, _enum(PatternType, c.resource_pattern_type)),
            AccessControlEntry(c.principal, c.host, _enum(AclOperation, c.operation), _enum(Permission, c.permission_type)))
        problem = validate_new_binding(binding)
        if problem is not None:
            results.append((ErrorCode.INVALID_REQUEST, problem))
        else:
            results.append((ErrorCode.NONE, None))
            valid.append(binding)
    if valid:
        await authorizer.cache.add(valid)
    return CreateAclsResponse(throttle_time_ms=0, results=[_Creation(error_code=code, error_message=msg)
                                                           for code, msg in results])


@handles(DescribeAclsRequest, DescribeAclsResponse, versions=(1, 3))
async def describe_acls(ctx: RequestContext, request: Any) -> DescribeAclsResponse:
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return DescribeAclsResponse(throttle_time_ms=0, error_code=ErrorCode.SECURITY_DISABLED,
                                    error_message=NO_AUTHORIZER, resources=[])
    authz.require(ctx, AclOperation.DESCRIBE, authz.CLUSTER)
    flt = _filter(request, request.resource_name_filter, request.principal_filter, request.host_filter)
    problem = flt.invalid()
    if problem is not None:
        return DescribeAclsResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, error_message=problem,
                                    resources=[])
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in authorizer.cache.table.bindings(flt):
        by_pattern.setdefault(b.pattern, []).append(b.entry)
    return DescribeAclsResponse(throttle_time_ms=0, error_code=0, error_message=None, resources=[
        _Resource(resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type, acls=[
            _Description(principal=e.principal, host=e.host, operation=e.operation, permission_type=e.permission)
            for e in entries])
        for p, entries in by_pattern.items()
    ])


@handles(DeleteAclsRequest, DeleteAclsResponse, versions=(1, 3))
async def delete_acls(ctx: RequestContext, request: Any) -> DeleteAclsResponse:
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            _FilterResult(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER, matching_acls=[])
            for _ in request.filters])
    if not authz.allowed(ctx, AclOperation.ALTER, authz.CLUSTER):
        failed = authz.failure(authz.CLUSTER)
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            _FilterResult(error_code=failed.code, error_message=failed.message, matching_acls=[])
            for _ in request.filters])
    results = []
    doomed: set[AclBinding] = set()
    for f in request.filters:
        flt = _filter(f, f.resource_name_filter, f.principal_filter, f.host_filter)
        problem = flt.invalid()
        if problem is not None:
            results.append(_FilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=problem, matching_acls=[]))
            continue
        matched = authorizer.cache.table.bindings(flt)
        doomed.update(matched)
        results.append(_FilterResult(error_code=0, error_message=None, matching_acls=[
            _Matching(error_code=0, error_message=None, resource_type=b.pattern.resource_type,
                      resource_name=b.pattern.name, pattern_type=b.pattern.pattern_type, principal=b.entry.principal,
                      host=b.entry.host, operation=b.entry.operation, permission_type=b.entry.permission)
            for b in matched]))
    if doomed:
        await authorizer.cache.remove(sorted(doomed))
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=results)
