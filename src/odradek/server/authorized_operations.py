"""The `*_authorized_operations` bit sets of Metadata, DescribeCluster and DescribeGroups: Kafka's ACL
operation codes, the operations each resource type supports, and what a request is told. With no
authorizer configured Kafka reports every supported operation, and so does Odradek (which has none yet);
a field not asked for carries Kafka's "not requested" value (INT32_MIN, `None` for the codec)."""

from __future__ import annotations

from enum import IntEnum


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


Op = AclOperation
TOPIC_OPERATIONS = frozenset({Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS,
                              Op.ALTER_CONFIGS})
GROUP_OPERATIONS = frozenset({Op.READ, Op.DELETE, Op.DESCRIBE})
CLUSTER_OPERATIONS = frozenset({Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                                Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE})


def authorized(supported: frozenset[AclOperation], requested: bool) -> set[int] | None:
    """The operation codes to report (every supported one: no authorizer), or None when not asked."""
    return {int(op) for op in supported} if requested else None


def bits(operations: set[int] | None) -> int:
    """The int32 bit set of `operations`, for schemas that carry it as a plain integer (INT32_MIN: none)."""
    return -(2**31) if operations is None else sum(1 << op for op in operations)
