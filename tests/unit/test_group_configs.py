"""Group configs below the network: the catalogue's group keys and their defaults, Kafka's validation in
its words (names, types and ranges, the broker's bounds, session timeouts above heartbeat intervals),
share.auto.offset.reset's ISO-8601 durations, and the store: Kafka's layout under /config/groups, the
change notifications another broker's copy follows, the typed look-up, and a reopened store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from odradek.cluster import znodes as zn
from odradek.cluster.embedded import STORE_FILE, EmbeddedStore
from odradek.cluster.group_configs import (
    GroupConfigs,
    group_config_path,
    group_entity,
    parse_group_configs,
    write_group_config,
)
from odradek.config import BrokerConfig
from odradek.config_keys import BROKER_KEYS, GROUP_CONFIGS, ConfigError, ShareAutoOffsetReset


def cfg(**props: str) -> BrokerConfig:
    return BrokerConfig.from_props({k.replace("__", "."): v for k, v in props.items()})


def test_every_group_key_inherits_a_catalogued_broker_key_of_its_type_and_default() -> None:
    for name, key in GROUP_CONFIGS.items():
        if key.server_default is None:
            assert name in ("share.auto.offset.reset", "share.isolation.level")
            continue
        server = BROKER_KEYS[key.server_default]
        assert (server.type, server.default) == (key.type, key.default), name
    assert "Group-level config." in GROUP_CONFIGS["consumer.session.timeout.ms"].documentation("group")


@pytest.mark.parametrize(("overrides", "message"), [
    ({"no.such.key": "1"}, "Unknown group config name: no.such.key"),
    ({"consumer.session.timeout.ms": "x"},
     "Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ({"share.record.lock.duration.ms": "999"},
     "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    ({"consumer.heartbeat.interval.ms": "4000"},
     "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
    ({"consumer.heartbeat.interval.ms": "16000"},
     "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
    ({"share.session.timeout.ms": "60001"},
     "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"),
    ({"streams.session.timeout.ms": "44999"},
     "streams.session.timeout.ms must be greater than or equal to group.streams.min.session.timeout.ms"),
    ({"streams.num.standby.replicas": "3"},
     "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
    ({"share.isolation.level": "READ_COMMITTED"},
     "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of:"
     " read_committed, read_uncommitted"),
])
def test_refusals_are_kafkas(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_group_configs(cfg(), overrides)
    assert str(info.value) == message


def test_session_timeout_must_exceed_the_heartbeat_interval_with_the_broker_values_in_force() -> None:
    broker = cfg(group__consumer__min__session__timeout__ms="1000", group__consumer__session__timeout__ms="6000")
    assert parse_group_configs(broker, {"consumer.session.timeout.ms": "5001"}) == {"consumer.session.timeout.ms": 5001}
    with pytest.raises(ConfigError, match="^consumer.session.timeout.ms must be greater than "
                                          "consumer.heartbeat.interval.ms$"):
        parse_group_configs(broker, {"consumer.session.timeout.ms": "5000"})
    # the broker's own values in the check: a heartbeat interval above the broker's session timeout
    broker = cfg(group__consumer__min__session__timeout__ms="1000", group__consumer__session__timeout__ms="5500",
                 group__consumer__max__heartbeat__interval__ms="9000")
    with pytest.raises(ConfigError, match="must be greater than consumer.heartbeat.interval.ms"):
        parse_group_configs(broker, {"consumer.heartbeat.interval.ms": "6000"})


def test_an_inherited_value_outside_the_brokers_bounds_is_clamped_as_the_coordinators_clamp_it() -> None:
    broker = cfg(group__consumer__session__timeout__ms="100000", group__share__record__lock__duration__ms="20000",
                 group__share__min__record__lock__duration__ms="25000")
    checked = parse_group_configs(broker, {"share.isolation.level": "read_committed"})  # the others pass
    assert checked == {"share.isolation.level": "read_committed"}
    configs = GroupConfigs(EmbeddedStore(Path("/nonexistent") / STORE_FILE), broker)
    assert configs.value("g", "consumer.session.timeout.ms") == 60000  # group.consumer.max.session.timeout.ms
    assert configs.value("g", "share.record.lock.duration.ms") == 25000


@pytest.mark.parametrize(("value", "ok"), [
    ("latest", True), ("earliest", True), ("EARLIEST", True), ("by_duration:PT1H", True),
    ("by_duration:P1DT2H3M4.5S", True), ("by_duration:pt0s", True), ("by_duration:PT-1H", False),
    ("by_duration:-PT1H", False), ("by_duration:P", False), ("by_duration:PT", False), ("by_duration:", False),
    ("by_duration:1H", False), ("none", False), ("", False), ("latest:x", False), ("by_duration:PT1H:x", False),
])
def test_share_auto_offset_reset_takes_kafkas_strategies(value: str, ok: bool) -> None:
    assert (ShareAutoOffsetReset().check(value) is None) is ok


def test_group_ids_are_sanitized_as_kafka_sanitizes_entity_names() -> None:
    assert group_entity("app.group-1_x") == "app.group-1_x"
    assert group_entity("a/b c*") == "a%2Fb%20c%2A"
    assert group_entity(".") == "%2E" and group_entity("..") == "%2E%2E"
    assert group_config_path("a/b") == "/config/groups/a%2Fb"


def _settle() -> asyncio.Future[None]:
    async def go() -> None:
        for _ in range(50):
            await asyncio.sleep(0)
    return asyncio.ensure_future(go())


def test_store_round_trip_and_another_brokers_copy_follows(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = EmbeddedStore(tmp_path / STORE_FILE)
        await store.start()
        broker = cfg(group__share__record__lock__duration__ms="20000")
        mine, theirs = GroupConfigs(store, broker), GroupConfigs(store, broker)
        await mine.start()
        await theirs.start()
        assert mine.value("g/1", "consumer.session.timeout.ms") == 45000
        assert mine.value("g/1", "share.record.lock.duration.ms") == 20000  # the broker's value
        assert mine.value("g/1", "share.isolation.level") == "read_uncommitted"
        checked = mine.check("g/1", {"consumer.session.timeout.ms": "50000", "share.isolation.level": "read_committed"})
        assert checked == {"consumer.session.timeout.ms": 50000, "share.isolation.level": "read_committed"}
        await mine.write("g/1", {"consumer.session.timeout.ms": "50000", "share.isolation.level": "read_committed"})
        assert mine.value("g/1", "consumer.session.timeout.ms") == 50000  # at once, on the writer
        await _settle()
        assert theirs.value("g/1", "consumer.session.timeout.ms") == 50000
        assert theirs.value("g/1", "share.isolation.level") == "read_committed"
        assert theirs.groups() == ["g/1"] and theirs.overrides("g/1")["consumer.session.timeout.ms"] == "50000"
        data, _ = await store.get("/config/groups/g%2F1")
        assert json.loads(data) == {"version": 1, "config": {"consumer.session.timeout.ms": "50000",
                                                             "share.isolation.level": "read_committed"}}
        notices = [json.loads((await store.get(f"{zn.CONFIG_CHANGES}/{c}"))[0])
                   for c in await store.get_children(zn.CONFIG_CHANGES)]
        assert notices[-1] == {"version": 2, "entity_path": "groups/g%2F1"}
        # other entities' notifications are not groups'; a malformed override is ignored
        await write_group_config(store, "g2", {"consumer.session.timeout.ms": "soon"})
        await _settle()
        assert theirs.value("g2", "consumer.session.timeout.ms") == 45000
        # the last override deleted: the znode goes, every copy follows
        await mine.write("g/1", {})
        assert await store.exists("/config/groups/g%2F1") is None
        await _settle()
        assert theirs.value("g/1", "consumer.session.timeout.ms") == 45000 and "g/1" not in theirs.groups()
        await mine.write("g3", {"streams.num.standby.replicas": "1"})
        assert await mine.delete("g3") and not await mine.delete("g3")
        await _settle()
        assert theirs.value("g3", "streams.num.standby.replicas") == 0
        await mine.write("g4", {"share.auto.offset.reset": "earliest"})
        mine.close()
        theirs.close()
        await store.close()
        reopened = EmbeddedStore(tmp_path / STORE_FILE)
        await reopened.start()
        again = GroupConfigs(reopened, broker)
        await again.start()
        assert again.value("g4", "share.auto.offset.reset") == "earliest"
        again.close()
        await reopened.close()

    asyncio.run(scenario())
