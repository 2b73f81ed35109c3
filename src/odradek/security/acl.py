"""Kafka's ACL model (KIP-11, KIP-290), pure: resource patterns, access control entries, bindings and
binding filters, their names on the wire, in ZooKeeper and on the command line, and the rules that
decide an action (StandardAuthorizer/AclAuthorizer semantics):

- an ACL applies to a resource when its pattern is LITERAL with the resource's name or the wildcard `*`,
  or PREFIXED with a prefix of the name; to a principal when it names it or `User:*`; to a host when it
  names it or `*`;
- a DENY for the operation (or ALL) wins over any ALLOW;
- an ALLOW for the operation or ALL allows it; READ, WRITE, DELETE and ALTER also allow DESCRIBE, and
  ALTER_CONFIGS allows DESCRIBE_CONFIGS;
- a resource with no ACL at all is allowed only with allow.everyone.if.no.acl.found; super users may do
  anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from odradek.java_text import java_to_string


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


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = AclOperation
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"

# The names Kafka uses in ZooKeeper, in log lines and on kafka-acls.sh's command line.
RESOURCE_NAMES = {
    ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group", ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId", ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}
OPERATION_NAMES = {
    Op.ALL: "All", Op.READ: "Read", Op.WRITE: "Write", Op.CREATE: "Create", Op.DELETE: "Delete", Op.ALTER: "Alter",
    Op.DESCRIBE: "Describe", Op.CLUSTER_ACTION: "ClusterAction", Op.DESCRIBE_CONFIGS: "DescribeConfigs",
    Op.ALTER_CONFIGS: "AlterConfigs", Op.IDEMPOTENT_WRITE: "IdempotentWrite", Op.CREATE_TOKENS: "CreateTokens",
    Op.DESCRIBE_TOKENS: "DescribeTokens",
}
PERMISSION_NAMES = {Permission.ALLOW: "Allow", Permission.DENY: "Deny"}

# What an ALLOW of one operation also allows (Kafka's implied operations).
_DESCRIBE_IMPLIED_BY = frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER})
_DESCRIBE_CONFIGS_IMPLIED_BY = frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS})

# The operations each resource type supports (the authorized-operations bit sets report these).
SUPPORTED_OPERATIONS: Mapping[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE,
                                   Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({Op.READ, Op.DELETE, Op.DESCRIBE}),
    ResourceType.CLUSTER: frozenset({Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                                     Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE}),
    ResourceType.TRANSACTIONAL_ID: frozenset({Op.DESCRIBE, Op.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({Op.DESCRIBE}),
    ResourceType.USER: frozenset({Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS}),
}


def allowing_operations(op: AclOperation) -> frozenset[AclOperation]:
    """The operations whose ALLOW allows `op` (besides ALL)."""
    if op == Op.DESCRIBE:
        return _DESCRIBE_IMPLIED_BY
    if op == Op.DESCRIBE_CONFIGS:
        return _DESCRIBE_CONFIGS_IMPLIED_BY
    return frozenset({op})


def parse_enum(enum: type[IntEnum], text: str) -> IntEnum:
    """A member by its name in any case and with or without underscores (`DescribeConfigs`,
    `DESCRIBE_CONFIGS`, `describe-configs`); ValueError when there is none."""
    key = text.replace("_", "").replace("-", "").lower()
    for member in enum:
        if member.name.replace("_", "").lower() == key:
            return member
    raise ValueError(text)


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return java_to_string("ResourcePattern", resourceType=self.resource_type, name=self.name,
                              patternType=self.pattern_type)

    def log_name(self) -> str:
        """As the authorizer's log lines name a resource: `Topic:LITERAL:t`."""
        return f"{RESOURCE_NAMES.get(self.resource_type, self.resource_type.name)}:{self.pattern_type.name}:{self.name}"

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this pattern applies to the resource `name` of `resource_type`."""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return False


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: Permission

    def __str__(self) -> str:
        return java_to_string("", principal=self.principal, host=self.host, operation=self.operation,
                              permissionType=self.permission)

    def applies_to(self, principal: str, host: str) -> bool:
        return (self.principal == principal or self.principal == WILDCARD_PRINCIPAL) and \
            (self.host == host or self.host == WILDCARD)

    def to_json(self) -> dict[str, str]:
        return {"principal": self.principal, "permissionType": PERMISSION_NAMES[self.permission],
                "operation": OPERATION_NAMES[self.operation], "host": self.host}

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> AccessControlEntry:
        """One entry of a znode's "acls" list; ValueError when it is not one Kafka would write."""
        try:
            op = parse_enum(AclOperation, str(d["operation"]))
            perm = parse_enum(Permission, str(d["permissionType"]))
            return cls(str(d["principal"]), str(d["host"]), AclOperation(op), Permission(perm))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed ACL entry {d!r}") from exc


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return java_to_string("", pattern=self.pattern, entry=self.entry)


def validate_new_binding(binding: AclBinding) -> str | None:
    """Why Kafka refuses to create this ACL (InvalidRequestException's message), or None."""
    p, e = binding.pattern, binding.entry
    if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {p.pattern_type.name}"
    if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {p.resource_type.name}"
    if e.operation in (Op.UNKNOWN, Op.ANY):
        return f"Invalid operation {e.operation.name}"
    if e.permission not in (Permission.ALLOW, Permission.DENY):
        return f"Invalid permissionType {e.permission.name}"
    if not p.name:
        return "Resource name should not be empty"
    if ":" not in e.principal:
        return (f"Could not parse principal from `{e.principal}` "
                "(no colon is present separating the principal type from the principal name)")
    if p.resource_type == ResourceType.CLUSTER and p.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if "/" in p.name:
        # the name is a znode name in ZooKeeper's layout
        return f"Resource name {p.name!r} must not contain '/'"
    return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """DescribeAcls/DeleteAcls filters: None names and ANY types match everything; pattern type MATCH
    matches the patterns that apply to the name (LITERAL equal or `*`, PREFIXED prefixes)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = Op.ANY
    permission: Permission = Permission.ANY

    def invalid(self) -> str | None:
        """Why this filter cannot be used (an UNKNOWN element), or None."""
        for label, value in (("resourceType", self.resource_type), ("patternType", self.pattern_type),
                             ("operation", self.operation), ("permissionType", self.permission)):
            if value == 0:
                return f"The filter contains an UNKNOWN {label}"
        return None

    def matches_pattern(self, p: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != p.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != p.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, p.pattern_type):
            return self.name == p.name
        # MATCH
        if p.pattern_type == PatternType.LITERAL:
            return self.name == p.name or p.name == WILDCARD
        if p.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(p.name)
        return False

    def matches_entry(self, e: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == e.principal)
                and (self.host is None or self.host == e.host)
                and (self.operation == Op.ANY or self.operation == e.operation)
                and (self.permission == Permission.ANY or self.permission == e.permission))

    def matches(self, b: AclBinding) -> bool:
        return self.matches_pattern(b.pattern) and self.matches_entry(b.entry)


class AclTable:
    """All ACLs, by resource pattern, with the lookups authorization needs. Not thread-safe; the
    broker's event loop owns it."""

    def __init__(self, acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]] | None = None) -> None:
        self._by_pattern: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        # resource type -> literal name -> pattern, and resource type -> prefixed patterns
        self._literal: dict[ResourceType, dict[str, ResourcePattern]] = {}
        self._prefixed: dict[ResourceType, dict[str, ResourcePattern]] = {}
        for pattern, entries in (acls or {}).items():
            self.put(pattern, entries)

    def put(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Replace the ACLs of `pattern` (none: forget it)."""
        acls = frozenset(entries)
        index = self._literal if pattern.pattern_type == PatternType.LITERAL else self._prefixed
        if not acls:
            self._by_pattern.pop(pattern, None)
            index.get(pattern.resource_type, {}).pop(pattern.name, None)
            return
        self._by_pattern[pattern] = acls
        index.setdefault(pattern.resource_type, {})[pattern.name] = pattern

    def get(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        return self._by_pattern.get(pattern, frozenset())

    def patterns(self) -> list[ResourcePattern]:
        return list(self._by_pattern)

    def bindings(self, flt: AclBindingFilter | None = None) -> list[AclBinding]:
        out: list[AclBinding] = []
        for pattern, entries in self._by_pattern.items():
            if flt is not None and not flt.matches_pattern(pattern):
                continue
            out.extend(AclBinding(pattern, e) for e in entries if flt is None or flt.matches_entry(e))
        return sorted(out)

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_pattern.values())

    def matching(self, resource_type: ResourceType, name: str) -> list[tuple[ResourcePattern, AccessControlEntry]]:
        """Every ACL whose pattern applies to the resource `name` of `resource_type`."""
        out: list[tuple[ResourcePattern, AccessControlEntry]] = []
        literal = self._literal.get(resource_type)
        if literal:
            for key in (name, WILDCARD) if name != WILDCARD else (name,):
                pattern = literal.get(key)
                if pattern is not None:
                    out.extend((pattern, e) for e in self._by_pattern[pattern])
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            if len(prefixed) < len(name) + 1:
                candidates = [p for prefix, p in prefixed.items() if name.startswith(prefix)]
            else:
                candidates = [p for p in (prefixed.get(name[:i]) for i in range(1, len(name) + 1)) if p is not None]
            for pattern in candidates:
                out.extend((pattern, e) for e in self._by_pattern[pattern])
        return out

    def of_type(self, resource_type: ResourceType) -> list[tuple[ResourcePattern, AccessControlEntry]]:
        out: list[tuple[ResourcePattern, AccessControlEntry]] = []
        for index in (self._literal, self._prefixed):
            for pattern in index.get(resource_type, {}).values():
                out.extend((pattern, e) for e in self._by_pattern[pattern])
        return out


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str  # for the log line: which rule decided


def decide(acls: list[tuple[ResourcePattern, AccessControlEntry]], principal: str, host: str, op: AclOperation,
           allow_if_no_acl: bool) -> Decision:
    """The decision for `principal` at `host` doing `op` on a resource whose applicable ACLs are `acls`
    (those of AclTable.matching), super users aside."""
    if not acls:
        return Decision(allow_if_no_acl, "no ACL found for the resource")
    allowing = allowing_operations(op)
    allow: tuple[ResourcePattern, AccessControlEntry] | None = None
    for pattern, e in acls:
        if not e.applies_to(principal, host):
            continue
        if e.permission == Permission.DENY and (e.operation == op or e.operation == Op.ALL):
            return Decision(False, f"DENY ACL {e} on {pattern}")
        if allow is None and e.permission == Permission.ALLOW and (e.operation == Op.ALL or e.operation in allowing):
            allow = (pattern, e)
    if allow is not None:
        return Decision(True, f"ALLOW ACL {allow[1]} on {allow[0]}")
    return Decision(False, "no matching ALLOW ACL")


def decide_by_type(table: AclTable, resource_type: ResourceType, principal: str, host: str, op: AclOperation,
                   allow_if_no_acl: bool) -> bool:
    """Kafka's authorizeByResourceType (KIP-679): whether `principal` may do `op` on at least one resource
    of `resource_type`: some ALLOW applies that no DENY covers (a DENY on the wildcard, or on a
    literal name or prefix the allowed pattern falls under)."""
    entries = table.of_type(resource_type)
    if not entries:
        return allow_if_no_acl
    allowing = allowing_operations(op)
    denies = [p for p, e in entries if e.applies_to(principal, host) and e.permission == Permission.DENY
              and (e.operation == op or e.operation == Op.ALL)]
    if any(p.pattern_type == PatternType.LITERAL and p.name == WILDCARD for p in denies):
        return False
    for p, e in entries:
        if not (e.applies_to(principal, host) and e.permission == Permission.ALLOW
                and (e.operation == Op.ALL or e.operation in allowing)):
            continue
        covered = any((d.pattern_type == PatternType.PREFIXED and p.name.startswith(d.name))
                      or (d.pattern_type == PatternType.LITERAL and p.pattern_type == PatternType.LITERAL
                          and d.name == p.name) for d in denies)
        if not covered:
            return True
    return False
