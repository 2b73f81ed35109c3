"""Admission limits: connection counts per address and in total (with overrides), the shared request
memory and its waiters, the partition limits of topic administration, and the socket server keeping
requests read but not answered within queued.max.request.bytes while answering every one of them."""

from __future__ import annotations

import asyncio
import struct

import pytest

from odradek.cluster.partition_limits import PartitionLimits
from odradek.config import BrokerConfig, ConfigError
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.server.limits import ConnectionLimits, RequestMemory, normal_address
from odradek.server.network import Connection, SocketServer


def test_per_ip_limit_with_overrides() -> None:
    limits = ConnectionLimits(10, 2, {"10.0.0.9": 0, "127.0.0.1": 3})
    assert limits.admit("10.0.0.1") is None and limits.admit("10.0.0.1") is None
    assert "maximum of 2 connections" in (limits.admit("10.0.0.1") or "")
    assert "maximum of 0 connections" in (limits.admit("10.0.0.9") or "")
    assert [limits.admit("127.0.0.1") for _ in range(4)][-1] is not None
    limits.release("10.0.0.1")
    assert limits.admit("10.0.0.1") is None
    assert limits.total == 5


def test_total_limit_and_release() -> None:
    limits = ConnectionLimits(2, 100)
    assert limits.admit("a") is None and limits.admit("b") is None
    assert "max.connections" in (limits.admit("c") or "")
    limits.release("a")
    assert limits.admit("c") is None
    assert limits.by_ip == {"b": 1, "c": 1}


def test_listener_limits_and_the_inter_broker_listeners_exemption() -> None:
    made_way: list[str] = []
    limits = ConnectionLimits(2, 100, per_listener={"EXTERNAL": 1}, protected="INTERNAL")
    limits.make_way = made_way.append
    assert limits.admit("a", "EXTERNAL") is None
    refused = limits.admit("b", "EXTERNAL")
    assert refused is not None and refused.kind == "EXTERNAL max.connections"
    assert "listener.name.external.max.connections" in refused
    assert limits.admit("b", "CLIENTS") is None  # the broker is full now (2)
    refused = limits.admit("c", "CLIENTS")
    assert refused is not None and refused.kind == "max.connections"
    # Kafka's ConnectionQuotas: max.connections does not hold the inter-broker listener; each connection
    # it admits past the limit asks another listener to make way
    assert limits.admit("d", "INTERNAL") is None and limits.admit("e", "INTERNAL") is None
    assert made_way == ["INTERNAL", "INTERNAL"] and limits.total == 4
    assert limits.by_listener == {"EXTERNAL": 1, "CLIENTS": 1, "INTERNAL": 2}
    limits.release("a", "EXTERNAL")
    assert limits.by_listener == {"CLIENTS": 1, "INTERNAL": 2} and limits.total == 3


def test_the_connection_creation_rate() -> None:
    now = [0.0]
    limits = ConnectionLimits(100, 100, creation_rate=3, protected="INTERNAL", clock=lambda: now[0])
    assert [limits.admit("a", "CLIENTS") is None for _ in range(4)] == [True, True, True, False]
    refused = limits.admit("a", "CLIENTS")
    assert refused is not None and refused.kind == "max.connection.creation.rate"
    assert limits.admit("b", "INTERNAL") is None  # the inter-broker listener is exempt, as in Kafka
    now[0] = 0.34  # a third of a second: one more
    assert limits.admit("a", "CLIENTS") is None and limits.admit("a", "CLIENTS") is not None
    now[0] = 10.0  # the bucket holds one second's worth, no more
    assert [limits.admit("a", "CLIENTS") is None for _ in range(4)] == [True, True, True, False]
    assert limits.total == 8
    limits.reconfigure(100, 100, {}, creation_rate=2**31 - 1)
    now[0] = 11.0
    assert all(limits.admit("c", "CLIENTS") is None for _ in range(50))


def test_ipv4_mapped_addresses_count_as_ipv4() -> None:
    assert normal_address("::ffff:127.0.0.1") == "127.0.0.1"
    limits = ConnectionLimits(10, 10, {"127.0.0.1": 1})
    assert limits.admit("127.0.0.1") is None
    assert limits.admit("::ffff:127.0.0.1") is not None


def test_override_host_names_are_resolved() -> None:
    limits = ConnectionLimits(10, 10, {"localhost": 1})
    assert limits.per_ip.get("127.0.0.1") == 1


def test_unresolvable_override_is_ignored() -> None:
    limits = ConnectionLimits(10, 10, {"no-such-host.invalid": 1})
    assert limits.per_ip == {}


def test_overrides_config_parsing() -> None:
    cfg = BrokerConfig.from_props({"max.connections.per.ip.overrides": "10.0.0.1:5, ::1:7,host.example:0"})
    assert cfg.max_connections_per_ip_overrides == {"10.0.0.1": 5, "::1": 7, "host.example": 0}
    with pytest.raises(ConfigError, match="host:count"):
        BrokerConfig.from_props({"max.connections.per.ip.overrides": "10.0.0.1"})
    with pytest.raises(ConfigError, match="set to zero only if"):
        BrokerConfig.from_props({"max.connections.per.ip": "0"})
    BrokerConfig.from_props({"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "a:1"})


def test_request_memory_wakes_waiters_in_order_while_there_is_room() -> None:
    memory = RequestMemory(100)
    woken: list[str] = []
    memory.adjust(150)  # one request may overshoot
    assert not memory.has_room()

    def waiter(name: str, need: int) -> None:
        woken.append(name)
        memory.adjust(need)

    memory.wait(lambda: waiter("a", 60))
    memory.wait(lambda: waiter("b", 10))
    memory.wait(lambda: waiter("c", 10))
    memory.adjust(-100)  # 50 used: a (now 110), then no room for b
    assert woken == ["a"]
    memory.adjust(-60)
    assert woken == ["a", "b", "c"] and memory.used == 70


def test_request_memory_says_when_it_drains_after_holding_a_lot() -> None:
    drained: list[int] = []
    memory = RequestMemory(-1, on_drained=lambda: drained.append(memory.used))
    memory.adjust(1 << 20)
    memory.adjust(-(1 << 20))
    assert drained == []  # little held: nothing to give back
    memory.adjust(RequestMemory.DRAINED_BYTES)
    memory.adjust(10)
    memory.adjust(-RequestMemory.DRAINED_BYTES)
    assert drained == []  # not empty yet
    memory.adjust(-10)
    assert drained == [0]


def test_unlimited_memory() -> None:
    memory = RequestMemory(-1)
    memory.adjust(10**12)
    assert memory.has_room()


LIMITS = PartitionLimits(max_partitions=100, max_broker_partitions=60)


@pytest.mark.parametrize(("partitions", "rf", "live", "code"), [
    (0, 1, 1, ErrorCode.INVALID_PARTITIONS),
    (-5, 1, 1, ErrorCode.INVALID_PARTITIONS),
    (1_000_000, 1, 3, ErrorCode.INVALID_PARTITIONS),
    (61, 1, 1, ErrorCode.INVALID_PARTITIONS),  # more than one broker may ever host
    (100, 2, 3, ErrorCode.INVALID_PARTITIONS),  # 200 replicas > 3 * 60
    (10, 4, 3, ErrorCode.INVALID_REPLICATION_FACTOR),
    (10, 0, 3, ErrorCode.INVALID_REPLICATION_FACTOR),
])
def test_impossible_sizes(partitions: int, rf: int, live: int, code: ErrorCode) -> None:
    with pytest.raises(KafkaError) as err:
        LIMITS.check_size(partitions, rf, live)
    assert err.value.code == code


def test_possible_sizes() -> None:
    LIMITS.check_size(100, 1, 2)
    LIMITS.check_size(90, 2, 3)
    LIMITS.check_size(100, None, 1)  # explicit assignment: replicas are counted by check_room


def test_room_in_the_cluster() -> None:
    existing = [{p: [0] for p in range(50)}, {p: [1] for p in range(40)}]
    LIMITS.check_room(existing, [0, 1], 10, 1)
    with pytest.raises(KafkaError) as err:
        LIMITS.check_room(existing, [0, 1], 11, 1)
    assert err.value.code == ErrorCode.POLICY_VIOLATION and "max.partitions" in err.value.message


def test_room_on_a_broker() -> None:
    existing = [{p: [0] for p in range(55)}]
    LIMITS.check_room(existing, [0, 1], 10, 1)  # 5 each
    with pytest.raises(KafkaError, match="broker 0 would exceed max.broker.partitions"):
        LIMITS.check_room(existing, [0, 1], 12, 1)  # 6 each
    LIMITS.check_room(existing, [0, 1], 12, 1, {p: [1] for p in range(12)})  # all on broker 1: fits


# ---- the socket server under queued.max.request.bytes ------------------------------------------------

FRAME_BODY = 64 * 1024


async def _serve_and_flood(capacity: int, clients: int, per_client: int) -> tuple[int, int, int]:
    """Clients pipeline requests of FRAME_BODY bytes at a slow dispatcher; returns (answers received,
    the most memory ever in use, the largest frame)."""
    peak = 0

    async def slow_echo(conn: Connection, frame: memoryview) -> list[bytes]:
        nonlocal peak
        peak = max(peak, server.memory.used)
        await asyncio.sleep(0.002)
        return [struct.pack(">i", 4), bytes(frame[:4])]

    server = SocketServer(slow_echo, 1 << 20, ConnectionLimits(100, 100), RequestMemory(capacity))
    port = await server.listen("127.0.0.1", 0)
    await server.start_serving()

    async def client(n: int) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        frame = struct.pack(">i", FRAME_BODY) + struct.pack(">i", n) + b"x" * (FRAME_BODY - 4)
        writer.write(frame * per_client)
        got = 0
        for _ in range(per_client):
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            assert struct.unpack(">i", await reader.readexactly(size))[0] == n
            got += 1
        writer.close()
        return got

    answers = sum(await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(clients))), 60))
    await server.close()
    assert server.memory.used == 0 or not server.connections
    return answers, peak, FRAME_BODY + 4


def test_bounded_request_memory_answers_everything() -> None:
    capacity = 256 * 1024
    answers, peak, frame = asyncio.run(_serve_and_flood(capacity, clients=8, per_client=40))
    assert answers == 8 * 40  # nothing dropped
    # Past the capacity by at most the frames already being read and the data of one read per client.
    assert peak <= capacity + 8 * (frame + 256 * 1024)


def test_unbounded_request_memory_grows_with_the_backlog() -> None:
    """The same flood without a bound holds far more: the bound above is what keeps it small."""
    answers, peak, _frame = asyncio.run(_serve_and_flood(-1, clients=8, per_client=40))
    assert answers == 8 * 40
    assert peak > 4 * 1024 * 1024


def test_connection_over_the_limit_is_closed_at_once() -> None:
    async def main() -> None:
        async def echo(conn: Connection, frame: memoryview) -> list[bytes]:
            return [struct.pack(">i", len(frame)), bytes(frame)]

        server = SocketServer(echo, 1 << 20, ConnectionLimits(100, 2))
        port = await server.listen("127.0.0.1", 0)
        await server.start_serving()
        kept = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        reader, _writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the broker
        for r, w in kept:  # the established ones still answer
            w.write(struct.pack(">i", 3) + b"abc")
            assert await asyncio.wait_for(r.readexactly(7), 5) == struct.pack(">i", 3) + b"abc"
        kept[0][1].close()
        await asyncio.sleep(0.1)
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(struct.pack(">i", 1) + b"z")
        assert await asyncio.wait_for(r.readexactly(5), 5) == struct.pack(">i", 1) + b"z"
        await server.close()

    asyncio.run(main())
