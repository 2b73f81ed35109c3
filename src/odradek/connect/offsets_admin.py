"""KIP-875's offset changes through the REST API (`PATCH` and `DELETE /connectors/{name}/offsets`), with
Kafka's checks and messages. Only a connector in the STOPPED state (no tasks) has its offsets changed. A source
connector's entries are written to (or, for a null offset, erased from) the worker's offset store; a sink
connector's are its consumer group's (`connect-<name>`): altered with the AdminClient, a null offset deleted with
OffsetDelete (librdkafka has no call for it), and a reset deletes the group. The connector's `alter_offsets`
sees the change first and may refuse it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from odradek.connect.api import ConnectException

if TYPE_CHECKING:
    from odradek.connect.worker import ConnectorState, Worker

TP = tuple[str, int]
GROUP_NOT_EMPTY, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, GROUP_SUBSCRIBED_TO_TOPIC = 68, 69, 25, 86
_ZOMBIES = ("either because its tasks haven't stopped completely yet or the connector was resumed before the "
            "request to {verb} its offsets could be successfully completed. If the connector is in a stopped state, "
            "this operation can be safely retried. If it doesn't eventually succeed, the Connect cluster may need to "
            "be restarted to get rid of the zombie sink tasks.")


class OffsetsError(ConnectException):
    """A request Kafka answers with this HTTP status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def check_stopped(state: ConnectorState) -> None:
    from odradek.connect.worker import STOPPED

    if state.target != STOPPED or state.tasks:
        raise OffsetsError(400, "Connectors must be in the STOPPED state before their offsets can be modified. This "
                                "can be done for the specified connector by issuing a 'PUT' request to the "
                                f"'/connectors/{state.name}/stop' endpoint")


def _done(managed_externally: bool, verb: str) -> str:
    if managed_externally:
        return f"The offsets for this connector have been {verb} successfully"
    return (f"The Connect framework-managed offsets for this connector have been {verb} successfully. However, if "
            f"this connector manages offsets externally, they will need to be manually {verb} in the system that the "
            "connector uses.")


def _source_entries(body: list[Any]) -> dict[bytes, Any]:
    out: dict[bytes, Any] = {}
    for entry in body:
        partition, offset = entry.get("partition"), entry.get("offset")
        if not isinstance(partition, dict):
            raise OffsetsError(400, "The partition for a source connector offset must be a JSON object"
                               if partition is not None else
                               "The partition for a source connector offset cannot be null or missing")
        for part in (partition, offset):
            if part is None:
                continue
            if not isinstance(part, dict):
                raise OffsetsError(400, "Offsets must be specified as a Map")
            for key, value in part.items():
                if isinstance(value, dict | list):
                    raise OffsetsError(400, "Offsets may only contain primitive types as values, but field "
                                            f"{key} contains {'MAP' if isinstance(value, dict) else 'ARRAY'}")
        out[json.dumps(partition, separators=(",", ":")).encode()] = offset
    return out


def _sink_entries(body: list[Any]) -> dict[TP, int | None]:
    out: dict[TP, int | None] = {}
    for entry in body:
        partition, offset = entry.get("partition"), entry.get("offset")
        if partition is None:
            raise OffsetsError(400, "The partition for a sink connector offset cannot be null or missing")
        if not isinstance(partition, dict) or "kafka_topic" not in partition or "kafka_partition" not in partition:
            raise OffsetsError(400, "The partition for a sink connector offset must contain the keys 'kafka_topic' "
                                    "and 'kafka_partition'")
        if partition["kafka_topic"] is None:
            raise OffsetsError(400, "Kafka topic names must be valid strings and may not be null")
        if partition["kafka_partition"] is None:
            raise OffsetsError(400, "Kafka partitions must be valid numbers and may not be null")
        try:  # both 3 and "3" are accepted, as Kafka's Integer.parseInt(String.valueOf(...))
            number = _java_int(partition["kafka_partition"], 2**31)
        except ValueError:
            raise OffsetsError(400, "Failed to parse the following Kafka partition value in the provided offsets: "
                                    f"'{partition['kafka_partition']}'. Partition values for sink connectors need to "
                                    "be integers.") from None
        tp = (str(partition["kafka_topic"]), number)
        if offset is None:
            out[tp] = None
            continue
        if not isinstance(offset, dict) or "kafka_offset" not in offset:
            raise OffsetsError(400, "The offset for a sink connector should either be null or contain the key "
                                    "'kafka_offset'")
        try:
            out[tp] = _java_int(offset["kafka_offset"], 2**63)
        except ValueError:
            raise OffsetsError(400, "Failed to parse the following Kafka offset value in the provided offsets: "
                                    f"'{offset['kafka_offset']}'. Offset values for sink connectors need to be "
                                    "integers.") from None
    return out


def _java_int(value: Any, bound: int) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(value)
    number = int(str(value).strip())
    if not -bound <= number < bound:
        raise ValueError(value)
    return number


def alter(worker: Worker, state: ConnectorState, body: Any) -> str:
    """PATCH /connectors/{name}/offsets; the success message."""
    entries = body.get("offsets") if isinstance(body, dict) else None
    if not entries:
        raise OffsetsError(400, "Partitions / offsets need to be provided for an alter offsets request")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise OffsetsError(400, "Cannot deserialize value: offsets must be a list of {partition, offset} objects")
    check_stopped(state)
    connector = worker.plugins.connector_class(state.config["connector.class"])()
    if state.kind == "source":
        source = _source_entries(entries)
        managed = _ask(connector, state, source)
        worker.offsets.write(state.name, source)
        return _done(managed, "altered")
    sink = _sink_entries(entries)
    managed = _ask(connector, state, sink)
    _alter_group(worker, state.name, sink)
    return _done(managed, "altered")


def reset(worker: Worker, state: ConnectorState) -> str:
    """DELETE /connectors/{name}/offsets; the success message."""
    check_stopped(state)
    connector = worker.plugins.connector_class(state.config["connector.class"])()
    if state.kind == "source":
        erase = {json.dumps(p, separators=(",", ":")).encode(): None
                 for p, _o in worker.offsets.connector_offsets(state.name)}
        managed = _ask(connector, state, erase)
        worker.offsets.write(state.name, erase)
        return _done(managed, "reset")
    committed = worker.sink_offsets(state.name)
    managed = _ask(connector, state, dict.fromkeys(committed))
    _delete_group(worker, state.name)
    return _done(managed, "reset")


def _ask(connector: Any, state: ConnectorState, offsets: Mapping[Any, Any]) -> bool:
    try:
        return bool(connector.alter_offsets(dict(state.config), offsets))
    except NotImplementedError:
        raise ConnectException(f"Failed to modify offsets for connector {state.name} because it doesn't support "
                               "external modification of offsets") from None


def _admin(worker: Worker) -> Any:
    from confluent_kafka.admin import AdminClient

    from odradek.admin_client.connect import ClientErrors, client_config, create_client

    return create_client(AdminClient, client_config(worker.config.bootstrap_servers,
                                                    worker.config.client_props("admin"), errors=ClientErrors()))


def _code(exc: BaseException) -> int | None:
    err: Any = exc.args[0] if exc.args else None
    return err.code() if hasattr(err, "code") else None


def _alter_group(worker: Worker, name: str, offsets: dict[TP, int | None]) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

    group = f"connect-{name}"
    zombies = f"Failed to alter consumer group offsets for connector {name} " + _ZOMBIES.format(verb="alter")
    to_set = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items()) if o is not None]
    if to_set:
        try:
            admin = _admin(worker)  # kept referenced until the answer: a collected client drops its futures
            done = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, to_set)])[group].result(
                timeout=30)
        except TimeoutError:
            raise ConnectException(f"Timed out while altering consumer group offsets for connector {name}") from None
        except KafkaException as exc:
            if _code(exc) == UNKNOWN_MEMBER_ID:
                raise ConnectException(zombies) from None
            raise ConnectException(f"Failed to alter consumer group offsets for connector {name}: {exc}") from None
        failed = [tp for tp in done.topic_partitions if tp.error is not None]
        if failed:
            raise ConnectException(f"Failed to alter consumer group offsets for connector {name}: {failed[0].error}")
    to_delete = [tp for tp, o in sorted(offsets.items()) if o is None]
    if to_delete:
        code = _offset_delete(worker, group, to_delete)
        if code in (UNKNOWN_MEMBER_ID, GROUP_SUBSCRIBED_TO_TOPIC):
            raise ConnectException(zombies)
        if code not in (0, GROUP_ID_NOT_FOUND):
            from odradek.admin_client.errors import error_message

            raise ConnectException(f"Failed to alter consumer group offsets for connector {name}: "
                                   f"{error_message(code)}")


def _offset_delete(worker: Worker, group: str, partitions: list[TP]) -> int:
    """OffsetDelete v0 at the group's coordinator: the first error code (0: none)."""
    from kafka.protocol.consumer.group import OffsetDeleteRequest

    from odradek.admin_client.share_groups import ShareGroupsClient
    from odradek.security.client_config import client_security

    topic_cls = OffsetDeleteRequest.OffsetDeleteRequestTopic
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    request = OffsetDeleteRequest(group_id=group, topics=[
        topic_cls(name=t, partitions=[topic_cls.OffsetDeleteRequestPartition(partition_index=p) for p in ps])
        for t, ps in by_topic.items()])
    security = client_security(worker.config.client_props("admin"))
    # the share-groups client is the project's blocking protocol client: FindCoordinator, then the request
    with ShareGroupsClient(worker.config.bootstrap_servers, 30, f"connect-offsets-{group}", security) as client:
        _node, resp = client._at_coordinator(group, request, 0, lambda r: r.error_code)  # noqa: SLF001
    if resp.error_code:
        return int(resp.error_code)
    return next((p.error_code for t in resp.topics for p in t.partitions if p.error_code), 0)


def _delete_group(worker: Worker, name: str) -> None:
    from confluent_kafka import KafkaException

    group = f"connect-{name}"
    admin = _admin(worker)
    try:
        admin.delete_consumer_groups([group])[group].result(timeout=30)
    except TimeoutError:
        raise ConnectException(f"Timed out while resetting consumer group offsets for connector {name}") from None
    except KafkaException as exc:
        code = _code(exc)
        if code == GROUP_ID_NOT_FOUND:  # an idempotent reset: the group may be gone already
            return
        if code == GROUP_NOT_EMPTY:
            raise ConnectException(f"Failed to reset consumer group offsets for connector {name} " +
                                   _ZOMBIES.format(verb="reset")) from None
        raise ConnectException(f"Failed to reset consumer group offsets for sink connector {name}: {exc}") from None
