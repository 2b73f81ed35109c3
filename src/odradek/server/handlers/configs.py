"""Config resources: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs on TOPIC, BROKER (one broker
by id, or the cluster default under the empty name: dynamic broker configs, KIP-226), BROKER_LOGGER and
GROUP (group configs, KIP-848/KIP-932: any group id, whether or not the group exists, as Kafka allows).

Checks, error codes and messages follow Kafka 3.x (ConfigAdminManager, ConfigHelper, ZkAdminManager): a
BROKER resource names this broker or the default, a key that cannot change on a running broker is
INVALID_REQUEST "Cannot update these configs dynamically: Set(k)", a bad value INVALID_REQUEST in the
config's own wording. One departure: Kafka stores unknown broker keys as custom configs; Odradek, which
refuses them in server.properties too, answers INVALID_CONFIG. GROUP resources answer as Kafka 4.x does
(ConfigHelper, ControllerConfigurationValidator, GroupConfig): every error INVALID_CONFIG in GroupConfig's
words but an empty group id, INVALID_REQUEST.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)

from odradek.cluster.group_configs import inherited_value
from odradek.config import BrokerConfigEntry, ConfigError, ConfigSource, Synonym, UnknownConfigError
from odradek.config_keys import BROKER_KEYS, GROUP_CONFIGS, TOPIC_CONFIGS, ConfigKey, ConfigType
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.server import authz, loggers
from odradek.server.registry import RequestContext, handles

RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER = 2, 4, 8
CLIENT_METRICS = 16  # the config resource type Odradek has none of
RESOURCE_GROUP = 32
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
# DescribeConfigs config_type (Kafka's DescribeConfigsResponse.ConfigType)
CONFIG_TYPE_IDS = {
    ConfigType.BOOLEAN: 1, ConfigType.STRING: 2, ConfigType.INT: 3, ConfigType.SHORT: 4, ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6, ConfigType.LIST: 7, ConfigType.CLASS: 8, ConfigType.PASSWORD: 9,
}

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = Result.DescribeConfigsResourceResult
_Resource = ListConfigResourcesResponse.ConfigResource

log = logging.getLogger("odradek.server")


# ---- DescribeConfigs ----------------------------------------------------------------------------

def _entry(name: str, value: str | None, source: int, read_only: bool, sensitive: bool,
           synonyms: Sequence[Synonym], key: ConfigKey | None, include_synonyms: bool, include_docs: bool,
           level: str = "broker") -> Any:
    """One config of a resource; its documentation (v3+, when asked) from the catalogue, none for keys the
    catalogue does not hold (broker loggers)."""
    return Entry(
        name=name, value=value, read_only=read_only, config_source=source,
        is_default=source == ConfigSource.DEFAULT_CONFIG, is_sensitive=sensitive,
        synonyms=[Entry.DescribeConfigsSynonym(name=s.name, value=s.value, source=s.source) for s in synonyms]
        if include_synonyms else [],
        config_type=CONFIG_TYPE_IDS.get(key.type, 0) if key is not None else 0,
        documentation=key.documentation(level) if include_docs and key is not None else None,
    )


def _wanted(keys: list[str] | None) -> Callable[[str], bool]:
    """Kafka describes every config when the request names none (null or empty)."""
    return (lambda _name: True) if not keys else keys.__contains__


def topic_config_rows(ctx: RequestContext, overrides: Mapping[str, str]) -> Iterator[tuple[str, str, int, list[Synonym]]]:
    """Every config of a topic with these overrides, by name: (name, value, source, synonyms), as
    DescribeConfigs and CreateTopics (v5+) answer them."""
    broker = ctx.broker
    defaults = broker.config.topic_defaults()
    for key in sorted(defaults):
        found: list[Synonym] = []
        if key in overrides:
            found.append(Synonym(key, overrides[key], int(ConfigSource.TOPIC_CONFIG)))
        server = TOPIC_CONFIGS[key].server_default
        if server is not None:
            found += broker.config.topic_synonyms(server)
        source = found[0].source if found else int(ConfigSource.DEFAULT_CONFIG)
        yield key, overrides[key] if key in overrides else defaults[key], source, found


def _describe_topic(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool, docs: bool) -> list[Any]:
    meta = ctx.broker.metadata.topics.get(name)
    if meta is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
    wanted = _wanted(keys)
    return [_entry(key, value, source, False, False, found, TOPIC_CONFIGS[key], synonyms, docs, level="topic")
            for key, value, source, found in topic_config_rows(ctx, meta.config) if wanted(key)]


def _describe_group(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool, docs: bool) -> list[Any]:
    """Every group config of a group, whether or not the group exists (Kafka keeps configs for groups to
    come): its override (GROUP_CONFIG), else the broker's value of the key it inherits from, described as
    Kafka describes it: DEFAULT_CONFIG, the broker key as its synonym."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    configs = ctx.broker.group_configs
    overrides = configs.overrides(name)
    wanted = _wanted(keys)
    out = []
    for key_name, key in sorted(GROUP_CONFIGS.items()):
        if not wanted(key_name):
            continue
        value = key.format(configs.value(name, key_name))
        source = ConfigSource.GROUP_CONFIG if key_name in overrides else ConfigSource.DEFAULT_CONFIG
        # the override, then the broker key it inherits from (the key itself when none), as Kafka 4.4 lists them
        inherited = Synonym(key.server_default or key_name, key.format(inherited_value(ctx.broker.config, key_name)),
                            int(ConfigSource.DEFAULT_CONFIG))
        found = [Synonym(key_name, value, int(source)), inherited] if key_name in overrides else [inherited]
        out.append(_entry(key_name, value, int(source), False, False, found, key, synonyms, docs, level="group"))
    return out


def _broker_rows(ctx: RequestContext, name: str) -> list[BrokerConfigEntry]:
    broker = ctx.broker
    if not name:
        return broker.config.describe_dynamic_default()
    if _int_or_none(name) != broker.broker_id:
        if _int_or_none(name) is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}")
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {broker.broker_id} or empty string, but received {name}")
    return broker.config.describe_broker()


def _describe_broker(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool,
                     docs: bool) -> list[Any]:
    wanted = _wanted(keys)
    return [_entry(row.name, row.value, row.source, row.read_only, row.is_sensitive, row.synonyms,
                   BROKER_KEYS.get(row.name), synonyms, docs)
            for row in _broker_rows(ctx, name) if wanted(row.name)]


def _describe_loggers(ctx: RequestContext, name: str, keys: list[str] | None) -> list[Any]:
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    if _int_or_none(name) is None:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}")
    if int(name) != ctx.broker.broker_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {ctx.broker.broker_id} but received {name}")
    wanted = _wanted(keys)
    source = int(ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG)
    return [_entry(logger, level, source, False, False, (), None, False, False)
            for logger, level in loggers.loggers().items() if wanted(logger)]


@handles(DescribeConfigsRequest, DescribeConfigsResponse, versions=(1, 4))
async def describe_configs(ctx: RequestContext, request: Any) -> DescribeConfigsResponse:
    results = []
    synonyms = bool(getattr(request, "include_synonyms", False))
    docs = ctx.version >= 3 and bool(request.include_documentation)
    seen: set[tuple[Any, ...]] = set()
    for r in request.resources:
        # each resource (with its keys) once: described many times it would multiply the response
        key = (r.resource_type, r.resource_name, None if r.configuration_keys is None else tuple(r.configuration_keys))
        if key in seen:
            continue
        seen.add(key)
        res = Result(error_code=0, error_message=None, resource_type=r.resource_type,
                     resource_name=r.resource_name, configs=[])
        keys = list(r.configuration_keys) if r.configuration_keys is not None else None
        try:
            authz.require_config(ctx, authz.Op.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
            if r.resource_type == RESOURCE_TOPIC:
                res.configs = _describe_topic(ctx, r.resource_name, keys, synonyms, docs)
            elif r.resource_type == RESOURCE_BROKER:
                res.configs = _describe_broker(ctx, r.resource_name, keys, synonyms, docs)
            elif r.resource_type == RESOURCE_BROKER_LOGGER:
                res.configs = _describe_loggers(ctx, r.resource_name, keys)
            elif r.resource_type == RESOURCE_GROUP:
                res.configs = _describe_group(ctx, r.resource_name, keys, synonyms, docs)
            else:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {r.resource_type}")
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
        results.append(res)
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


# ---- AlterConfigs and IncrementalAlterConfigs ----------------------------------------------------

def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _apply_ops(current: dict[str, str], configs: list[Any], incremental: bool,
               catalogue: dict[str, ConfigKey], effective: Mapping[str, str] | None = None) -> dict[str, str]:
    """The configs after the request: the given ones (AlterConfigs replaces them all), or the current
    ones with each operation applied in order (Kafka's prepareIncrementalConfigs; APPEND and SUBTRACT
    start from the key's effective value when it is not set here, e.g. the broker's default of a topic
    config, and only lists take them)."""
    if not incremental:
        return {c.name: c.value for c in configs if c.value is not None}
    new = dict(current)
    for c in configs:
        op = c.config_operation
        if op == OP_SET:
            new[c.name] = c.value
        elif op == OP_DELETE:
            new.pop(c.name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            key = catalogue.get(c.name)
            if key is None:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {c.name}")
            if key.type is not ConfigType.LIST:
                verb = "append" if op == OP_APPEND else "subtract"
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {c.name}")
            old = new.get(c.name, (effective or {}).get(c.name, key.default or ""))
            items = [x for x in old.split(",") if x]
            values = [x for x in (c.value or "").split(",") if x]
            if op == OP_APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [x for x in items if x not in values]
            new[c.name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
    return new


def _check_entries(configs: list[Any], incremental: bool) -> None:
    """Kafka's checks before any resource is looked at: no key twice, no null value but to delete."""
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c.name for c in configs if c.value is None and not (incremental and c.config_operation == OP_DELETE)]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")


async def _alter_topic(ctx: RequestContext, resource: Any, incremental: bool, validate_only: bool) -> None:
    name = resource.resource_name
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    meta = ctx.broker.metadata.topics.get(name)
    if meta is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
    new = _apply_ops(meta.config, resource.configs, incremental, TOPIC_CONFIGS, ctx.broker.config.topic_defaults())
    await ctx.broker.topic_admin.alter_topic_config(name, new, validate_only)


async def _alter_group(ctx: RequestContext, resource: Any, incremental: bool, validate_only: bool) -> None:
    """A group's overrides replaced (AlterConfigs) or changed (IncrementalAlterConfigs), then validated as a
    whole, as Kafka's controller validates them; the group need not exist."""
    name = resource.resource_name
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    configs = ctx.broker.group_configs
    new = _apply_ops(configs.overrides(name), resource.configs, incremental, GROUP_CONFIGS)
    try:
        configs.check(name, new)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if not validate_only:
        await configs.write(name, new)


async def _alter_broker(ctx: RequestContext, resource: Any, incremental: bool, validate_only: bool) -> None:
    broker = ctx.broker
    name = resource.resource_name
    target: int | None = None
    if name:
        target = _int_or_none(name)
        if target is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}")
        if target != broker.broker_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {broker.broker_id}, but received {name}")
    current = await broker.dynamic_config.stored(target) if incremental else {}
    new = _apply_ops(current, resource.configs, incremental, BROKER_KEYS)
    try:
        checked = broker.config.check_dynamic(new, per_broker=target is not None)
    except UnknownConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    except ConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    if validate_only:
        return
    shown = ",".join(f"{k} -> {v}" for k, v in sorted(checked.items()))
    if target is None:
        log.info("%s Updating brokers with new configuration : %s", broker.prefix, shown)
    else:
        log.info("%s Updating broker %d with new configuration : %s", broker.prefix, target, shown)
    await broker.dynamic_config.write(target, checked)


def _alter_loggers(ctx: RequestContext, resource: Any, validate_only: bool) -> None:
    name = resource.resource_name
    if _int_or_none(name) is None:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}")
    if int(name) != ctx.broker.broker_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected node id. Expected {ctx.broker.broker_id}, but received {name}")
    ops = [loggers.LoggerOp(c.name, c.config_operation, c.value) for c in resource.configs]
    loggers.validate(ops)
    if not validate_only:
        loggers.apply(ops)


async def _alter_one(ctx: RequestContext, resource: Any, incremental: bool, validate_only: bool) -> None:
    authz.require_config(ctx, authz.Op.ALTER_CONFIGS, resource.resource_type, resource.resource_name)
    _check_entries(resource.configs, incremental)
    kind = resource.resource_type
    if kind == RESOURCE_TOPIC:
        await _alter_topic(ctx, resource, incremental, validate_only)
    elif kind == RESOURCE_BROKER:
        await _alter_broker(ctx, resource, incremental, validate_only)
    elif kind == RESOURCE_GROUP:
        await _alter_group(ctx, resource, incremental, validate_only)
    elif kind == RESOURCE_BROKER_LOGGER and incremental:
        _alter_loggers(ctx, resource, validate_only)
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")


async def _alter(ctx: RequestContext, request: Any, response: Any, incremental: bool) -> Any:
    """AlterConfigs and IncrementalAlterConfigs share their response shape."""
    results = []
    seen = [(r.resource_type, r.resource_name) for r in request.resources]
    for r in request.resources:
        code, message = ErrorCode.NONE, None
        try:
            if seen.count((r.resource_type, r.resource_name)) > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            await _alter_one(ctx, r, incremental, request.validate_only)
        except KafkaError as exc:
            code, message = exc.code, exc.message
        results.append(response.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name))
    return response(throttle_time_ms=0, responses=results)


@handles(AlterConfigsRequest, AlterConfigsResponse, versions=(0, 2))
async def alter_configs(ctx: RequestContext, request: Any) -> AlterConfigsResponse:
    return await _alter(ctx, request, AlterConfigsResponse, incremental=False)


@handles(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, versions=(0, 1))
async def incremental_alter_configs(ctx: RequestContext, request: Any) -> IncrementalAlterConfigsResponse:
    return await _alter(ctx, request, IncrementalAlterConfigsResponse, incremental=True)


@handles(ListConfigResourcesRequest, ListConfigResourcesResponse, versions=(0, 1))
async def list_config_resources(ctx: RequestContext, request: Any) -> ListConfigResourcesResponse:
    """KIP-1142: the config resources there are (v0 knows only client-metrics ones, of which Odradek has
    none). v1 lists topics, this broker, its loggers and the groups with configs for the types asked (all
    when none is named)."""
    authz.require(ctx, authz.Op.DESCRIBE_CONFIGS, authz.CLUSTER)
    wanted = set(request.resource_types or ()) if ctx.version >= 1 else {CLIENT_METRICS}
    out: list[Any] = []
    if ctx.version >= 1:
        if not wanted or RESOURCE_TOPIC in wanted:
            out += [_Resource(resource_name=name, resource_type=RESOURCE_TOPIC)
                    for name in sorted(ctx.broker.metadata.topics)]
        if not wanted or RESOURCE_BROKER in wanted:
            out.append(_Resource(resource_name=str(ctx.broker.broker_id), resource_type=RESOURCE_BROKER))
        if not wanted or RESOURCE_BROKER_LOGGER in wanted:
            out.append(_Resource(resource_name=str(ctx.broker.broker_id), resource_type=RESOURCE_BROKER_LOGGER))
        if not wanted or RESOURCE_GROUP in wanted:
            out += [_Resource(resource_name=group, resource_type=RESOURCE_GROUP)
                    for group in ctx.broker.group_configs.groups()]
    unknown = wanted - {RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, CLIENT_METRICS, RESOURCE_GROUP}
    if unknown:
        return ListConfigResourcesResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                                           config_resources=[])
    return ListConfigResourcesResponse(throttle_time_ms=0, error_code=0, config_resources=out)
