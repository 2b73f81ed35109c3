"""What handlers call to authorize a request's actions (Kafka's AuthHelper): each takes the request
context, answers "allowed" when no authorizer is configured, and otherwise asks the broker's authorizer
for the connection's principal and host. `require` raises AuthorizationFailed, a KafkaError with the
error code of the resource type, which a handler turns into its response field like any other error, or
which, left uncaught, the dispatcher answers with the response's top-level error code.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.security.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType

if TYPE_CHECKING:
    from odradek.server.registry import RequestContext

Op = AclOperation
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                                           ResourceType.TRANSACTIONAL_ID)
ERRORS = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}
_NOTHING: frozenset[str] = frozenset()


class AuthorizationFailed(KafkaError):
    pass


def failure(resource_type: ResourceType, name: str = "") -> AuthorizationFailed:
    code = ERRORS.get(resource_type, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    what = {TOPIC: f"topic {name}", GROUP: f"group {name}", TRANSACTIONAL_ID: f"transactional id {name}"}
    return AuthorizationFailed(code, f"Not authorized to access {what.get(resource_type, 'cluster')}"
                               if resource_type != CLUSTER else "Cluster authorization failed.")


def enabled(ctx: RequestContext) -> bool:
    return ctx.broker.authorizer is not None


def allowed(ctx: RequestContext, op: AclOperation, resource_type: ResourceType, name: str = CLUSTER_NAME,
            log_denial: bool = True) -> bool:
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    key = (int(op), int(resource_type), name)
    if ctx.decisions is None:
        ctx.decisions = {}
    else:
        known = ctx.decisions.get(key)
        if known is not None:
            return known
    conn = ctx.connection
    ok = ctx.decisions[key] = authorizer.authorize(conn.principal, conn.host, conn.security.name, op, resource_type,
                                                   name, _api_name(ctx), log_denial)
    return ok


def denied(ctx: RequestContext, op: AclOperation, resource_type: ResourceType, names: Iterable[str]) -> frozenset[str]:
    """The names among `names` that `op` is refused on (none without an authorizer)."""
    if ctx.broker.authorizer is None:
        return _NOTHING
    return frozenset(n for n in set(names) if not allowed(ctx, op, resource_type, n))


def require(ctx: RequestContext, op: AclOperation, resource_type: ResourceType, name: str = CLUSTER_NAME) -> None:
    """Raise AuthorizationFailed unless `op` on the resource is allowed."""
    if not allowed(ctx, op, resource_type, name):
        raise failure(resource_type, name)


def allowed_by_type(ctx: RequestContext, op: AclOperation, resource_type: ResourceType) -> bool:
    """Whether `op` is allowed on at least one resource of `resource_type` (KIP-679)."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    conn = ctx.connection
    return authorizer.authorize_by_type(conn.principal, conn.host, conn.security.name, op, resource_type)


def operations(ctx: RequestContext, resource_type: ResourceType, name: str = CLUSTER_NAME,
               requested: bool = True) -> set[int] | None:
    """The `*_authorized_operations` codes for the resource: None when not requested, every supported
    operation without an authorizer, else those the authorizer allows."""
    if not requested:
        return None
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return {int(op) for op in SUPPORTED_OPERATIONS[resource_type]}
    conn = ctx.connection
    return authorizer.authorized_operations(conn.principal, conn.host, conn.security.name, resource_type, name)


def _api_name(ctx: RequestContext) -> str:
    from odradek.server.registry import APIS

    api = APIS.get(ctx.header.api_key)
    return api.name if api is not None else str(ctx.header.api_key)


# ---- the checks of particular APIs --------------------------------------------------------------

# config resource types (DescribeConfigs/AlterConfigs) -> the ACL resource that guards them
_CONFIG_RESOURCES = {2: TOPIC, 32: GROUP}


def require_config(ctx: RequestContext, op: AclOperation, config_resource_type: int, name: str) -> None:
    """DESCRIBE_CONFIGS/ALTER_CONFIGS on a config resource: a topic or group by name; brokers, broker
    loggers and client metrics are the cluster's."""
    resource_type = _CONFIG_RESOURCES.get(config_resource_type, CLUSTER)
    require(ctx, op, resource_type, name if resource_type != CLUSTER else CLUSTER_NAME)


def require_create_topic(ctx: RequestContext, name: str) -> None:
    """CREATE on the cluster, or else on the topic."""
    if not allowed(ctx, Op.CREATE, CLUSTER, log_denial=False):
        require(ctx, Op.CREATE, TOPIC, name)


def require_produce(ctx: RequestContext, transactional_id: str | None, topic: str) -> None:
    """Produce: WRITE on the transactional id of a transactional request, and WRITE on the topic."""
    if ctx.broker.authorizer is None:
        return
    if transactional_id is not None:
        require(ctx, Op.WRITE, TRANSACTIONAL_ID, transactional_id)
    require(ctx, Op.WRITE, TOPIC, topic)


def require_idempotent(ctx: RequestContext) -> None:
    """InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
    (KIP-679)."""
    if allowed(ctx, Op.IDEMPOTENT_WRITE, CLUSTER, log_denial=False) or allowed_by_type(ctx, Op.WRITE, TOPIC):
        return
    require(ctx, Op.IDEMPOTENT_WRITE, CLUSTER)  # logs the denial


def commit_refusal(ctx: RequestContext, group: str, topic: str) -> ErrorCode | None:
    """OffsetCommit/TxnOffsetCommit/OffsetDelete of a partition: READ on the group, READ on the topic."""
    if ctx.broker.authorizer is None:
        return None
    if not allowed(ctx, Op.READ, GROUP, group):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not allowed(ctx, Op.READ, TOPIC, topic):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None


def hide_topics(ctx: RequestContext, entries: list[tuple[tuple[str, int], Any, Any]], listing: bool
                ) -> list[tuple[tuple[str, int], Any, Any]]:
    """OffsetFetch: partitions of topics without DESCRIBE are left out of a listing (all the group's
    offsets) and answer TOPIC_AUTHORIZATION_FAILED when named."""
    if ctx.broker.authorizer is None:
        return entries
    out = []
    for tp, value, err in entries:
        if allowed(ctx, Op.DESCRIBE, TOPIC, tp[0], log_denial=not listing):
            out.append((tp, value, err))
        elif not listing:
            out.append((tp, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    return out
