"""`odradek log-dirs --describe`: Kafka's kafka-log-dirs.sh. Asks each broker (all, or --broker-list) for
its log directories and prints them as Kafka does: two progress lines, then one line of JSON with every
directory's partitions, their sizes and lags.

    odradek log-dirs --bootstrap-server 127.0.0.1:9092 --describe [--topic-list t1,t2] [--broker-list 0,1]
"""

from __future__ import annotations

import json
from typing import Any

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import add_bootstrap_flags, bootstrap_of, read_properties_file
from odradek.admin_client.errors import CliError, UsageError

REQUEST_TIMEOUT_S = 30.0
DESCRIBE_LOG_DIRS_VERSION = 1
ERROR_NAMES = {56: "KafkaStorageException", 57: "LogDirNotFoundException"}


def build_parser() -> ArgParser:
    p = ArgParser("log-dirs", __doc__ or "")
    add_bootstrap_flags(p)
    p.add_argument("--describe", action="store_true", help="describe the log directories (the only action)")
    p.add_argument("--topic-list", help="comma-separated topics to describe (default: all)")
    p.add_argument("--broker-list", help="comma-separated broker ids to ask (default: all)")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties (client.id, security.protocol, sasl.*, ssl.* with PEM stores)")
    return p


def _ids(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"Error: --broker-list must be comma-separated broker ids, not '{text}'") from None


def describe(bootstrap: str, topics: list[str] | None, broker_ids: list[int] | None,
             props: dict[str, str] | None = None) -> dict[str, Any]:
    from kafka.protocol.admin import DescribeLogDirsRequest

    from odradek.cli.broker_connection import AdminConnection, security_of

    props = props or {}
    with AdminConnection(bootstrap, REQUEST_TIMEOUT_S, props.get("client.id", "log-dirs"),
                         security=security_of(props)) as conn:
        md = conn.metadata(None if topics is None else topics)
        nodes = {b.node_id: b for b in md.brokers}
        wanted = sorted(nodes) if broker_ids is None else broker_ids
        missing = [i for i in wanted if i not in nodes]
        if missing:
            raise CliError(f"Error: brokers {','.join(map(str, missing))} are not in the cluster "
                           f"(brokers: {','.join(map(str, sorted(nodes)))})")
        request_topics = None
        if topics is not None:
            request_topics = [DescribeLogDirsRequest.DescribableLogDirTopic(
                topic=t.name, partitions=[p.partition_index for p in t.partitions])
                for t in md.topics if t.error_code == 0]
        print("Querying brokers for log directories information")
        brokers = []
        for broker_id in wanted:
            node = nodes[broker_id]
            try:
                c = conn.open(node.host, node.port)
            except OSError as exc:
                raise CliError(f"Error: cannot connect to broker {broker_id} at {node.host}:{node.port}: "
                               f"{exc.strerror or exc}") from None
            with c:
                resp = c.request(DescribeLogDirsRequest(topics=request_topics), DESCRIBE_LOG_DIRS_VERSION)
            brokers.append({"broker": broker_id, "logDirs": [
                {"partitions": [{"partition": f"{t.name}-{p.partition_index}", "size": p.partition_size,
                                 "offsetLag": p.offset_lag, "isFuture": p.is_future_key}
                                for t in r.topics for p in t.partitions],
                 "error": ERROR_NAMES.get(r.error_code, f"error {r.error_code}") if r.error_code else None,
                 "logDir": r.log_dir}
                for r in resp.results]})
        print(f"Received log directory information from brokers {','.join(map(str, wanted))}")
        return {"brokers": brokers, "version": 1}


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    bootstrap = bootstrap_of(opts)
    if not opts.describe:
        raise UsageError("Error: Command must include option '--describe'")
    topics = [t for t in opts.topic_list.split(",") if t] if opts.topic_list else None
    broker_ids = _ids(opts.broker_list) if opts.broker_list else None
    props = read_properties_file(opts.command_config)
    print(json.dumps(describe(bootstrap, topics, broker_ids, props), separators=(",", ":")))
    return 0


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
