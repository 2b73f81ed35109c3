"""`odradek consumer-perf-test`: Kafka's kafka-consumer-perf-test.sh. Joins a group, reads --messages
records of --topic and prints Kafka's comma-separated summary: MB and records consumed, their rates over
the whole run and over the fetch time (the run less the group's rebalance).

    odradek consumer-perf-test --bootstrap-server 127.0.0.1:9092 --topic t --messages 1000000
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

from confluent_kafka import Consumer

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import add_bootstrap_flags, bootstrap_of, open_client, read_properties_file
from odradek.admin_client.errors import UsageError
from odradek.cli.perf_stats import CONSUMER_HEADER, DETAILED_HEADER, MB, consumer_line, java_date

BATCH = 10_000


def build_parser() -> ArgParser:
    p = ArgParser("consumer-perf-test", __doc__ or "")
    add_bootstrap_flags(p, broker_list=True)
    p.add_argument("--topic", required=True, help="REQUIRED: the topic to consume from")
    p.add_argument("--messages", type=int, required=True, help="REQUIRED: how many records to consume")
    p.add_argument("--group", help="the consumer group (default: perf-consumer-<random>)")
    p.add_argument("--fetch-size", type=int, default=1024 * 1024, help="bytes per partition per fetch "
                   "(default 1048576)")
    p.add_argument("--from-latest", action="store_true", help="start at the end of the topic when the group "
                   "has no committed offset (default: the beginning)")
    p.add_argument("--consumer.config", dest="consumer_config", help="a consumer config properties file")
    p.add_argument("--command-config", dest="command_config", help="the same, under its newer name")
    p.add_argument("--reporting-interval", type=int, default=5000, help="ms between detailed stats lines")
    p.add_argument("--show-detailed-stats", action="store_true", help="print stats every reporting interval")
    p.add_argument("--hide-header", action="store_true", help="leave out the header line")
    p.add_argument("--timeout", type=int, default=10_000, help="ms to wait for the next record before giving "
                   "up (default 10000)")
    p.add_argument("--date-format", default="yyyy-MM-dd HH:mm:ss:SSS", help="java.text.SimpleDateFormat "
                   "pattern of the times printed")
    p.add_argument("--print-metrics", action="store_true", help="print the client's statistics at the end")
    p.add_argument("--threads", type=int, help="accepted and ignored (deprecated in Kafka)")
    p.add_argument("--num-fetch-threads", type=int, help="accepted and ignored (deprecated in Kafka)")
    return p


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    bootstrap = bootstrap_of(opts)
    if opts.messages <= 0:
        raise UsageError(f"Error: --messages must be positive, not {opts.messages}")
    conf: dict[str, Any] = read_properties_file(opts.consumer_config or opts.command_config)
    conf.setdefault("group.id", opts.group or f"perf-consumer-{random.randrange(100_000)}")
    conf.setdefault("auto.offset.reset", "latest" if opts.from_latest else "earliest")
    conf.setdefault("max.partition.fetch.bytes", str(opts.fetch_size))
    conf.setdefault("queued.min.messages", "1000000")  # librdkafka otherwise backs off between fetches
    stats: list[str] = []
    defaults: dict[str, Any] = {}
    if opts.print_metrics:
        conf.setdefault("statistics.interval.ms", "1000")
        defaults["stats_cb"] = stats.append
    assigned: list[float] = []
    consumer, _ = open_client(Consumer, bootstrap, conf, defaults=defaults)
    start = time.time()
    consumer.subscribe([opts.topic], on_assign=lambda c, parts: assigned.append(time.time()) if parts else None)
    messages = consumed = 0
    last_record = time.monotonic()
    last_report = (start, 0, 0)
    if opts.show_detailed_stats and not opts.hide_header:
        print(DETAILED_HEADER)
    try:
        while messages < opts.messages:
            batch = consumer.consume(min(BATCH, opts.messages - messages), 0.5)
            now = time.monotonic()
            got = [m for m in batch if m.error() is None]
            if not got:
                if now - last_record > opts.timeout / 1000:
                    print(f"WARNING: Exiting before consuming the expected number of messages: timeout "
                          f"({opts.timeout} ms) exceeded. You can use the --timeout option to increase the timeout.",
                          file=sys.stderr)
                    break
                continue
            last_record = now
            messages += len(got)
            consumed += sum(len(m.value() or b"") + len(m.key() or b"") for m in got)
            wall = time.time()
            if opts.show_detailed_stats and (wall - last_report[0]) * 1000 >= opts.reporting_interval:
                last_report = _detailed(opts, last_report, wall, consumed, messages, assigned, start)
    finally:
        end = time.time()
        consumer.close()
    rebalance_ms = int((assigned[0] - start) * 1000) if assigned else 0
    if not opts.show_detailed_stats:
        if not opts.hide_header:
            print(CONSUMER_HEADER)
        print(consumer_line(start, end, consumed, messages, rebalance_ms, opts.date_format))
    if stats:
        print(stats[-1])
    return 0


def _detailed(opts: argparse.Namespace, last: tuple[float, int, int], wall: float, consumed: int, messages: int,
              assigned: list[float], start: float) -> tuple[float, int, int]:
    """One line of --show-detailed-stats: the interval since the last line."""
    then, then_bytes, then_messages = last
    elapsed = max(wall - then, 1e-9)
    mb = (consumed - then_bytes) / MB
    rebalance_ms = int((assigned[0] - start) * 1000) if assigned and assigned[0] > then else 0
    fetch_s = max(elapsed - rebalance_ms / 1000, 1e-9)
    count = messages - then_messages
    print(f"{java_date(wall, opts.date_format)}, 0, {consumed / MB:.4f}, {mb / elapsed:.4f}, {messages}, "
          f"{count / elapsed:.4f}, {rebalance_ms}, {int(fetch_s * 1000)}, {mb / fetch_s:.4f}, {count / fetch_s:.4f}",
          flush=True)
    return wall, consumed, messages


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
