"""Broker metrics in Prometheus' text format, named as the Prometheus JMX exporter's standard Kafka rules
name Kafka's MBeans (lower-cased, `PerSec` dropped: `MessagesInPerSec` is
`kafka_server_brokertopicmetrics_messagesin_total`), so stock Kafka dashboards work; plus prometheus-client's
`process_*` metrics (CPU, memory, open files). The request path only bumps plain counters (per batch and per
request, never per record); everything else is read from the broker's state when Prometheus scrapes,
by a prometheus-client collector on a registry of the broker's own."""

from __future__ import annotations

import bisect
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.server.broker import Broker

# request time buckets (ms), as Kafka's request metrics are usually bucketed by the JMX exporter
TIME_BUCKETS_MS = (1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)


class RequestTimes:
    """Count, sum and bucket counts of one API's request times."""

    __slots__ = ("buckets", "count", "total_ms")

    def __init__(self) -> None:
        self.buckets = [0] * (len(TIME_BUCKETS_MS) + 1)
        self.count = 0
        self.total_ms = 0.0

    def observe(self, ms: float) -> None:
        self.buckets[bisect.bisect_left(TIME_BUCKETS_MS, ms)] += 1
        self.count += 1
        self.total_ms += ms


class BrokerMetrics:
    """The counters the request path bumps; `render` gives the Prometheus text of everything."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.messages_in: defaultdict[str, int] = defaultdict(int)
        self.bytes_in: defaultdict[str, int] = defaultdict(int)
        self.bytes_out: defaultdict[str, int] = defaultdict(int)
        self.requests: defaultdict[str, RequestTimes] = defaultdict(RequestTimes)
        self.errors: defaultdict[tuple[str, int], int] = defaultdict(int)  # (api, error code) -> responses
        # share groups (KIP-932): requests per topic, and those that failed (Kafka's BrokerTopicMetrics)
        self.share_fetches: defaultdict[str, int] = defaultdict(int)
        self.share_fetches_failed: defaultdict[str, int] = defaultdict(int)
        self.share_acks: defaultdict[str, int] = defaultdict(int)
        self.share_acks_failed: defaultdict[str, int] = defaultdict(int)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self))
        ProcessCollector(registry=self.registry)

    def produced(self, topic: str, records: int, size: int) -> None:
        self.messages_in[topic] += records
        self.bytes_in[topic] += size

    def fetched(self, topic: str, size: int) -> None:
        self.bytes_out[topic] += size

    def request_done(self, api: str, started: float) -> None:
        self.requests[api].observe((time.perf_counter() - started) * 1000)

    def response_errors(self, api: str, response: Any) -> None:
        """Count the error codes of a response (every `error_code` in it, NONE included), as Kafka's
        RequestMetrics ErrorsPerSec does."""
        _count_errors(response, api, self.errors)

    def error_codes(self, api: str, codes: Iterator[int] | list[int]) -> None:
        for code in codes:
            self.errors[(api, code)] += 1

    def share_requests(self, fetched: dict[str, bool], acknowledged: dict[str, bool]) -> None:
        """One ShareFetch or ShareAcknowledge: the topics it fetched from and acknowledged in, each with
        whether it failed."""
        for counts, failures, topics in ((self.share_fetches, self.share_fetches_failed, fetched),
                                         (self.share_acks, self.share_acks_failed, acknowledged)):
            for topic, failed in topics.items():
                counts[topic] += 1
                if failed:
                    failures[topic] += 1

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _count_errors(message: Any, api: str, out: defaultdict[tuple[str, int], int]) -> None:
    fields = getattr(message, "fields", None)
    if not isinstance(fields, dict):
        return
    for name in fields:
        if not isinstance(name, str):
            continue
        value = getattr(message, name, None)
        if name == "error_code" or name.endswith("_error_code"):
            if isinstance(value, int):
                out[(api, value)] += 1
        elif isinstance(value, list):
            for item in value:
                _count_errors(item, api, out)
        else:
            _count_errors(value, api, out)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _per_topic(name: str, doc: str, counts: dict[str, int]) -> Metric:
    """A counter per topic plus the all-topics series without a topic label, as Kafka's MBeans have it."""
    family = Metric(name, doc, "counter")
    family.add_sample(name + "_total", {}, float(sum(counts.values())))
    for topic, value in sorted(counts.items()):
        family.add_sample(name + "_total", {"topic": topic}, float(value))
    return family


class _Collector(Collector):
    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self.metrics
        broker = m.broker
        yield _per_topic("kafka_server_brokertopicmetrics_messagesin", "Records appended as leader", m.messages_in)
        yield _per_topic("kafka_server_brokertopicmetrics_bytesin", "Record bytes appended as leader", m.bytes_in)
        yield _per_topic("kafka_server_brokertopicmetrics_bytesout", "Record bytes sent to consumers", m.bytes_out)
        yield _per_topic("kafka_server_brokertopicmetrics_totalsharefetchrequests", "ShareFetch requests",
                         m.share_fetches)
        yield _per_topic("kafka_server_brokertopicmetrics_failedsharefetchrequests", "ShareFetch requests that failed",
                         m.share_fetches_failed)
        yield _per_topic("kafka_server_brokertopicmetrics_totalshareacknowledgementrequests",
                         "Share acknowledgement requests (ShareAcknowledge, and ShareFetch carrying them)", m.share_acks)
        yield _per_topic("kafka_server_brokertopicmetrics_failedshareacknowledgementrequests",
                         "Share acknowledgement requests that failed", m.share_acks_failed)
        yield from _requests(m)
        yield from _fetch_regions(broker)
        yield from _throttles(broker)
        if not hasattr(broker, "replicas"):
            return  # not started yet
        yield from _replicas(broker)
        yield from _controller(broker)
        yield from _logs(broker)
        yield from _lag(broker)
        yield from _coordinators(broker)
        yield from _share_partitions(broker)


# quota type -> the `type` of Kafka's kafka.server:type=Produce,user=,client-id= MBeans
_QUOTA_MBEANS = {"producer_byte_rate": "produce", "consumer_byte_rate": "fetch", "request_percentage": "request",
                 "controller_mutation_rate": "controllermutation"}


def _throttles(broker: Any) -> Iterator[Metric]:
    """Throttles per quota entity (user, client-id), named after Kafka's per-entity quota MBeans."""
    quotas = getattr(broker, "quotas", None)
    if quotas is None:
        return
    families = {}
    for kind in _QUOTA_MBEANS.values():
        families[kind] = (
            CounterMetricFamily(f"kafka_server_{kind}_throttled_requests", f"{kind} responses throttled",
                                labels=["user", "client_id"]),
            CounterMetricFamily(f"kafka_server_{kind}_throttle_time_ms", f"Total {kind} throttle time (ms)",
                                labels=["user", "client_id"]))
    for (key, user, client_id), (count, total) in list(quotas.throttle_totals.items()):
        mbean = _QUOTA_MBEANS.get(key)
        if mbean is not None:
            families[mbean][0].add_metric([user, client_id], count)
            families[mbean][1].add_metric([user, client_id], total)
    for count_family, time_family in families.values():
        yield count_family
        yield time_family


def _fetch_regions(broker: Any) -> Iterator[Metric]:
    """Odradek's own (Kafka has no such MBean): Fetch record regions sent from the segment files by sendfile
    (zero copy) or read and written (TLS listeners, ODRADEK_ZERO_COPY=0 sends none)."""
    server = getattr(broker, "server", None)
    if server is None:
        return
    counts = server.splice_counts
    family = CounterMetricFamily("odradek_network_fetch_regions", "Fetch record regions sent, by path",
                                 labels=["path"])
    family.add_metric(["sendfile"], counts.sent)
    family.add_metric(["copy"], counts.copied)
    yield family


def _requests(m: BrokerMetrics) -> Iterator[Metric]:
    totals = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests handled", labels=["request"])
    times = HistogramMetricFamily("kafka_network_requestmetrics_totaltimems", "Request total time (ms)",
                                  labels=["request"])
    for api, t in sorted(m.requests.items()):
        totals.add_metric([api], t.count)
        cumulative, buckets = 0, []
        for bound, n in zip((*TIME_BUCKETS_MS, float("inf")), t.buckets, strict=True):
            cumulative += n
            buckets.append(("+Inf" if bound == float("inf") else str(bound), cumulative))
        times.add_metric([api], buckets, t.total_ms)
    yield totals
    yield times
    errors = CounterMetricFamily("kafka_network_requestmetrics_errors", "Responses' error codes (NONE included)",
                                 labels=["request", "error"])
    for (api, code), n in sorted(m.errors.items()):
        errors.add_metric([api, _error_name(code)], n)
    yield errors


def _replicas(broker: Any) -> Iterator[Metric]:
    replicas = broker.replicas
    partitions = list(replicas.partitions.values())
    leaders = [p for p in partitions if p.is_leader]
    under = sum(1 for p in leaders if len(p.isr) < len(p.replicas))
    below_min = sum(1 for p in leaders if len(p.isr) < p.min_insync_replicas)
    for name, doc, value in (
        ("kafka_server_replicamanager_partitioncount", "Partitions with a replica here", len(partitions)),
        ("kafka_server_replicamanager_leadercount", "Partitions led here", len(leaders)),
        ("kafka_server_replicamanager_underreplicatedpartitions", "Led partitions with replicas out of the ISR",
         under),
        ("kafka_server_replicamanager_underminisrpartitioncount", "Led partitions below min.insync.replicas",
         below_min),
        ("kafka_server_replicamanager_offlinereplicacount", "Replicas here whose log dir failed",
         len(replicas.offline_partitions())),
    ):
        yield GaugeMetricFamily(name, doc, value=value)
    for name, key in (("kafka_server_replicamanager_isrshrinks", "shrink"),
                      ("kafka_server_replicamanager_isrexpands", "expand")):
        yield CounterMetricFamily(name, f"ISR {key}s by this broker as leader", value=replicas.isr_changes[key])


def _controller(broker: Any) -> Iterator[Metric]:
    active = broker.metadata.controller_id == broker.broker_id
    yield GaugeMetricFamily("kafka_controller_kafkacontroller_activecontrollercount",
                            "1 on the active controller", value=1 if active else 0)
    offline = 0
    if active:
        live = set(broker.metadata.brokers)
        offline = sum(1 for meta in broker.metadata.topics.values() for st in meta.states.values()
                      if st.leader not in live)
    yield GaugeMetricFamily("kafka_controller_kafkacontroller_offlinepartitionscount",
                            "Partitions without a live leader (on the active controller)", value=offline)


def _logs(broker: Any) -> Iterator[Metric]:
    logs = broker.logs
    offline = set(logs.failures.offline_dirs())
    yield GaugeMetricFamily("kafka_log_logmanager_offlinelogdirectorycount", "Log dirs that failed (offline)",
                            value=len(offline))
    per_dir = GaugeMetricFamily("kafka_log_logmanager_logdirectoryoffline", "1 when the log dir failed",
                                labels=["logDirectory"])
    for d in logs.log_dirs:
        per_dir.add_metric([str(d)], 1 if d in offline else 0)
    yield per_dir
    sizes = GaugeMetricFamily("kafka_log_log_size", "Bytes of a partition's log", labels=["topic", "partition"])
    ends = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=["topic", "partition"])
    for log in broker.logs.logs():
        labels = [log.topic, str(log.partition)]
        sizes.add_metric(labels, log.size_in_bytes)
        ends.add_metric(labels, log.log_end_offset)
    yield sizes
    yield ends


def _lag(broker: Any) -> Iterator[Metric]:
    """Committed offsets of the groups this broker coordinates, of every group type, against the high
    watermarks of the partitions it leads (kafka-exporter's metric)."""
    lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus the committed offset",
                            labels=["consumergroup", "topic", "partition"])
    coordinator = getattr(broker, "groups", None)
    if coordinator is not None:
        for gtype in coordinator.offsets.types:
            for group_id in sorted(gtype.group_ids()):
                for (topic, partition), committed in sorted((gtype.offsets_of(group_id) or {}).items()):
                    part = broker.replicas.get(topic, partition)
                    if part is not None and part.is_leader:
                        lag.add_metric([group_id, topic, str(partition)],
                                       max(part.high_watermark - committed.offset, 0))
    yield lag


def _coordinators(broker: Any) -> Iterator[Metric]:
    """Groups by protocol and state (Kafka's GroupMetadataManager gauges for classic groups, its
    group-coordinator-metrics for every type) and transactional ids by state on this broker's
    coordinators."""
    groups = getattr(broker, "groups", None)
    if groups is not None:
        by_state: defaultdict[str, int] = defaultdict(int)
        classic = groups.classic.groups
        for group in classic.values():
            by_state[group.state.name.replace("_", "").lower()] += 1
        consumer = [g for g in groups.consumer.groups.values() if not g.dead]
        yield GaugeMetricFamily("kafka_coordinator_group_groupmetadatamanager_numgroups",
                                "Groups this broker coordinates", value=len(classic) + len(consumer))
        for state in ("preparingrebalance", "completingrebalance", "stable", "dead", "empty"):
            yield GaugeMetricFamily(f"kafka_coordinator_group_groupmetadatamanager_numgroups{state}",
                                    f"Classic groups in state {state}", value=by_state.get(state, 0))
        by_protocol = GaugeMetricFamily("kafka_server_group_coordinator_metrics_group_count",
                                        "Groups this broker coordinates, by protocol", labels=["protocol"])
        share = list(groups.share.groups.values())
        by_protocol.add_metric(["classic"], len(classic))
        by_protocol.add_metric(["consumer"], len(consumer))
        by_protocol.add_metric(["share"], len(share))
        yield by_protocol
        share_states = GaugeMetricFamily("kafka_server_group_coordinator_metrics_share_group_count",
                                         "Share (KIP-932) groups by state", labels=["state"])
        share_in_state = Counter(g.state.lower() for g in share)
        for state in ("empty", "stable"):
            share_states.add_metric([state], share_in_state.get(state, 0))
        yield share_states
        yield GaugeMetricFamily("kafka_server_group_coordinator_metrics_share_group_rebalance_count",
                                "Share group assignment changes", value=groups.share.rebalances)
        consumer_states = GaugeMetricFamily("kafka_server_group_coordinator_metrics_consumer_group_count",
                                            "Consumer (KIP-848) groups by state", labels=["state"])
        in_state = Counter(g.state.value.lower() for g in consumer)
        for state in ("empty", "assigning", "reconciling", "stable"):
            consumer_states.add_metric([state], in_state.get(state, 0))
        yield consumer_states
    txns = getattr(broker, "transactions", None)
    if txns is not None:
        family = GaugeMetricFamily("kafka_coordinator_transaction_transactionstatemanager_transactionalids",
                                   "Transactional ids this broker coordinates, by state", labels=["state"])
        counts: defaultdict[str, int] = defaultdict(int)
        for md in txns.txns.values():
            counts[md.state.label] += 1
        for state, n in sorted(counts.items()):
            family.add_metric([state], n)
        yield family


_ACK_TYPES = {1: "Accept", 2: "Release", 3: "Reject", 4: "Renew"}


def _share_partitions(broker: Any) -> Iterator[Metric]:
    """Records acknowledged by type (Kafka's ShareGroupMetrics), per share partition the records acquired
    now and the acquisition locks that timed out (SharePartitionMetrics), and Odradek's own counts of
    records redelivered and archived per group (Kafka has no such MBeans)."""
    groups = getattr(broker, "groups", None)
    if groups is None:
        return
    manager = groups.share_partitions
    counters = manager.counters
    acks = CounterMetricFamily("kafka_server_sharegroupmetrics_recordacknowledgements",
                               "Records acknowledged, by acknowledgement type", labels=["ackType"])
    for code, name in _ACK_TYPES.items():
        acks.add_metric([name], counters.acknowledged.get(code, 0))
    yield acks
    labels = ["group", "topic", "partition"]
    in_flight = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightmessagecount",
                                  "Records acquired by a member now", labels=labels)
    for key, sp in sorted(manager.partitions.items(), key=lambda kv: (kv[0].group_id, kv[0].topic_id, kv[0].partition)):
        topic = broker.metadata.by_id.get(key.topic_id)
        if topic is not None:
            in_flight.add_metric([key.group_id, topic, str(key.partition)], sp.acquired_count())
    yield in_flight
    timeouts = CounterMetricFamily("kafka_server_sharepartitionmetrics_acquisitionlocktimeout",
                                   "Acquisition locks that timed out", labels=labels)
    for key, n in sorted(counters.lock_timeouts.items(), key=lambda kv: (kv[0].group_id, kv[0].partition)):
        topic = broker.metadata.by_id.get(key.topic_id)
        if topic is not None:
            timeouts.add_metric([key.group_id, topic, str(key.partition)], n)
    yield timeouts
    for name, doc, counts in (("odradek_share_records_redelivered", "Records delivered again", counters.redelivered),
                              ("odradek_share_records_archived", "Records archived (rejected or past the "
                                                                 "delivery-count limit)", counters.archived)):
        family = CounterMetricFamily(name, doc, labels=["group"])
        for group_id, n in sorted(counts.items()):
            family.add_metric([group_id], n)
        yield family
