"""`odradek acls`: Kafka's kafka-acls.sh over CreateAcls, DescribeAcls and DeleteAcls (through
librdkafka's admin client, so --command-config carries SASL and TLS settings), with Kafka's flags,
checks and output:

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     <TAB>(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)

    Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     <TAB>(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)

(<TAB>: a tab, as Kafka prints it.) Every failure is one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import add_bootstrap_flags, bootstrap_of, open_client, read_properties_file
from odradek.admin_client.errors import CliError, UsageError, kafka_message
from odradek.cli.common import one_action
from odradek.java_text import java_to_string
from odradek.security.acl import (
    CLUSTER_NAME,
    OPERATION_NAMES,
    SUPPORTED_OPERATIONS,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    parse_enum,
)

Op = AclOperation
TIMEOUT_S = 30.0
DESCRIPTION = """\
Add, remove and list ACLs, as kafka-acls.sh does (the brokers need authorizer.class.name set).

  odradek acls --bootstrap-server HOST:PORT --command-config admin.properties \\
      --add --allow-principal User:alice --operation Read --topic t
  odradek acls --bootstrap-server HOST:PORT --add --allow-principal User:alice --producer --topic t
  odradek acls --bootstrap-server HOST:PORT --add --allow-principal User:alice --consumer --topic t --group g
  odradek acls --bootstrap-server HOST:PORT --add --allow-principal User:bob --operation All \\
      --topic logs- --resource-pattern-type prefixed
  odradek acls --bootstrap-server HOST:PORT --list [--topic t] [--resource-pattern-type match]
  odradek acls --bootstrap-server HOST:PORT --remove --allow-principal User:alice --operation Read --topic t --force"""


def build_parser() -> ArgParser:
    p = ArgParser("acls", DESCRIPTION)
    add_bootstrap_flags(p)
    p.add_argument("--command-config", metavar="FILE",
                   help="properties of the admin client (security.protocol, sasl.*, ssl.*, ...)")
    p.add_argument("--add", action="store_true", help="add ACLs")
    p.add_argument("--remove", action="store_true", help="remove ACLs")
    p.add_argument("--list", action="store_true", help="list ACLs (of the given resources, or all)")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                   help="a topic ('*': all topics); may be repeated")
    p.add_argument("--group", action="append", default=[], metavar="GROUP",
                   help="a consumer group ('*': all groups); may be repeated")
    p.add_argument("--cluster", action="store_true", help="the cluster")
    p.add_argument("--transactional-id", action="append", default=[], metavar="ID",
                   help="a transactional id ('*': all); may be repeated")
    p.add_argument("--resource-pattern-type", default="literal", metavar="TYPE",
                   help="literal (default) or prefixed; --list and --remove also take any and match")
    p.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                   help="principal (Type:name, e.g. User:alice; User:* for all) to allow; may be repeated")
    p.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                   help="principal to deny; may be repeated")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                   help="host the allowed principals may connect from (default: *)")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST",
                   help="host the denied principals are refused from (default: *)")
    p.add_argument("--operation", action="append", default=[], metavar="OPERATION",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                        "AlterConfigs, IdempotentWrite, All (default); may be repeated")
    p.add_argument("--producer", action="store_true",
                   help="convenience: WRITE, DESCRIBE and CREATE on the topics (WRITE and DESCRIBE on "
                        "--transactional-id, IDEMPOTENT_WRITE on the cluster with --idempotent)")
    p.add_argument("--consumer", action="store_true",
                   help="convenience: READ and DESCRIBE on the topics, READ on the group")
    p.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    p.add_argument("--principal", action="append", default=[], metavar="PRINCIPAL",
                   help="with --list: only the ACLs of this principal; may be repeated")
    p.add_argument("--force", action="store_true", help="do not ask for confirmation")
    return p


def _pattern_type(opts: argparse.Namespace) -> PatternType:
    try:
        ptype = PatternType(parse_enum(PatternType, opts.resource_pattern_type))
    except ValueError:
        raise UsageError(f"Error: unknown --resource-pattern-type '{opts.resource_pattern_type}' "
                         "(literal, prefixed, any or match)") from None
    if ptype == PatternType.UNKNOWN:
        raise UsageError("Error: --resource-pattern-type unknown is not valid")
    if opts.add and ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(f"Error: A '--resource-pattern-type' value of '{ptype.name}' is not valid when adding acls.")
    return ptype


def _resources(opts: argparse.Namespace, ptype: PatternType) -> list[ResourcePattern]:
    out = [ResourcePattern(ResourceType.TOPIC, t, ptype) for t in opts.topic]
    out += [ResourcePattern(ResourceType.GROUP, g, ptype) for g in opts.group]
    out += [ResourcePattern(ResourceType.TRANSACTIONAL_ID, x, ptype) for x in opts.transactional_id]
    if opts.cluster:
        out.append(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, ptype))
    return list(dict.fromkeys(out))


def _principals(values: Iterable[str]) -> list[str]:
    out = []
    for v in values:
        if ":" not in v:
            raise UsageError(f"Error: Could not parse principal from `{v}` (no colon is present separating the "
                             "principal type from the principal name)")
        out.append(v)
    return out


def _entries(opts: argparse.Namespace, operations: Iterable[AclOperation]) -> list[AccessControlEntry]:
    ops = list(operations)
    out: list[AccessControlEntry] = []
    for permission, principals, hosts in ((Permission.ALLOW, opts.allow_principal, opts.allow_host),
                                          (Permission.DENY, opts.deny_principal, opts.deny_host)):
        for principal in _principals(principals):
            for host in hosts or ["*"]:
                out.extend(AccessControlEntry(principal, host, op, permission) for op in ops)
    return out


def _operations(opts: argparse.Namespace) -> list[AclOperation]:
    ops: list[AclOperation] = []
    for text in opts.operation or ["All"]:
        try:
            op = AclOperation(parse_enum(AclOperation, text))
        except ValueError:
            op = Op.UNKNOWN
        if op in (Op.UNKNOWN, Op.ANY):
            raise UsageError(f"Error: unknown --operation '{text}' ({', '.join(OPERATION_NAMES.values())})")
        ops.append(op)
    return list(dict.fromkeys(ops))


def requested_acls(opts: argparse.Namespace, ptype: PatternType) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """The ACLs --add asks for (and the ones --remove names), by resource, checked as kafka-acls.sh checks them."""
    out: dict[ResourcePattern, list[AccessControlEntry]] = {}
    if opts.producer or opts.consumer:
        if opts.operation:
            raise UsageError("Error: --operation cannot be used with --producer or --consumer")
        if not opts.topic:
            raise UsageError(f"Error: With --{'producer' if opts.producer else 'consumer'} you must specify a --topic")
        if opts.consumer and not opts.group:
            raise UsageError("Error: With --consumer you must specify a --group")
        topics = [ResourcePattern(ResourceType.TOPIC, t, ptype) for t in opts.topic]
        if opts.producer:
            for r in topics:
                out.setdefault(r, []).extend(_entries(opts, (Op.WRITE, Op.DESCRIBE, Op.CREATE)))
            for x in opts.transactional_id:
                r = ResourcePattern(ResourceType.TRANSACTIONAL_ID, x, ptype)
                out.setdefault(r, []).extend(_entries(opts, (Op.WRITE, Op.DESCRIBE)))
            if opts.idempotent:
                r = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, ptype)
                out.setdefault(r, []).extend(_entries(opts, (Op.IDEMPOTENT_WRITE,)))
        if opts.consumer:
            for r in topics:
                out.setdefault(r, []).extend(_entries(opts, (Op.READ, Op.DESCRIBE)))
            for g in opts.group:
                r = ResourcePattern(ResourceType.GROUP, g, ptype)
                out.setdefault(r, []).extend(_entries(opts, (Op.READ,)))
    else:
        resources = _resources(opts, ptype)
        if not resources:
            raise UsageError("Error: You must provide at least one resource: --topic <topic> or --cluster or "
                             "--group <group> or --transactional-id <id>")
        ops = _operations(opts)
        for r in resources:
            supported = SUPPORTED_OPERATIONS[r.resource_type] | {Op.ALL}
            if set(ops) - supported:
                raise UsageError(f"Error: ResourceType {r.resource_type.name} only supports operations "
                                 f"{', '.join(OPERATION_NAMES[o] for o in sorted(supported))}")
            out[r] = _entries(opts, ops)
    return {r: list(dict.fromkeys(entries)) for r, entries in out.items()}


# ---- the admin client ------------------------------------------------------------------------------

def _ck() -> Any:
    from confluent_kafka import admin

    return admin


def _to_ck_binding(b: AclBinding) -> Any:
    ck = _ck()
    return ck.AclBinding(ck.ResourceType(int(b.pattern.resource_type)), b.pattern.name,
                         ck.ResourcePatternType(int(b.pattern.pattern_type)), b.entry.principal, b.entry.host,
                         ck.AclOperation(int(b.entry.operation)), ck.AclPermissionType(int(b.entry.permission)))


def _to_ck_filter(r: ResourcePattern | None, entry: AccessControlEntry | None) -> Any:
    ck = _ck()
    return ck.AclBindingFilter(
        ck.ResourceType(int(r.resource_type) if r else int(ResourceType.ANY)), r.name if r else None,
        ck.ResourcePatternType(int(r.pattern_type) if r else int(PatternType.ANY)),
        entry.principal if entry else None, entry.host if entry else None,
        ck.AclOperation(int(entry.operation) if entry else int(Op.ANY)),
        ck.AclPermissionType(int(entry.permission) if entry else int(Permission.ANY)))


def _from_ck(b: Any) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType(int(b.restype.value)), b.name, PatternType(int(b.resource_pattern_type.value))),
                      AccessControlEntry(b.principal, b.host, AclOperation(int(b.operation.value)),
                                         Permission(int(b.permission_type.value))))


def _wait(future: Any) -> Any:
    try:
        return future.result(timeout=TIMEOUT_S)
    except Exception as exc:
        raise CliError(f"Error while executing ACL command: {kafka_message(exc)}") from None


def _block(header: str, entries: Iterable[AccessControlEntry]) -> str:
    lines = "\n".join(f"\t{e}" for e in entries)
    return f"{header}: \n {lines} \n"


def _confirm(opts: argparse.Namespace, question: str) -> bool:
    if opts.force:
        return True
    print(question)
    answer = sys.stdin.readline().strip()
    return answer.lower() == "y"


class Acls:
    def __init__(self, admin: Any, opts: argparse.Namespace, ptype: PatternType) -> None:
        self.admin, self.opts, self.ptype = admin, opts, ptype

    def describe(self, r: ResourcePattern | None) -> dict[ResourcePattern, list[AccessControlEntry]]:
        found = _wait(self.admin.describe_acls(_to_ck_filter(r, None), request_timeout=TIMEOUT_S))
        out: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for b in sorted(_from_ck(x) for x in found or []):
            out.setdefault(b.pattern, []).append(b.entry)
        return out

    def do_list(self) -> None:
        resources: list[ResourcePattern | None] = list(_resources(self.opts, self.ptype))
        found: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for r in resources or [None]:
            for pattern, entries in self.describe(r).items():
                found.setdefault(pattern, []).extend(e for e in entries if e not in found.get(pattern, []))
        if not self.opts.principal:
            for pattern in sorted(found):
                print(_block(f"Current ACLs for resource `{pattern}`", found[pattern]))
            return
        for principal in _principals(self.opts.principal):
            print(f"ACLs for principal `{principal}`")
            for pattern in sorted(found):
                mine = [e for e in found[pattern] if e.principal == principal]
                if mine:
                    print(_block(f"Current ACLs for resource `{pattern}`", mine))

    def do_add(self) -> None:
        for r, entries in requested_acls(self.opts, self.ptype).items():
            print(_block(f"Adding ACLs for resource `{r}`", entries))
            results = self.admin.create_acls([_to_ck_binding(AclBinding(r, e)) for e in entries],
                                             request_timeout=TIMEOUT_S)
            for fut in results.values():
                _wait(fut)
        self.do_list()

    def do_remove(self) -> None:
        principals = self.opts.allow_principal or self.opts.deny_principal
        if principals or self.opts.producer or self.opts.consumer:
            for r, entries in requested_acls(self.opts, self.ptype).items():
                if _confirm(self.opts, _block("Are you sure you want to remove ACLs", entries)
                            + f" from resource filter `{_filter_text(r)}`? (y/n)"):
                    results = self.admin.delete_acls([_to_ck_filter(r, e) for e in entries], request_timeout=TIMEOUT_S)
                    for fut in results.values():
                        _wait(fut)
        else:
            resources = _resources(self.opts, self.ptype)
            if not resources:
                raise UsageError("Error: You must provide at least one resource: --topic <topic> or --cluster or "
                                 "--group <group> or --transactional-id <id>")
            for r in resources:
                if _confirm(self.opts, f"Are you sure you want to delete all ACLs for resource filter "
                                       f"`{_filter_text(r)}`? (y/n)"):
                    results = self.admin.delete_acls([_to_ck_filter(r, None)], request_timeout=TIMEOUT_S)
                    for fut in results.values():
                        _wait(fut)
        self.do_list()


def _filter_text(r: ResourcePattern) -> str:
    return java_to_string("ResourcePatternFilter", resourceType=r.resource_type, name=r.name, patternType=r.pattern_type)


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    action = one_action(opts, ("add", "remove", "list"),
                        "Error: Command must include exactly one action: --list, --add, --remove.")
    ptype = _pattern_type(opts)
    if opts.principal and action != "list":
        raise UsageError("Error: --principal is only valid with --list (use --allow-principal/--deny-principal)")
    if action == "add" and not (opts.allow_principal or opts.deny_principal):
        raise UsageError("Error: You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    if action != "list" and (opts.allow_principal or opts.deny_principal):
        requested_acls(opts, ptype)  # the flags are checked before connecting
    from confluent_kafka.admin import AdminClient

    admin, _ = open_client(AdminClient, bootstrap_of(opts), read_properties_file(opts.command_config),
                           timeout_ms=10_000)
    getattr(Acls(admin, opts, ptype), f"do_{action}")()
    sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
