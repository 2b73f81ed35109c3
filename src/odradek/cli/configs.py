"""`odradek configs`: Kafka's kafka-configs.sh for topics, brokers (one broker, or the cluster default:
dynamic broker configs), broker loggers, groups (group configs), users' SCRAM credentials and client quotas
(users, clients, or both, through Describe/AlterClientQuotas), with Kafka's flags, checks and output.

    --describe: "Dynamic configs for broker 0 are:" (or "All configs ..." with --all, "Default configs for
    brokers in the cluster are:"), then one line per config:
    "  name=value sensitive=false synonyms={SOURCE:name=value, ...}".
    --alter: "Completed updating config for broker 0." / "Completed updating default config for brokers
    in the cluster."

Requests go over Odradek's protocol client: a broker's own configs and loggers to that broker (Kafka's
AdminClient does the same; a broker describes and changes only its own), the rest to any broker. As in
Kafka, --alter of brokers rewrites the whole dynamic layer with AlterConfigs (the current dynamic configs,
plus --add-config, less --delete-config); topics, groups and broker loggers change through
IncrementalAlterConfigs. --describe of groups without a name describes every group with configs
(ListConfigResources).
Every failure is one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import add_bootstrap_flags, read_properties_file
from odradek.admin_client.errors import CliError, UsageError
from odradek.cli.common import add_zookeeper_flag
from odradek.cli.scram_config import scram_settings

TOPICS, BROKERS, BROKER_LOGGERS, USERS, CLIENTS = "topics", "brokers", "broker-loggers", "users", "clients"
GROUPS = "groups"
SUPPORTED_TYPES = (TOPICS, BROKERS, BROKER_LOGGERS, USERS, CLIENTS, GROUPS)
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
# KIP-546's entity types of the tool's entity types
QUOTA_ENTITY_TYPES = {USERS: "user", CLIENTS: "client-id"}
if TYPE_CHECKING:
    from odradek.protocol.client_security import ClientSecurity

SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
KAFKA_TYPES = ("topics", "clients", "users", "brokers", "ips", "broker-loggers", "client-metrics", "groups")
RESOURCE_TYPES = {TOPICS: 2, BROKERS: 4, BROKER_LOGGERS: 8, GROUPS: 32}
# the Java client's ConfigEntry.ConfigSource names of DescribeConfigs' source ids
SOURCE_NAMES = {
    0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG",
}
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, GROUP_CONFIG = 1, 2, 3, 8
OP_SET, OP_DELETE = 0, 1
REQUEST_TIMEOUT_S = 30.0
DESCRIBE_VERSION, ALTER_VERSION, INCREMENTAL_VERSION = 2, 1, 1

DESCRIPTION = """\
Describe and alter the configs of topics, brokers, broker loggers and groups, users' SCRAM credentials,
and the quotas of users and clients, as kafka-configs.sh does.

  odradek configs --bootstrap-server HOST:PORT --entity-type brokers --entity-name 0 --describe [--all]
  odradek configs --bootstrap-server HOST:PORT --entity-type brokers --entity-default \\
      --alter --add-config log.retention.ms=3600000,log.cleaner.threads=2
  odradek configs --bootstrap-server HOST:PORT --entity-type topics --entity-name t \\
      --alter --delete-config retention.ms
  odradek configs --bootstrap-server HOST:PORT --entity-type broker-loggers --entity-name 0 \\
      --alter --add-config odradek.server=DEBUG
  odradek configs --bootstrap-server HOST:PORT --entity-type groups --entity-name g \\
      --alter --add-config consumer.session.timeout.ms=50000
  odradek configs --bootstrap-server HOST:PORT --entity-type users --entity-name alice \\
      --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
  odradek configs --bootstrap-server HOST:PORT --entity-type users --entity-name alice \\
      --entity-type clients --entity-name c1 --alter --add-config producer_byte_rate=1024
  odradek configs --bootstrap-server HOST:PORT --entity-type clients --entity-default --describe"""


@dataclass(frozen=True)
class Entry:
    """One config of a DescribeConfigs answer."""

    name: str
    value: str | None
    source: int
    sensitive: bool
    synonyms: tuple[tuple[str, str | None, int], ...] = ()


# ---- flags -----------------------------------------------------------------------------------------

def build_parser() -> ArgParser:
    p = ArgParser("configs", DESCRIPTION)
    add_bootstrap_flags(p)
    add_zookeeper_flag(p, "deprecated (Kafka 2.x): read and write topic and broker configs in ZooKeeper directly")
    p.add_argument("--command-config", metavar="FILE",
                   help="properties of the admin connection (only client.id is used)")
    p.add_argument("--zk-tls-config-file", metavar="FILE",
                   help="with --zookeeper: the file of ZooKeeper client TLS properties (zookeeper.ssl.*); "
                        "SASL to ZooKeeper comes from -Djava.security.auth.login.config in KAFKA_OPTS")
    p.add_argument("--alter", action="store_true", help="alter the configuration of the entity")
    p.add_argument("--describe", action="store_true", help="list configs of the given entity")
    p.add_argument("--all", action="store_true", help="with --describe: all configs, static ones included")
    p.add_argument("--entity-type", action="append", default=[], metavar="TYPE",
                   help="topics, brokers, broker-loggers, groups, users or clients (users and clients may be"
                        " combined)")
    p.add_argument("--entity-name", action="append", default=[], metavar="NAME",
                   help="topic name, group id, or broker id (brokers, broker-loggers)")
    p.add_argument("--entity-default", action="store_true",
                   help="the default entity: of brokers (dynamic broker configs), users or clients (quotas)")
    p.add_argument("--add-config", metavar="K=V[,K=V]",
                   help="configs to add; square brackets group values that contain commas: k1=v1,k2=[v1,v2],k3=v3")
    p.add_argument("--add-config-file", metavar="FILE", help="a properties file of configs to add")
    p.add_argument("--delete-config", action="append", default=[], metavar="K[,K]", help="config keys to remove")
    p.add_argument("--topic", metavar="NAME", help="same as --entity-type topics --entity-name NAME")
    p.add_argument("--broker", metavar="ID", help="same as --entity-type brokers --entity-name ID")
    p.add_argument("--broker-defaults", action="store_true", help="same as --entity-type brokers --entity-default")
    p.add_argument("--broker-logger", metavar="ID", help="same as --entity-type broker-loggers --entity-name ID")
    p.add_argument("--group", metavar="ID", help="same as --entity-type groups --entity-name ID")
    p.add_argument("--force", action="store_true", help="accepted for compatibility; ignored")
    return p


@dataclass(frozen=True)
class Command:
    """What to do, checked as kafka-configs.sh checks it."""

    bootstrap: str
    action: str  # "describe" or "alter"
    entity_type: str
    entity_name: str | None  # "" = the default entity; None = every entity (describe only)
    describe_all: bool = False
    add: tuple[tuple[str, str], ...] = ()
    delete: tuple[str, ...] = ()
    client_id: str = "configs-tool"
    command_config: str | None = None
    zookeeper: str | None = None
    zk_tls_config_file: str | None = None
    # users and clients: the quota entity, (type, name) with "" for the default and None for every entity
    quota_entity: tuple[tuple[str, str | None], ...] = ()


def parse_command(argv: list[str]) -> Command:
    opts = build_parser().parse_args(argv)
    if int(opts.alter) + int(opts.describe) != 1:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    if opts.describe and (opts.add_config is not None or opts.add_config_file or opts.delete_config):
        flag = "--add-config" if opts.add_config is not None else (
            "--add-config-file" if opts.add_config_file else "--delete-config")
        raise UsageError(f'Option "[{flag.lstrip("-")}]" can\'t be used with option "[describe]"')
    types, names = _entities(opts)
    if len(types) != len(set(types)):
        dupes = sorted({t for t in types if types.count(t) > 1})
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(dupes)}")
    if opts.zk_tls_config_file and not opts.zookeeper:
        raise UsageError("Error: --zk-tls-config-file is only valid with --zookeeper")
    if opts.zookeeper and opts.bootstrap_server:
        raise UsageError("Only one of --bootstrap-server or --zookeeper must be specified")
    if not opts.bootstrap_server and not opts.zookeeper:
        raise UsageError("One of the required --bootstrap-server or --bootstrap-controller arguments must be specified")
    if opts.zookeeper and any(t not in (TOPICS, BROKERS, USERS, CLIENTS) for t in types):
        raise UsageError("With --zookeeper only the topics, brokers, users and clients entity types are supported; "
                         "use --bootstrap-server for the others")
    for t in types:
        if t not in KAFKA_TYPES:
            raise UsageError(f"Invalid entity type {t}, the entity type must be one of {', '.join(KAFKA_TYPES)}"
                             " with a --bootstrap-server argument")
        if t not in SUPPORTED_TYPES:
            raise UsageError(f"Entity type {t} is not supported by Odradek (it has no IP quotas or client"
                             " metrics); use one of topics, brokers, broker-loggers, groups, users, clients")
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise UsageError("Only 'users' and 'clients' entity types may be specified together")
    entity_type = types[0]
    if len(names) > len(types) or (len(types) > 1 and opts.alter and len(names) != len(types)):
        raise UsageError("Exactly one entity name must be specified for every entity type")
    name = names[0] if names else None
    quota_entity = tuple((t, names[i] if i < len(names) else None) for i, t in enumerate(types)
                         if t in QUOTA_ENTITY_TYPES)
    if name and entity_type in (BROKERS, BROKER_LOGGERS) and not re.fullmatch(r"[+-]?[0-9]+", name):
        raise UsageError(f"The entity name for {entity_type} must be a valid integer broker id, but it is: {name}")
    if opts.describe:
        if entity_type not in (BROKERS, USERS, CLIENTS) and name == "":
            raise UsageError(f"--entity-default must not be specified with --describe of {entity_type}")
        if entity_type == BROKER_LOGGERS and not name:
            raise UsageError(f"An entity name must be specified with --describe of {entity_type}")
        return Command(opts.bootstrap_server or "", "describe", entity_type, name, describe_all=opts.all,
                       client_id=_client_id(opts), command_config=opts.command_config, zookeeper=opts.zookeeper,
                   zk_tls_config_file=opts.zk_tls_config_file, quota_entity=quota_entity)
    if entity_type in (BROKERS, USERS, CLIENTS):
        if name is None:
            raise UsageError("An entity-name or default entity must be specified with --alter of users, clients,"
                             " brokers or ips")
    elif not name:
        raise UsageError(f"An entity name must be specified with --alter of {entity_type}")
    if opts.add_config is not None and opts.add_config_file:
        raise UsageError("Only one of --add-config or --add-config-file must be specified")
    if opts.add_config is None and not opts.add_config_file and not opts.delete_config:
        raise UsageError("At least one of --add-config, --add-config-file, or --delete-config must be specified"
                         " with --alter")
    add = dict(read_properties_file(opts.add_config_file)) if opts.add_config_file else {}
    if opts.add_config is not None:
        add.update(parse_add_config(opts.add_config))
    for key in add:
        if not re.fullmatch(r"[a-zA-Z0-9._-]*", key):
            raise UsageError(f"Invalid character found for config key: {key}")
    delete = tuple(k.strip() for item in opts.delete_config for k in item.split(",") if k.strip())
    if quota_entity:
        allowed = QUOTA_KEYS + (tuple(SCRAM_MECHANISMS) if types == [USERS] else ())
        for key in [*add, *delete]:
            if key not in allowed:
                raise UsageError(f"Invalid config(s): {key}")
        scram = [k for k in [*add, *delete] if k in SCRAM_MECHANISMS]
        if scram and name == "":
            raise UsageError("SCRAM credentials are only for named users: --entity-default is not allowed with them")
        for key, value in add.items():
            if key in SCRAM_MECHANISMS:
                scram_settings(key, value)
            else:
                try:
                    float(value)
                except ValueError:
                    raise UsageError(f"Invalid value {value} for configuration {key}: not a number") from None
    return Command(opts.bootstrap_server or "", "alter", entity_type, name, add=tuple(add.items()), delete=delete,
                   client_id=_client_id(opts), command_config=opts.command_config, zookeeper=opts.zookeeper,
                   zk_tls_config_file=opts.zk_tls_config_file, quota_entity=quota_entity)


def _client_id(opts: argparse.Namespace) -> str:
    props = read_properties_file(opts.command_config) if opts.command_config else {}
    return props.get("client.id", "configs-tool")


def _entities(opts: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The entity types and names given, through --entity-* or the shortcut flags (not both)."""
    shortcuts = [(TOPICS, opts.topic), (BROKERS, opts.broker), (BROKER_LOGGERS, opts.broker_logger),
                 (BROKERS, "" if opts.broker_defaults else None), (GROUPS, opts.group)]
    given = [(t, n) for t, n in shortcuts if n is not None]
    generic = bool(opts.entity_type or opts.entity_name or opts.entity_default)
    if generic and given:
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    if given:
        return [t for t, _ in given], [n for _, n in given]
    names = list(opts.entity_name) + ([""] if opts.entity_default else [])
    return list(opts.entity_type), names


def parse_add_config(text: str) -> dict[str, str]:
    """kafka-configs.sh's --add-config: pairs split at commas outside square brackets, each at its first
    '=' outside brackets; the brackets are then dropped from the value."""
    outside = r"(?=[^\]]*(?:\[|$))"
    out: dict[str, str] = {}
    for pair in re.split("," + outside, text):
        parts = re.split(r"\s*=\s*" + outside, pair)
        if len(parts) != 2:
            raise UsageError('requirement failed: Invalid entity config: all configs to be added must be in the'
                             ' format "key=val".')
        out[parts[0].strip()] = re.sub(r"\[?\]?", "", parts[1]).strip()
    return out


# ---- output ----------------------------------------------------------------------------------------

def header(cmd: Command, name: str) -> str:
    if cmd.entity_type == BROKERS and name == "":
        return "Default configs for brokers in the cluster are:"
    return f"{'All' if cmd.describe_all else 'Dynamic'} configs for {cmd.entity_type[:-1]} {name} are:"


def _text(value: str | None) -> str:
    return "null" if value is None else value


def entry_line(entry: Entry) -> str:
    synonyms = ", ".join(f"{SOURCE_NAMES.get(src, 'UNKNOWN')}:{name}={_text(value)}"
                         for name, value, src in entry.synonyms)
    return f"  {entry.name}={_text(entry.value)} sensitive={'true' if entry.sensitive else 'false'} synonyms={{{synonyms}}}"


def dynamic_source(entity_type: str, name: str) -> int | None:
    """The source of the configs kafka-configs.sh shows without --all (broker loggers: all of them)."""
    if entity_type == TOPICS:
        return TOPIC_CONFIG
    if entity_type == GROUPS:
        return GROUP_CONFIG
    if entity_type == BROKERS:
        return DYNAMIC_DEFAULT_BROKER_CONFIG if name == "" else DYNAMIC_BROKER_CONFIG
    return None


# ---- requests --------------------------------------------------------------------------------------

class Admin:
    """The requests of the tool, each sent to the broker that must answer it."""

    def __init__(self, bootstrap: str, client_id: str, security: ClientSecurity) -> None:
        from odradek.cli.broker_connection import AdminConnection  # kafka-python only when needed

        self.conn = AdminConnection(bootstrap, REQUEST_TIMEOUT_S, client_id, security=security)
        self._brokers: dict[int, Any] = {}

    def close(self) -> None:
        for c in self._brokers.values():
            c.close()
        self.conn.close()

    def broker_ids(self) -> list[int]:
        return sorted(b.node_id for b in self.conn.metadata([]).brokers)

    def topic_names(self) -> list[str]:
        return sorted(t.name for t in self.conn.metadata(None).topics if t.error_code == 0)

    def groups_with_configs(self) -> list[str]:
        """The groups with configs (ListConfigResources v1)."""
        from kafka.protocol.admin import ListConfigResourcesRequest

        answer = self.conn.any_broker().request(
            ListConfigResourcesRequest(resource_types=[RESOURCE_TYPES[GROUPS]]), 1)
        _raise(answer.error_code, None)
        return sorted(r.resource_name for r in answer.config_resources)

    def _target(self, entity_type: str, name: str) -> Any:
        """The connection for a resource: a broker's own resources go to that broker."""
        if entity_type in (TOPICS, GROUPS) or name == "":
            return self.conn.any_broker()
        broker_id = int(name)
        if broker_id not in self._brokers:
            nodes = {b.node_id: b for b in self.conn.metadata([]).brokers}
            node = nodes.get(broker_id)
            if node is None:
                known = ", ".join(str(i) for i in sorted(nodes))
                raise CliError(f"Error: broker {broker_id} is not in the cluster (brokers: {known})")
            try:
                self._brokers[broker_id] = self.conn.open(node.host, node.port)
            except OSError as exc:
                raise CliError(f"Error: cannot connect to broker {broker_id} at {node.host}:{node.port}:"
                               f" {exc.strerror or exc}") from None
        return self._brokers[broker_id]

    def describe(self, entity_type: str, name: str, synonyms: bool) -> list[Entry]:
        from kafka.protocol.admin import DescribeConfigsRequest

        req = DescribeConfigsRequest(
            resources=[DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=RESOURCE_TYPES[entity_type], resource_name=name, configuration_keys=None)],
            include_synonyms=synonyms, include_documentation=False)
        result = self._target(entity_type, name).request(req, DESCRIBE_VERSION).results[0]
        _raise(result.error_code, result.error_message)
        return [Entry(c.name, c.value, c.config_source, c.is_sensitive,
                      tuple((s.name, s.value, s.source) for s in c.synonyms or ()))
                for c in result.configs]

    def alter(self, entity_type: str, name: str, configs: dict[str, str]) -> None:
        """AlterConfigs: the resource's configs become `configs`."""
        from kafka.protocol.admin import AlterConfigsRequest

        resource = AlterConfigsRequest.AlterConfigsResource
        req = AlterConfigsRequest(resources=[resource(
            resource_type=RESOURCE_TYPES[entity_type], resource_name=name,
            configs=[resource.AlterableConfig(name=k, value=v) for k, v in configs.items()])], validate_only=False)
        answer = self._target(entity_type, name).request(req, ALTER_VERSION).responses[0]
        _raise(answer.error_code, answer.error_message)

    def incremental_alter(self, entity_type: str, name: str, ops: Sequence[tuple[str, int, str | None]]) -> None:
        from kafka.protocol.admin import IncrementalAlterConfigsRequest

        resource = IncrementalAlterConfigsRequest.AlterConfigsResource
        req = IncrementalAlterConfigsRequest(resources=[resource(
            resource_type=RESOURCE_TYPES[entity_type], resource_name=name,
            configs=[resource.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])],
            validate_only=False)
        answer = self._target(entity_type, name).request(req, INCREMENTAL_VERSION).responses[0]
        _raise(answer.error_code, answer.error_message)

    def describe_quotas(self, entity: Sequence[tuple[str, str | None]]) -> list[tuple[dict[str, str | None],
                                                                                       list[tuple[str, float]]]]:
        """DescribeClientQuotas of the entities matching `entity` exactly (strict), as kafka-configs.sh asks."""
        from kafka.protocol.admin import DescribeClientQuotasRequest as Req

        components = [Req.ComponentData(entity_type=QUOTA_ENTITY_TYPES[t],
                                        match_type=2 if n is None else (1 if n == "" else 0),
                                        match=n or None) for t, n in entity]
        answer = self.conn.any_broker().request(Req(components=components, strict=True), 1)
        _raise(answer.error_code, answer.error_message)
        return [({e.entity_type: e.entity_name for e in entry.entity}, [(v.key, v.value) for v in entry.values])
                for entry in answer.entries or ()]

    def alter_quotas(self, entity: Sequence[tuple[str, str | None]], ops: Sequence[tuple[str, float | None]]) -> None:
        from kafka.protocol.admin import AlterClientQuotasRequest as Req

        entry = Req.EntryData(
            entity=[Req.EntryData.EntityData(entity_type=QUOTA_ENTITY_TYPES[t], entity_name=n or None)
                    for t, n in entity],
            ops=[Req.EntryData.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])
        answer = self.conn.any_broker().request(Req(entries=[entry], validate_only=False), 1)
        for result in answer.entries:
            _raise(result.error_code, result.error_message)

    def describe_scram(self, users: list[str] | None) -> list[Any]:
        from kafka.protocol.admin import DescribeUserScramCredentialsRequest as Req

        names = None if users is None else [Req.UserName(name=u) for u in users]
        answer = self.conn.any_broker().request(Req(users=names), 0)
        _raise(answer.error_code, answer.error_message)
        return list(answer.results)

    def alter_scram(self, user: str, upsert: dict[str, tuple[int, str]], delete: Sequence[str]) -> None:
        import hashlib
        import os

        from kafka.protocol.admin import AlterUserScramCredentialsRequest as Req

        upsertions = []
        for mechanism, (iterations, password) in upsert.items():
            salt = os.urandom(32)
            digest = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
            salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
            upsertions.append(Req.ScramCredentialUpsertion(name=user, mechanism=SCRAM_MECHANISMS[mechanism],
                                                           iterations=iterations, salt=salt, salted_password=salted))
        deletions = [Req.ScramCredentialDeletion(name=user, mechanism=SCRAM_MECHANISMS[m]) for m in delete]
        answer = self.conn.any_broker().request(Req(deletions=deletions, upsertions=upsertions), 0)
        for result in answer.results:
            _raise(result.error_code, result.error_message)


def _raise(code: int, message: str | None) -> None:
    if code:
        from odradek.protocol.errors import ErrorCode

        try:
            name = ErrorCode(code).name
        except ValueError:
            name = f"error {code}"
        raise CliError(f"Error while executing config command: {name}: {message or name}")


# ---- actions ---------------------------------------------------------------------------------------

def describe_users(admin: Admin, cmd: Command) -> None:
    """kafka-configs.sh's lines for users' SCRAM credentials."""
    from odradek.protocol.errors import ErrorCode

    names = {v: k for k, v in SCRAM_MECHANISMS.items()}
    for result in admin.describe_scram(None if cmd.entity_name is None else [cmd.entity_name]):
        if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
            continue
        _raise(result.error_code, result.error_message)
        creds = ", ".join(f"{names.get(c.mechanism, c.mechanism)}=iterations={c.iterations}"
                          for c in result.credential_infos)
        print(f"SCRAM credential configs for user-principal '{result.user}' are {creds}")


def java_double(value: float) -> str:
    """A double as Java's Double.toString prints it (1024.0, 1.0E7)."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    mantissa, _, exponent = f"{value:.16e}".partition("e")
    mantissa = mantissa.rstrip("0")
    return f"{mantissa}{'0' if mantissa.endswith('.') else ''}E{int(exponent)}"


def quota_entity_text(parts: dict[str, str | None]) -> str:
    """kafka-configs.sh's naming of a quota entity: "user-principal 'alice', the default client-id"."""
    out = []
    for kind, label in (("user", "user-principal"), ("client-id", "client-id")):
        if kind in parts:
            name = parts[kind]
            out.append(f"{label} '{name}'" if name is not None else f"the default {label}")
    return ", ".join(out)


def describe_quotas(admin: Admin, cmd: Command) -> None:
    for parts, values in admin.describe_quotas(cmd.quota_entity):
        entries = ", ".join(f"{k}={java_double(v)}" for k, v in values)
        print(f"Quota configs for {quota_entity_text(parts)} are {entries}")


def describe(admin: Admin, cmd: Command) -> None:
    if cmd.quota_entity:
        describe_quotas(admin, cmd)
        # as Kafka: SCRAM credentials too, unless clients or the default user are asked for
        if cmd.entity_type == USERS and len(cmd.quota_entity) == 1 and cmd.entity_name != "":
            describe_users(admin, cmd)
        return
    if cmd.entity_name is not None:
        names = [cmd.entity_name]
    elif cmd.entity_type == TOPICS:
        names = admin.topic_names()
    elif cmd.entity_type == GROUPS:
        names = admin.groups_with_configs()
    else:
        names = [str(i) for i in admin.broker_ids()] + [""]
    for name in names:
        print(header(cmd, name))
        wanted = None if cmd.describe_all else dynamic_source(cmd.entity_type, name)
        for entry in sorted(admin.describe(cmd.entity_type, name, synonyms=True), key=lambda e: e.name):
            if wanted is None or entry.source == wanted:
                print(entry_line(entry))


def alter(admin: Admin, cmd: Command) -> None:
    name = cmd.entity_name or ""
    added = dict(cmd.add)
    if cmd.quota_entity:
        quota_add = {k: float(v) for k, v in added.items() if k in QUOTA_KEYS}
        quota_delete = [k for k in cmd.delete if k in QUOTA_KEYS]
        if quota_delete:
            present = {k for _parts, values in admin.describe_quotas(cmd.quota_entity) for k, _v in values}
            invalid = [k for k in quota_delete if k not in present]
            if invalid:
                raise CliError(f"Invalid config(s): {','.join(invalid)}")
        if quota_add or quota_delete:
            admin.alter_quotas(cmd.quota_entity, [*quota_add.items(), *((k, None) for k in quota_delete)])
        scram_add = {k: scram_settings(k, v) for k, v in added.items() if k in SCRAM_MECHANISMS}
        scram_delete = [k for k in cmd.delete if k in SCRAM_MECHANISMS]
        if scram_add or scram_delete:
            admin.alter_scram(name, scram_add, scram_delete)
    elif cmd.entity_type == BROKER_LOGGERS:
        loggers = {e.name for e in admin.describe(cmd.entity_type, name, synonyms=True)}
        invalid = [k for k in cmd.delete if k not in loggers] + [k for k in added if k not in loggers]
        if invalid:
            raise CliError(f"Invalid broker logger(s): {','.join(invalid)}")
        admin.incremental_alter(cmd.entity_type, name, [(k, OP_SET, v) for k, v in added.items()]
                                + [(k, OP_DELETE, "") for k in cmd.delete])
    else:
        wanted = dynamic_source(cmd.entity_type, name)
        current = {e.name: e for e in admin.describe(cmd.entity_type, name, synonyms=False) if e.source == wanted}
        invalid = [k for k in cmd.delete if k not in current]
        if invalid:
            raise CliError(f"Invalid config(s): {','.join(invalid)}")
        if cmd.entity_type in (TOPICS, GROUPS):
            admin.incremental_alter(cmd.entity_type, name, [(k, OP_SET, v) for k, v in added.items()]
                                    + [(k, OP_DELETE, "") for k in cmd.delete])
        else:
            new = {k: e.value for k, e in current.items() if k not in cmd.delete and k not in added}
            hidden = sorted(k for k, v in new.items() if v is None)
            if hidden:
                raise CliError("All sensitive broker config entries must be specified for --alter, missing"
                               f" entries: Set({', '.join(hidden)})")
            admin.alter(cmd.entity_type, name, {**{k: v for k, v in new.items() if v is not None}, **added})
    if name:
        print(f"Completed updating config for {cmd.entity_type[:-1]} {name}.")
    else:
        print(f"Completed updating default config for {cmd.entity_type} in the cluster.")


def main(argv: list[str]) -> int:
    def body() -> int:
        cmd = parse_command(argv)
        if cmd.zookeeper:
            from odradek.cli.configs_zk import run

            run(cmd)
            return 0
        from odradek.cli.broker_connection import security_of

        admin = Admin(cmd.bootstrap, cmd.client_id, security_of(read_properties_file(cmd.command_config)))
        try:
            (describe if cmd.action == "describe" else alter)(admin, cmd)
        finally:
            admin.close()
        sys.stdout.flush()
        return 0

    return run_tool(body)
