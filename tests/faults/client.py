"""What runs on the client host of a fault test (`python -m tests.faults.client COMMAND ...`, inside its
network namespace): readiness probes, topic set-up, the workloads, and the final reads. Workloads append
their history to a JSON-lines file, one event a line, for tests/faults/checker.py:

  {"op": "ack", "v": value, "p": partition, "o": offset}      an idempotent acks=all send acknowledged
  {"op": "fail", "v": value, "err": text}                      ... definitely refused
  {"op": "unknown", "v": value}                                ... still in doubt when the workload ended
  {"op": "txn", "id": n, "values": [...], "result": "commit" | "abort" | "unknown"}
  {"op": "commit", "p": partition, "o": offset}                a group offset commit acknowledged
  {"op": "read", "v": value, "p": partition, "o": offset}      the final read
  {"op": "committed", "p": partition, "o": offset}             the group's offsets after healing

Workloads run until a stop file appears (or `--max-seconds`), so the test decides when the history ends."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

QUIET: dict[str, Any] = {"log_level": 2}  # librdkafka: errors only, the history says the rest
if os.environ.get("FAULTS_RDKAFKA_DEBUG"):  # e.g. "eos,msg,protocol": the producers' view of a failed run
    QUIET = {"log_level": 7, "debug": os.environ["FAULTS_RDKAFKA_DEBUG"]}


def _write(out: TextIO, event: dict[str, Any]) -> None:
    event["t"] = round(time.time(), 3)
    out.write(json.dumps(event) + "\n")
    out.flush()


def _running(stop: Path, deadline: float) -> bool:
    return not stop.exists() and time.monotonic() < deadline


def zk_ready(args: argparse.Namespace) -> int:
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=args.connect, timeout=3)
    try:
        zk.start(timeout=3)
    except Exception:  # noqa: BLE001 - not yet
        return 1
    zk.stop()
    zk.close()
    return 0


def _until(check: Callable[[], bool], timeout: float) -> bool:
    """Poll `check` (a cluster that does not answer yet counts as "not yet") until it holds or time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return True
        except KafkaException:
            pass
        time.sleep(0.3)
    return False


def wait_brokers(args: argparse.Namespace) -> int:
    admin = AdminClient({"bootstrap.servers": args.bootstrap, **QUIET})
    if _until(lambda: len(admin.list_topics(timeout=3).brokers) >= args.count, args.timeout):
        return 0
    print(f"fewer than {args.count} brokers after {args.timeout}s", file=sys.stderr)
    return 1


def _in_sync(admin: AdminClient, topics: list[str]) -> bool:
    """Every partition of `topics` has a leader and its whole assignment in sync."""
    md = admin.list_topics(timeout=5)
    return all(t in md.topics and md.topics[t].error is None and md.topics[t].partitions and all(
        p.leader >= 0 and sorted(p.isrs) == sorted(p.replicas) for p in md.topics[t].partitions.values())
        for t in topics)


def create_topic(args: argparse.Namespace) -> int:
    admin = AdminClient({"bootstrap.servers": args.bootstrap, **QUIET})
    for f in admin.create_topics([NewTopic(args.topic, args.partitions, args.rf)]).values():
        f.result(60)
    return 0 if _until(lambda: _in_sync(admin, [args.topic]), 60) else 1


def wait_isr(args: argparse.Namespace) -> int:
    """Until every partition of the topics has a leader and its whole assignment in sync."""
    admin = AdminClient({"bootstrap.servers": args.bootstrap, **QUIET})
    if _until(lambda: _in_sync(admin, args.topics), args.timeout):
        return 0
    print(f"some partition of {args.topics} still without a leader or a full ISR after {args.timeout}s",
          file=sys.stderr)
    return 1


def produce(args: argparse.Namespace) -> int:
    """Idempotent acks=all sends, one every `--interval-ms`, values `<id>-<seq>`."""
    deadline = time.monotonic() + args.max_seconds
    with open(args.out, "a") as out:
        def done(err: KafkaError | None, msg: Any) -> None:
            v = msg.value().decode()
            if err is None:
                _write(out, {"op": "ack", "v": v, "p": msg.partition(), "o": msg.offset()})
            else:  # a time-out or a purge leaves it in doubt: the broker may have it
                _write(out, {"op": "fail", "v": v, "err": err.str()})

        p = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
                      "message.timeout.ms": 60000, "linger.ms": 5, **QUIET})
        seq = 0
        while _running(Path(args.stop), deadline):
            p.produce(args.topic, f"{args.id}-{seq}".encode(), on_delivery=done)
            seq += 1
            p.poll(args.interval_ms / 1000)
        left = p.flush(60)
        if left:  # in doubt: the producer gave up waiting, the broker may still have them
            p.purge(in_queue=True, in_flight=True)
            p.poll(1)
        _write(out, {"op": "sent", "count": seq})
    return 0


def transactions(args: argparse.Namespace) -> int:
    """Transactions of `--size` values over the topic's partitions; one in five is aborted."""
    deadline = time.monotonic() + args.max_seconds
    with open(args.out, "a") as out:
        p = Producer({"bootstrap.servers": args.bootstrap, "transactional.id": f"{args.id}-txn",
                      "transaction.timeout.ms": 30000, "message.timeout.ms": 30000, **QUIET})
        p.init_transactions(60)
        n = 0
        while _running(Path(args.stop), deadline):
            values = [f"{args.id}-t{n}-{i}" for i in range(args.size)]
            abort = n % 5 == 4
            result = "unknown"
            try:
                p.begin_transaction()
                for v in values:
                    p.produce(args.topic, v.encode())
                if abort:
                    p.abort_transaction(30)
                    result = "abort"
                else:
                    p.commit_transaction(30)
                    result = "commit"
            except KafkaException as exc:
                err = exc.args[0]
                if err.txn_requires_abort():
                    try:
                        p.abort_transaction(30)
                        result = "abort"
                    except KafkaException:
                        pass
                elif err.fatal():
                    _write(out, {"op": "txn", "id": n, "values": values, "result": result, "err": str(err)})
                    return 0
            _write(out, {"op": "txn", "id": n, "values": values, "result": result})
            n += 1
    return 0


def group(args: argparse.Namespace) -> int:
    """A group member that reads and commits its position after every poll (synchronously)."""
    deadline = time.monotonic() + args.max_seconds
    with open(args.out, "a") as out:
        c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 10000, **QUIET})
        c.subscribe([args.topic])
        while _running(Path(args.stop), deadline):
            msgs = c.consume(100, 0.5)
            if not msgs:
                continue
            try:
                done = c.commit(asynchronous=False)
            except KafkaException:
                continue
            for tp in done or []:
                if tp.error is None and tp.offset >= 0:
                    _write(out, {"op": "commit", "p": tp.partition, "o": tp.offset})
        c.close()
    return 0


def read(args: argparse.Namespace) -> int:
    """Every record of the topic, from the start to the end (the last stable offset with
    --read-committed)."""
    conf = {"bootstrap.servers": args.bootstrap, "group.id": "fault-reader", "enable.auto.commit": False,
            "isolation.level": "read_committed" if args.read_committed else "read_uncommitted", **QUIET}
    c = Consumer(conf)
    md = c.list_topics(args.topic, timeout=30).topics[args.topic]
    ends = {}
    for p in md.partitions:
        ends[p] = c.get_watermark_offsets(TopicPartition(args.topic, p), timeout=30)[1]
    c.assign([TopicPartition(args.topic, p, 0) for p in md.partitions])
    positions = dict.fromkeys(ends, 0)
    deadline = time.monotonic() + args.timeout
    with open(args.out, "a") as out:
        while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for m in c.consume(500, 0.5):
                if m.error() is not None:
                    continue
                _write(out, {"op": "read", "v": m.value().decode(), "p": m.partition(), "o": m.offset()})
                positions[m.partition()] = m.offset() + 1
            for p in ends:  # transaction markers and aborted records end a partition without a record
                if positions[p] < ends[p]:
                    got = c.position([TopicPartition(args.topic, p)])[0].offset
                    if got >= ends[p]:
                        positions[p] = got
        _write(out, {"op": "read-end", "ends": {str(p): e for p, e in ends.items()},
                     "complete": all(positions[p] >= ends[p] for p in ends)})
    c.close()
    return 0 if all(positions[p] >= ends[p] for p in ends) else 1


def committed(args: argparse.Namespace) -> int:
    c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group, **QUIET})
    md = c.list_topics(args.topic, timeout=30).topics[args.topic]
    got = c.committed([TopicPartition(args.topic, p) for p in md.partitions], timeout=30)
    with open(args.out, "a") as out:
        for tp in got:
            _write(out, {"op": "committed", "p": tp.partition, "o": tp.offset})
    c.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.client", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("zk-ready")
    s.add_argument("connect")
    s.set_defaults(fn=zk_ready)
    s = sub.add_parser("wait-brokers")
    s.add_argument("bootstrap")
    s.add_argument("count", type=int)
    s.add_argument("--timeout", type=float, default=90)
    s.set_defaults(fn=wait_brokers)
    s = sub.add_parser("create-topic")
    s.add_argument("bootstrap")
    s.add_argument("topic")
    s.add_argument("--partitions", type=int, default=3)
    s.add_argument("--rf", type=int, default=3)
    s.set_defaults(fn=create_topic)
    s = sub.add_parser("wait-isr")
    s.add_argument("bootstrap")
    s.add_argument("topics", nargs="+")
    s.add_argument("--timeout", type=float, default=120)
    s.set_defaults(fn=wait_isr)
    for name, fn in (("produce", produce), ("transactions", transactions), ("group", group)):
        s = sub.add_parser(name)
        s.add_argument("bootstrap")
        s.add_argument("topic")
        s.add_argument("--out", required=True)
        s.add_argument("--stop", required=True, help="stop once this file exists")
        s.add_argument("--max-seconds", type=float, default=600)
        s.add_argument("--id", default="w")
        s.add_argument("--interval-ms", type=float, default=10)
        s.add_argument("--size", type=int, default=4)
        s.add_argument("--group", default="fault-group")
        s.set_defaults(fn=fn)
    s = sub.add_parser("read")
    s.add_argument("bootstrap")
    s.add_argument("topic")
    s.add_argument("--out", required=True)
    s.add_argument("--read-committed", action="store_true")
    s.add_argument("--timeout", type=float, default=120)
    s.set_defaults(fn=read)
    s = sub.add_parser("committed")
    s.add_argument("bootstrap")
    s.add_argument("group")
    s.add_argument("topic")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=committed)
    args = parser.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
