"""The `*_authorized_operations` bit sets of Metadata, DescribeCluster and DescribeGroups: Kafka's ACL
operation codes, the operations each resource type supports, and what a request is told. With no
authorizer configured Kafka reports every supported operation, and so does Odradek; with one, the
operations the authorizer allows the caller (`server/authz.py`, `operations`). A field not asked for
carries Kafka's "not requested" value (INT32_MIN, `None` for the codec)."""

from __future__ import annotations

from odradek.security.acl import SUPPORTED_OPERATIONS, AclOperation, ResourceType

__all__ = ["AclOperation", "SUPPORTED_OPERATIONS", "TOPIC_OPERATIONS", "GROUP_OPERATIONS", "CLUSTER_OPERATIONS",
           "authorized", "bits"]

Op = AclOperation
TOPIC_OPERATIONS = SUPPORTED_OPERATIONS[ResourceType.TOPIC]
GROUP_OPERATIONS = SUPPORTED_OPERATIONS[ResourceType.GROUP]
CLUSTER_OPERATIONS = SUPPORTED_OPERATIONS[ResourceType.CLUSTER]


def authorized(supported: frozenset[AclOperation], requested: bool) -> set[int] | None:
    """The operation codes to report without an authorizer (every supported one), or None when not asked."""
    return {int(op) for op in supported} if requested else None


def bits(operations: set[int] | None) -> int:
    """The int32 bit set of `operations`, for schemas that carry it as a plain integer (INT32_MIN: none)."""
    return -(2**31) if operations is None else sum(1 << op for op in operations)
