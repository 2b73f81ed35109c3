"""`odradek configs --zookeeper`: the Kafka 2.x way of kafka-configs.sh, reading and writing the config
znodes of topics, brokers (per broker and the cluster default), client quotas and users' SCRAM
credentials directly in ZooKeeper, brokers running or not (credentials for the brokers' own inter-broker
user must be there before they start). Output as Kafka 2.x printed it: "Configs for topic 't' are k=v,..." and "Completed
Updating config for entity: topic 't'."; running brokers pick changes up through their watches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.admin_client.errors import CliError
from odradek.cli.zk_session import ZkSession, children, read_json
from odradek.cluster import quotas as cq
from odradek.cluster import znodes as zn
from odradek.config import BROKER_KEYS, ConfigError, validate_topic_configs

if TYPE_CHECKING:
    from odradek.cli.configs import Command

SESSION_TIMEOUT_MS = 30_000
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
TOPICS = "topics"


def label(entity_type: str, name: str) -> str:
    """Kafka 2.x's ConfigCommand names: topic 't', brokers '0', default brokers."""
    kind = "topic" if entity_type == TOPICS else entity_type
    return f"default {kind}" if name == "" else f"{kind} '{name}'"


def _path(entity_type: str, name: str) -> str:
    if entity_type == TOPICS:
        return zn.topic_config_path(name)
    return zn.broker_config_path(zn.DEFAULT_ENTITY if name == "" else name)


def _check_broker_configs(config: dict[str, str]) -> None:
    unknown = sorted(k for k in config if k not in BROKER_KEYS)
    if unknown:
        raise CliError(f"Error: Unknown broker config name: {', '.join(unknown)}")
    static = sorted(k for k in config if not BROKER_KEYS[k].dynamic)
    if static:
        raise CliError(f"Error: Cannot update these configs dynamically: Set({', '.join(static)})")
    for key, value in config.items():
        try:
            BROKER_KEYS[key].parse(value)
        except ConfigError as exc:
            raise CliError(f"Error: {exc}") from None


def quota_entity(cmd: Command) -> cq.Entity:
    """The quota znode's entity of a --alter or a named --describe (every part named or default)."""
    names = dict(cmd.quota_entity)

    def part(entity_type: str) -> str | None:
        if entity_type not in names:
            return None
        return cq.DEFAULT if names[entity_type] in ("", None) else names[entity_type]

    return part("users"), part("clients")


def quota_label(entity: cq.Entity) -> str:
    """Kafka 2.x's names: user-principal 'alice', client-id 'c1', default user-principal."""
    out = []
    for value, kind in zip(entity, ("user-principal", "client-id"), strict=True):
        if value is not None:
            out.append(f"default {kind}" if value == cq.DEFAULT else f"{kind} '{value}'")
    return ", ".join(out)


def run_quotas(zk: ZkSession, cmd: Command) -> None:
    if cmd.action == "describe":
        wanted = dict(cmd.quota_entity)
        for entity, values in sorted(zk.run(cq.read_all).items(), key=lambda e: str(e[0])):
            parts = dict(zip(("users", "clients"), entity, strict=True))
            if any((parts[t] is None) != (t not in wanted) for t in parts):
                continue
            if any(n is not None and parts[t] != (cq.DEFAULT if n == "" else n) for t, n in wanted.items()):
                continue
            shown = ",".join(f"{k}={cq.format_value(v)}" for k, v in values.items())
            print(f"Configs for {quota_label(entity)} are {shown}")
        return
    entity = quota_entity(cmd)
    scram_add = {k: v for k, v in cmd.add if k in SCRAM_MECHANISMS}
    scram_delete = [k for k in cmd.delete if k in SCRAM_MECHANISMS]
    if scram_add or scram_delete:
        assert entity[0] is not None and entity[0] != cq.DEFAULT  # checked when the command was parsed
        _alter_scram(zk, entity[0], scram_add, scram_delete)
    current = zk.run(cq.read_all).get(entity, {})
    quota_delete = [k for k in cmd.delete if k not in SCRAM_MECHANISMS]
    missing = [k for k in quota_delete if k not in current]
    if missing:
        raise CliError(f"Error: Invalid config(s): {','.join(missing)}")
    changes: dict[str, float | None] = {k: None for k in quota_delete}
    changes.update({k: float(v) for k, v in cmd.add if k not in SCRAM_MECHANISMS})
    if changes:
        zk.run(cq.alter, entity, changes)
    print(f"Completed Updating config for entity: {quota_label(entity)}.")


def _alter_scram(zk: ZkSession, user: str, add: dict[str, str], delete: list[str]) -> None:
    """Salted credentials written beside the user's quotas, as Kafka 2.x's ConfigCommand did."""
    from odradek.cli.scram_config import scram_settings
    from odradek.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, credential
    from odradek.security.scram_store import read_user_config, write_user_config

    config = zk.run(read_user_config, user)
    missing = [k for k in delete if k not in config]
    if missing:
        raise CliError(f"Error: Invalid config(s): {','.join(missing)}")
    for key in delete:
        config.pop(key)
    for mechanism, value in add.items():
        iterations, password = scram_settings(mechanism, value)
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise CliError(f"Error: Iterations {iterations} is out of range for {mechanism}: it must be between "
                           f"{MIN_ITERATIONS} and {MAX_ITERATIONS}")
        config[mechanism] = credential(mechanism, password, iterations).to_config()
    zk.run(write_user_config, user, config)


def run(cmd: Command) -> None:
    assert cmd.zookeeper is not None
    zk_config: dict[str, str] = {}
    if cmd.zk_tls_config_file:
        from odradek.security.zk_client import load_tls_config_file

        try:
            zk_config = load_tls_config_file(cmd.zk_tls_config_file)
        except ConfigError as exc:
            raise CliError(f"Error: {exc}") from None
    with ZkSession(cmd.zookeeper, SESSION_TIMEOUT_MS, require_cluster=False, zk_config=zk_config) as zk:
        if cmd.quota_entity:
            run_quotas(zk, cmd)
            return
        if cmd.action == "describe":
            if cmd.entity_name is not None:
                names = [cmd.entity_name]
            else:
                root = zn.CONFIG_TOPICS if cmd.entity_type == TOPICS else zn.CONFIG_BROKERS
                names = ["" if n == zn.DEFAULT_ENTITY else n for n in zk.run(children, root)]
            for name in names:
                config = zn.config_from_json(zk.run(read_json, _path(cmd.entity_type, name)) or {})
                shown = ",".join(f"{k}={v}" for k, v in config.items())
                print(f"Configs for {label(cmd.entity_type, name)} are {shown}")
            return
        name = cmd.entity_name or ""
        if cmd.entity_type == TOPICS and zk.run(read_json, zn.topic_path(name)) is None:
            raise CliError(f"Error: Topic '{name}' does not exist.")
        config = zn.config_from_json(zk.run(read_json, _path(cmd.entity_type, name)) or {})
        missing = [k for k in cmd.delete if k not in config]
        if missing:
            raise CliError(f"Error: Invalid config(s): {','.join(missing)}")
        for key in cmd.delete:
            config.pop(key, None)
        config.update(dict(cmd.add))
        if cmd.entity_type == TOPICS:
            try:
                config = validate_topic_configs(config)
            except ConfigError as exc:
                raise CliError(f"Error: {exc}") from None
            from odradek.cluster.admin import set_topic_config

            zk.run(set_topic_config, name, config)
        else:
            _check_broker_configs(config)
            from odradek.cluster.broker_configs import write_broker_config

            zk.run(write_broker_config, zn.DEFAULT_ENTITY if name == "" else name, config)
        print(f"Completed Updating config for entity: {label(cmd.entity_type, name)}.")
