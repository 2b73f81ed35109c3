"""Client quotas as pure logic: Kafka's precedence of quota entities, the sampled rate and throttle time,
the KIP-546 filters and validation, and the configs tool's flags and output for users and clients."""

from __future__ import annotations

import pytest

from odradek.admin_client.errors import UsageError
from odradek.cli.configs import java_double, parse_command, quota_entity_text
from odradek.cluster.quotas import DEFAULT, entity_path, resolve
from odradek.server.handlers.client_quotas import (
    InvalidRequest,
    check_components,
    matches,
    parse_entity,
    parse_ops,
)
from odradek.server.quotas import QuotaManager, SampledRate, throttle_ms, user_of

D = DEFAULT
LEVELS = [((("alice", "c1")), 1.0), (("alice", D), 2.0), (("alice", None), 3.0), ((D, "c1"), 4.0), ((D, D), 5.0),
          ((D, None), 6.0), ((None, "c1"), 7.0), ((None, D), 8.0)]


@pytest.mark.parametrize("drop", range(len(LEVELS)))
def test_precedence_follows_kafka(drop: int) -> None:
    # with every level above `drop` removed, the quota of level `drop` applies
    quotas = {entity: {"producer_byte_rate": bound} for entity, bound in LEVELS[drop:]}
    found = resolve(quotas, "producer_byte_rate", "alice", "c1")
    assert found is not None and found.bound == LEVELS[drop][1]


def test_metric_entity_is_the_level_matched() -> None:
    found = resolve({("alice", None): {"consumer_byte_rate": 10.0}}, "consumer_byte_rate", "alice", "any")
    assert found is not None and found.metric == ("alice", "")
    found = resolve({(None, D): {"consumer_byte_rate": 10.0}}, "consumer_byte_rate", "bob", "c9")
    assert found is not None and found.metric == ("", "c9")
    found = resolve({(D, D): {"consumer_byte_rate": 10.0}}, "consumer_byte_rate", "bob", "c9")
    assert found is not None and found.metric == ("bob", "c9")
    assert resolve({("alice", None): {"consumer_byte_rate": 10.0}}, "producer_byte_rate", "alice", "c") is None
    assert resolve({("alice", None): {"consumer_byte_rate": 10.0}}, "consumer_byte_rate", "bob", "c") is None


def test_entity_paths_are_kafkas() -> None:
    assert entity_path(("alice", "c1")) == "users/alice/clients/c1"
    assert entity_path((D, None)) == "users/<default>"
    assert entity_path((None, "a/b")) == "clients/a%2Fb"
    assert entity_path(("CN=x,O=y", D)) == "users/CN%3Dx%2CO%3Dy/clients/<default>"


def test_rate_and_throttle_time() -> None:
    rate = SampledRate(num=11, window_ms=1000)
    rate.record(1000, now_ms=0)
    # a young rate is measured over at least num-1 windows: 1000 bytes / 10 s
    assert rate.rate(0) == pytest.approx(100)
    assert throttle_ms(rate, 100, 0) == 0
    rate.record(1000, now_ms=500)
    # 2000 bytes over 10.5 s: (190.48 - 100) / 100 * 10 500 ms
    assert rate.rate(500) == pytest.approx(2000 / 10.5)
    assert throttle_ms(rate, 100, 500) == 9500
    # samples older than num windows no longer count
    assert rate.rate(20_000) == 0


def test_manager_records_only_what_a_quota_bounds() -> None:
    m = QuotaManager(window_num=2, window_seconds=1)
    assert not m.enabled
    assert m.produce("User:alice", "c1", 10**9) == 0
    m.update({(None, "c1"): {"producer_byte_rate": 1000.0}})
    assert m.enabled
    assert m.record("producer_byte_rate", "User:alice", "other", 10**6, now_ms=0) == 0
    assert m.record("consumer_byte_rate", "User:alice", "c1", 10**6, now_ms=0) == 0
    # 3000 bytes over one window of 1 s (num - 1): (3000 - 1000) / 1000 * 1000 ms
    assert m.record("producer_byte_rate", "User:alice", "c1", 3000, now_ms=0) == 2000
    assert m.throttle_totals[("producer_byte_rate", "", "c1")] == (1, 2000)
    m.update({})
    assert not m.enabled and m.record("producer_byte_rate", "User:alice", "c1", 10**6) == 0
    assert user_of("User:CN=a,O=b") == "CN=a,O=b"


def test_describe_filters() -> None:
    assert matches(("alice", None), [("user", 0, "alice")], strict=True)
    assert not matches(("alice", "c1"), [("user", 0, "alice")], strict=True)
    assert matches(("alice", "c1"), [("user", 0, "alice")], strict=False)
    assert matches((D, None), [("user", 1, None)], strict=True)
    assert not matches((D, None), [("user", 2, None)], strict=True)
    assert matches((None, "c"), [("client-id", 2, None)], strict=True)
    assert matches(("alice", None), [], strict=False) and not matches(("alice", None), [], strict=True)
    with pytest.raises(InvalidRequest):
        check_components([("user", 0, "a"), ("user", 0, "b")])
    with pytest.raises(InvalidRequest):
        check_components([("group", 0, "a")])


def test_alter_validation() -> None:
    assert parse_entity([("user", None), ("client-id", "c")]) == (D, "c")
    for bad in ([], [("user", "a"), ("user", "b")], [("topic", "t")], [("user", "")], [("ip", "1.2.3.4")]):
        with pytest.raises(InvalidRequest):
            parse_entity(bad)
    assert parse_ops([("producer_byte_rate", 1024.0, False), ("request_percentage", 0.0, True)]) == {
        "producer_byte_rate": 1024.0, "request_percentage": None}
    for ops in ([("foo", 1.0, False)], [("producer_byte_rate", 1.5, False)], [("consumer_byte_rate", -1.0, False)],
                [("request_percentage", 1.0, False), ("request_percentage", 2.0, False)]):
        with pytest.raises(InvalidRequest):
            parse_ops(ops)


def test_configs_tool_quota_flags_and_output() -> None:
    base = ["--bootstrap-server", "h:1", "--alter"]
    cmd = parse_command([*base, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                         "--entity-name", "c1", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"])
    assert cmd.quota_entity == (("users", "alice"), ("clients", "c1"))
    assert cmd.add == (("producer_byte_rate", "1024"), ("consumer_byte_rate", "2048"))
    cmd = parse_command([*base, "--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=50"])
    assert cmd.quota_entity == (("clients", ""),)
    with pytest.raises(UsageError, match="Invalid config"):
        parse_command([*base, "--entity-type", "clients", "--entity-name", "c", "--add-config", "retention.ms=1"])
    with pytest.raises(UsageError, match="only for named users"):
        parse_command([*base, "--entity-type", "users", "--entity-default", "--add-config", "SCRAM-SHA-256=[password=x]"])
    with pytest.raises(UsageError, match="Only 'users' and 'clients'"):
        parse_command([*base, "--entity-type", "topics", "--entity-name", "t", "--entity-type", "clients"])
    assert java_double(1024) == "1024.0" and java_double(0.5) == "0.5" and java_double(1e7) == "1.0E7"
    assert java_double(12345678.0) == "1.2345678E7"
    assert quota_entity_text({"user": "alice", "client-id": None}) == "user-principal 'alice', the default client-id"


def test_fetch_is_capped_at_one_window_and_a_throttled_fetch_unrecorded() -> None:
    m = QuotaManager(window_num=2, window_seconds=1)
    assert m.fetch_window_bytes("User:a", "c") is None
    m.update({(None, D): {"consumer_byte_rate": 1000.0}})
    assert m.fetch_window_bytes("User:a", "c") == 1000
    assert m.fetch("User:a", "c", 3000) > 0
    m.unrecord_fetch("User:a", "c", 3000)
    # the bytes taken back, the client is within its quota again
    assert m.fetch("User:a", "c", 500) == 0


def test_idle_entities_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    import odradek.server.quotas as sq

    monkeypatch.setattr(sq, "MAX_IDLE_CHECK", 3)
    m = QuotaManager(window_num=2, window_seconds=1)
    m.update({(None, D): {"producer_byte_rate": 1e9}})
    for i in range(3):
        m.record("producer_byte_rate", "User:a", f"c{i}", 1, now_ms=0)
    m.record("producer_byte_rate", "User:a", "late", 1, now_ms=5000)
    assert set(m._rates) == {("producer_byte_rate", "", "late")}


def test_controller_mutations_use_kafkas_token_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    import odradek.server.quotas as sq

    clock = [0.0]
    monkeypatch.setattr(sq.time, "monotonic", lambda: clock[0])
    m = QuotaManager(11, 1, controller_window_num=2, controller_window_seconds=1)
    m.update({(None, "admin"): {"controller_mutation_rate": 5.0}})
    # a burst of 5 x 2 x 1 = 10 partitions; the mutation that crosses it is allowed, then refused
    assert not m.mutation_exceeded("User:x", "admin")
    m.record_mutation("User:x", "admin", 15)
    assert m.mutation_exceeded("User:x", "admin")
    assert m.mutation_throttle_ms("User:x", "admin") == 1000  # 5 tokens below zero at 5 per second
    clock[0] = 1.0
    assert not m.mutation_exceeded("User:x", "admin") and m.mutation_throttle_ms("User:x", "admin") == 0
    assert not m.mutation_exceeded("User:x", "other")
