"""Connection limits changed on a running broker (issue #36, left over from observation 6): as in Kafka,
IncrementalAlterConfigs of `listener.name.<listener>.max.connections`, `max.connections.per.ip` and
`max.connections.per.ip.overrides` apply to the connections accepted from then on (open ones are kept).
A per-listener limit was refused as "Cannot update these configs dynamically". One broker with two
listeners, PLAINTEXT (inter-broker) and EXTRA."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.metadata import MetadataRequest

from odradek.protocol.transport import BlockingConnection
from odradek.server.dispatcher import APIS
from tests.harness import BrokerPool, BrokerProcess, free_port
from tests.sockets import answers as _answers
from tests.sockets import closed_by_peer as _closed_by_peer
from tests.sockets import connect_from as _connect
from tests.sockets import kept as _kept

Alter = APIS[44].request  # IncrementalAlterConfigs
Describe = APIS[32].request  # DescribeConfigs
DYNAMIC_DEFAULT_BROKER_CONFIG = 3  # ConfigSource


@pytest.fixture(scope="module")
def broker(module_brokers: BrokerPool) -> Iterator[tuple[BrokerProcess, int]]:
    plain, extra = free_port(), free_port()
    b = module_brokers.start({"listeners": f"PLAINTEXT://127.0.0.1:{plain},EXTRA://127.0.0.1:{extra}",
                              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
                              "inter.broker.listener.name": "PLAINTEXT"}, name="dynamic-limits", port=plain)
    yield b, extra


def alter(port: int, **configs: str) -> None:
    """Set `configs` (dots written as underscores) on the cluster-level dynamic default."""
    with BlockingConnection("127.0.0.1", port, "alter", 10) as conn:
        r = conn.request(Alter(validate_only=False, resources=[Alter.AlterConfigsResource(
            resource_type=4, resource_name="", configs=[
                Alter.AlterConfigsResource.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v)
                for k, v in configs.items()])]), 0)
        assert [(x.error_code, x.error_message) for x in r.responses] == [(0, None)], r


def _refused(port: int, source: str) -> bool:
    sock = _connect(port, source)
    try:
        return _closed_by_peer(sock)
    finally:
        sock.close()


def _close(socks: list[Any]) -> None:
    for s in socks:
        s.close()


def test_a_listener_limit_changes_on_the_running_broker(broker: tuple[BrokerProcess, int]) -> None:
    b, extra = broker
    alter(b.port, listener_name_extra_max_connections="2")
    kept = _kept(lambda: _connect(extra, "127.0.0.7"), _answers, 2, "two EXTRA connections")
    try:
        assert _refused(extra, "127.0.0.7")
        assert "listener EXTRA already has the configured maximum of 2 connections" in b.output()
        other = _connect(b.port, "127.0.0.7")  # the PLAINTEXT listener is not capped
        assert _answers(other)
        other.close()
        alter(b.port, listener_name_extra_max_connections="3")
        kept += [_connect(extra, "127.0.0.7")]
        assert all(_answers(s) for s in kept)
    finally:
        _close(kept)
    with BlockingConnection("127.0.0.1", b.port, "describe", 10) as conn:
        node = conn.request(MetadataRequest(topics=[]), 1).brokers[0].node_id
        r = conn.request(Describe(resources=[Describe.DescribeConfigsResource(resource_type=4, resource_name=str(node),
                                                                 configuration_keys=None)],
                                  include_synonyms=True), 1)
        rows = {c.name: c for c in r.results[0].configs}
        row = rows["listener.name.extra.max.connections"]
        assert (row.value, row.config_source) == ("3", DYNAMIC_DEFAULT_BROKER_CONFIG)


def test_per_ip_limits_change_on_the_running_broker(broker: tuple[BrokerProcess, int]) -> None:
    b, _ = broker
    alter(b.port, max_connections_per_ip="3", max_connections_per_ip_overrides="127.0.0.1:1000,127.0.0.8:1")
    eight = _kept(lambda: _connect(b.port, "127.0.0.8"), _answers, 1, "one connection from 127.0.0.8")
    nine = _kept(lambda: _connect(b.port, "127.0.0.9"), _answers, 3, "three connections from 127.0.0.9")
    try:
        assert _refused(b.port, "127.0.0.8") and _refused(b.port, "127.0.0.9")
        alter(b.port, max_connections_per_ip="4", max_connections_per_ip_overrides="127.0.0.1:1000,127.0.0.8:2")
        eight.append(_connect(b.port, "127.0.0.8"))
        nine.append(_connect(b.port, "127.0.0.9"))
        assert all(_answers(s) for s in eight + nine)
    finally:
        _close(eight + nine)
    with BlockingConnection("127.0.0.1", b.port, "probe", 10) as conn:  # the broker serves on
        assert conn.request(MetadataRequest(topics=[]), 1).brokers
