"""Zero-copy Fetch (records sent from the segment files with sendfile) against real brokers: confluent-kafka,
kafka-python and kcat read exactly what was produced across segment rolls; a segment deleted by retention
while a fetch of it is still being sent arrives whole; TLS listeners fall back to copying; replica
followers fetch through the same path and end byte-identical; ODRADEK_ZERO_COPY=0 turns it off. The
broker's odradek_network_fetch_regions counter shows which path served."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from kafka.protocol.consumer import FetchRequest
from prometheus_client.parser import text_string_to_metric_families

from odradek.protocol.client import ClientCodec
from odradek.protocol.records import decode_records, iter_batches
from tests.clients import admin, consume_all, consume_to_end, create_topic, kcat, produce, unique_name
from tests.harness import BrokerCluster, BrokerPool, BrokerProcess, free_port
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot


def regions(http_port: int) -> dict[str, float]:
    """path -> Fetch record regions the broker sent that way ("sendfile" or "copy")."""
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {s.labels["path"]: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == "odradek_network_fetch_regions_total"}


def _http(broker: BrokerProcess) -> int:
    return int(broker.overrides["http.listener"].rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {"http.listener": f"127.0.0.1:{free_port()}"}


# batches well below the topics' 40,000-byte segments, so that many batches fill each segment
SMALL_BATCHES = {"batch.size": 8000, "acks": "all"}


def _values(n: int) -> list[bytes]:
    # printable (kcat prints them one per line), of varied sizes so batches and segments differ
    return [(f"{i:06d}-" + "abcdefghij"[i % 10] * (i % 700)).encode() for i in range(n)]


def test_clients_read_exactly_what_was_produced_across_segment_rolls(broker: BrokerProcess) -> None:
    topic = unique_name("zc")
    create_topic(broker.bootstrap, topic, config={"segment.bytes": "40000"})
    values = _values(3000)
    produce(broker.bootstrap, topic, values[:1500], partition=0, **SMALL_BATCHES)
    produce(broker.bootstrap, topic, values[1500:], partition=0, **SMALL_BATCHES, **{"compression.type": "lz4"})
    segments = sorted((broker.log_dir / f"{topic}-0").glob("*.log"))
    assert len(segments) > 10
    before = regions(_http(broker))

    got = consume_all(broker.bootstrap, topic, 3000)
    assert [m.value() for m in got] == values and [m.offset() for m in got] == list(range(3000))
    # a small fetch size: many fetches, each ending inside a segment or at its end
    got = consume_all(broker.bootstrap, topic, 3000, **{"fetch.max.bytes": 5000, "message.max.bytes": 5000, "max.partition.fetch.bytes": 3000})
    assert [m.value() for m in got] == values

    from kafka import KafkaConsumer

    cons = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                         consumer_timeout_ms=5000, enable_auto_commit=False, group_id=None)
    try:
        assert [(m.offset, m.value) for m in cons] == list(enumerate(values))
    finally:
        cons.close()

    out = kcat("-b", broker.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [b"%d %s" % (i, v) for i, v in enumerate(values)]

    after = regions(_http(broker))
    assert after["sendfile"] > before["sendfile"] + len(segments)  # every client, every segment
    assert after["copy"] == before["copy"] == 0


def _raw_fetch(port: int, topic: str, max_bytes: int) -> tuple[socket.socket, ClientCodec]:
    """A Fetch of partition 0 from offset 0 sent on a socket with a tiny receive buffer (set before the
    connect, so the advertised window stays small): the broker cannot send much of the response until
    the test reads it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    codec = ClientCodec("zero-copy-test")
    req = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes, isolation_level=0, session_id=0,
        session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                   last_fetched_epoch=-1, log_start_offset=-1,
                                                   partition_max_bytes=max_bytes)])])
    sock.sendall(codec.send(req, 12))
    return sock, codec


def test_retention_deletes_a_segment_while_its_fetch_is_being_sent(broker: BrokerProcess) -> None:
    topic = unique_name("zc-ret")
    segment_bytes = 12 << 20  # far more than the socket buffers hold: the send stalls inside this segment
    create_topic(broker.bootstrap, topic, config={"segment.bytes": str(segment_bytes)})
    values = [b"%06d" % i + bytes([65 + i % 26]) * 100_000 for i in range(160)]
    produce(broker.bootstrap, topic, values, partition=0, acks="all", **{"batch.size": 1_000_000})
    part_dir = broker.log_dir / f"{topic}-0"
    first = part_dir / f"{0:020d}.log"
    assert len(list(part_dir.glob("*.log"))) >= 2
    on_disk = first.read_bytes()
    before = regions(_http(broker))

    sock, codec = _raw_fetch(broker.port, topic, 64 << 20)
    try:
        received = [sock.recv(65536)]  # the response has started: its region is taken and being sent
        assert received[0]
        # retention removes the first segment (rename to .deleted, then unlink) under the stalled send
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
        admin(broker.bootstrap).incremental_alter_configs([res])[res].result(10)
        wait_until(lambda: not any(p.name.startswith(f"{0:020d}.log") for p in part_dir.iterdir()), 30,
                   "retention to delete the first segment")
        responses = codec.feed(received[0])
        while not responses:
            data = sock.recv(1 << 20)
            responses = codec.feed(data)
    finally:
        sock.close()
    (response,) = responses
    (part,) = response.message.responses[0].partitions
    assert part.error_code == 0
    assert bytes(part.records) == on_disk  # the whole deleted segment, byte for byte
    records = [r for off, h in iter_batches(part.records) for r in decode_records(part.records[off:off + h.size])]
    assert [r.value for r in records] == values[: len(records)] and len(records) > 100
    assert regions(_http(broker))["sendfile"] > before["sendfile"]
    assert broker.alive()
    # the log moved on: a consumer now starts from the new log start and reads the rest
    rest = consume_to_end(broker.bootstrap, topic, 1)
    assert [m.value() for m in rest] == values[rest[0].offset():]


def test_the_switch_turns_zero_copy_off(brokers: BrokerPool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ODRADEK_ZERO_COPY", "0")
    http = free_port()
    b = brokers.start({"http.listener": f"127.0.0.1:{http}"})
    topic = unique_name("zc-off")
    create_topic(b.bootstrap, topic, config={"segment.bytes": "40000"})
    values = _values(1000)
    produce(b.bootstrap, topic, values, partition=0, **SMALL_BATCHES)
    got = consume_all(b.bootstrap, topic, 1000)
    assert [m.value() for m in got] == values
    assert regions(http) == {"sendfile": 0, "copy": 0}  # the read path: bytes, no regions at all


def test_tls_listeners_copy_and_plaintext_ones_sendfile(brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> None:
    ca, broker_pem = pem_pki
    port, tls_port, http = free_port(), free_port(), free_port()
    b = brokers.start({"listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{tls_port}",
                       "ssl.keystore.type": "PEM", "ssl.keystore.location": str(broker_pem),
                       "http.listener": f"127.0.0.1:{http}"}, port=port)
    topic = unique_name("zc-tls")
    create_topic(b.bootstrap, topic, config={"segment.bytes": "40000"})
    values = _values(1500)
    produce(b.bootstrap, topic, values, partition=0, **SMALL_BATCHES)
    tls = {"bootstrap.servers": f"127.0.0.1:{tls_port}", "security.protocol": "SSL",
           "ssl.ca.location": str(ca)}
    try:
        got = consume_all(tls["bootstrap.servers"], topic, 1500, **{k: v for k, v in tls.items()
                                                                     if k != "bootstrap.servers"})
    except KafkaException as exc:  # pragma: no cover - reported with the broker's output
        raise AssertionError(b.output()[-3000:]) from exc
    assert [m.value() for m in got] == values
    over_tls = regions(http)
    assert over_tls["copy"] > 0 and over_tls["sendfile"] == 0  # TLS encrypts in user space: no sendfile
    got = consume_all(b.bootstrap, topic, 1500)
    assert [m.value() for m in got] == values
    plain = regions(http)
    assert plain["sendfile"] > 0 and plain["copy"] == over_tls["copy"]


def _segment_bytes(broker: BrokerProcess, topic: str) -> list[bytes]:
    return [f.read_bytes() for f in sorted((broker.log_dir / f"{topic}-0").glob("*.log"))]


def test_followers_fetch_by_sendfile_and_end_byte_identical(zk_standalone: ZooKeeperChroot,
                                                            brokers: BrokerPool) -> None:
    ports = [free_port() for _ in range(3)]
    cluster: BrokerCluster = brokers.start_cluster(
        zk_standalone.connect_string, 3, per_broker=[{"http.listener": f"127.0.0.1:{p}"} for p in ports])
    topic = unique_name("zc-repl")
    create_topic(cluster.bootstrap, topic, rf=3, config={"segment.bytes": "40000", "min.insync.replicas": "3"})
    values = _values(2000)
    produce(cluster.bootstrap, topic, values[:1000], partition=0, **SMALL_BATCHES)
    produce(cluster.bootstrap, topic, values[1000:], partition=0, **SMALL_BATCHES, **{"compression.type": "zstd"})
    leader = admin(cluster.bootstrap).list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    reference = _segment_bytes(cluster.brokers[leader], topic)
    assert len(reference) > 5
    for b in cluster.brokers:
        wait_until(lambda b=b: _segment_bytes(b, topic) == reference, 30, f"broker {b.broker_id}'s copy")
    # no consumer has fetched yet: what the leader sent by sendfile went to its followers
    assert regions(ports[leader])["sendfile"] >= len(reference)
    got = consume_all(cluster.bootstrap, topic, 2000)
    assert [m.value() for m in got] == values
