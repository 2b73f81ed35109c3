"""Exactly-once source tasks (KIP-618), for distributed workers with `exactly.once.source.support=enabled`: the
connector keys (`exactly.once.support`, `transaction.boundary`, `transaction.boundary.interval.ms`) checked as
Kafka's DistributedHerder checks them, each source task's transactional id (`GROUP-CONNECTOR-TASK`, so a restarted
task fences the instance before it), and a transaction's content: the records a batch produced and the source
offsets they reached, written to the offsets topic in the same transaction, so that a task killed at any point
resumes exactly after what was committed. When a connector's task configs change, the leader fences the
transactional ids of the previous generation's tasks that the new one has no more of (a task that keeps its id is
fenced by its own next instance) and writes the `tasks-fencing-NAME` record after the configs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from odradek.connect.api import ConfigValue, SourceConnector
from odradek.connect.worker_config import WorkerConfig

SUPPORT_LEVELS = ("requested", "required")
BOUNDARIES = ("poll", "interval", "connector")
TASK_COUNT_PREFIX = "tasks-fencing-"  # the config topic's task count records


def transactional_id(group_id: str, connector: str, task: int) -> str:
    """A source task's transactional id, as Kafka's Worker.taskTransactionalId makes it."""
    return f"{group_id}-{connector}-{task}"


def boundary(config: Mapping[str, str]) -> str:
    return config.get("transaction.boundary", "poll").strip().lower() or "poll"


def boundary_interval_s(config: Mapping[str, str], default_ms: str) -> float:
    """Seconds between commits under `transaction.boundary=interval` (the worker's `offset.flush.interval.ms`
    unless `transaction.boundary.interval.ms` says otherwise)."""
    return int(config.get("transaction.boundary.interval.ms") or default_ms) / 1000


def validate(config: Mapping[str, str], connector: SourceConnector, worker_enabled: bool) -> list[ConfigValue]:
    """The errors of a source connector's exactly-once keys, on a distributed worker."""
    out: list[ConfigValue] = []
    support = config.get("exactly.once.support", "requested").strip().lower()
    if support not in SUPPORT_LEVELS:
        out.append(ConfigValue("exactly.once.support", config.get("exactly.once.support"), errors=[
            f"Invalid value {config.get('exactly.once.support')} for configuration exactly.once.support: String must "
            f"be one of (case insensitive): {', '.join(s.upper() for s in SUPPORT_LEVELS)}"]))
    elif support == "required":
        errors = []
        if not worker_enabled:
            errors.append("This worker does not have exactly-once source support enabled.")
        said = _ask(connector.exactly_once_support, config)
        if said is None:
            errors.append("The connector does not implement the API required for preflight validation of "
                          "exactly-once source support. Please consult the documentation for the connector to "
                          "determine whether it supports exactly-once semantics, and then consider reconfiguring "
                          'the connector to use the value "requested" for this property (which will disable this '
                          "preflight check and allow the connector to be created).")
        elif said != "SUPPORTED":
            errors.append(said if said.startswith("An unexpected error") else
                          "The connector does not support exactly-once semantics with the provided configuration.")
        if errors:
            out.append(ConfigValue("exactly.once.support", config.get("exactly.once.support"), errors=errors))
    chosen = boundary(config)
    if chosen not in BOUNDARIES:
        out.append(ConfigValue("transaction.boundary", config.get("transaction.boundary"), errors=[
            f"Invalid value {config.get('transaction.boundary')} for configuration transaction.boundary: String must "
            f"be one of (case insensitive): {', '.join(b.upper() for b in BOUNDARIES)}"]))
    elif chosen == "connector" and _ask(connector.can_define_transaction_boundaries, config) != "SUPPORTED":
        out.append(ConfigValue("transaction.boundary", config.get("transaction.boundary"), errors=[
            "The connector does not support connector-defined transaction boundaries with the given configuration. "
            "Please reconfigure it to use a different transaction boundary definition."]))
    interval = config.get("transaction.boundary.interval.ms")
    if interval is not None and interval.strip() and not (interval.strip().isdigit()):
        out.append(ConfigValue("transaction.boundary.interval.ms", interval, errors=[
            f"Invalid value {interval} for configuration transaction.boundary.interval.ms: Value must be at least 0"]))
    return out


def _ask(method: Any, config: Mapping[str, str]) -> str | None:
    try:
        answer = method(dict(config))
    except Exception as exc:  # the connector's own failure, said as Kafka says it
        text = str(exc).strip()
        return ("An unexpected error occurred during validation" +
                (f": {text}" if text else "; please see the worker logs for more details."))
    return None if answer is None else str(answer)


def fence(config: WorkerConfig, transactional_ids: list[str]) -> None:
    """Fence these transactional ids' producers (Kafka's Admin.fenceProducers: an InitProducerId for each bumps
    its epoch, so a zombie task holding one can commit nothing more). Blocking."""
    from confluent_kafka import Producer

    from odradek.admin_client.connect import ClientErrors, client_config, create_client

    for tid in transactional_ids:
        producer = create_client(Producer, client_config(
            config.bootstrap_servers, config.client_props("producer"), errors=ClientErrors(),
            defaults={"client.id": f"connect-fencer-{tid}", "transactional.id": tid, "enable.idempotence": True}))
        producer.init_transactions(60)
        producer.flush(5)
