"""`odradek producer-perf-test`: Kafka's kafka-producer-perf-test.sh. Sends --num-records records of
--record-size random bytes (or lines of --payload-file) at --throughput records/s (-1: as fast as
possible), printing a line every five seconds and a summary with latency percentiles, in Kafka's words.

    odradek producer-perf-test --topic t --num-records 1000000 --record-size 100 --throughput -1 \\
        --producer-props bootstrap.servers=127.0.0.1:9092 acks=1
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import KafkaError, Message, Producer

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import open_client, read_properties_file
from odradek.admin_client.errors import CliError, UsageError
from odradek.cli.common import parse_key_values
from odradek.cli.perf_stats import ProducerStats, Throttle


def build_parser() -> ArgParser:
    p = ArgParser("producer-perf-test", __doc__ or "")
    p.add_argument("--topic", required=True, help="REQUIRED: the topic to produce to")
    p.add_argument("--num-records", type=int, required=True, help="REQUIRED: how many records to send")
    p.add_argument("--record-size", type=int, help="bytes per record (one of --record-size, --payload-file)")
    p.add_argument("--payload-file", help="a file of payloads, one picked at random per record")
    p.add_argument("--payload-delimiter", default="\\n", help="what separates the payloads of --payload-file "
                                                               "(default: a line break)")
    p.add_argument("--throughput", type=float, required=True,
                   help="REQUIRED: records/s to aim for; -1 for no limit")
    p.add_argument("--producer-props", nargs="+", metavar="PROP=VALUE", help="producer configs, e.g. "
                   "bootstrap.servers=127.0.0.1:9092 acks=all")
    p.add_argument("--producer.config", dest="producer_config", help="a producer config properties file")
    p.add_argument("--bootstrap-server", help="the server(s) to connect to (or bootstrap.servers in the props)")
    p.add_argument("--print-metrics", action="store_true", help="print the client's statistics at the end")
    p.add_argument("--transactional-id", help="not supported yet: Odradek has no transactions")
    p.add_argument("--transaction-duration-ms", type=int, help="not supported yet")
    return p


def payloads(opts: argparse.Namespace) -> list[bytes]:
    if (opts.record_size is None) == (opts.payload_file is None):
        raise UsageError("Error: either --record-size or --payload-file must be specified but not both.")
    if opts.num_records <= 0:
        raise UsageError(f"Error: --num-records must be positive, not {opts.num_records}")
    if opts.record_size is not None:
        if opts.record_size < 0:
            raise UsageError(f"Error: --record-size must not be negative, not {opts.record_size}")
        rng = random.Random()
        return [bytes(rng.randrange(65, 91) for _ in range(opts.record_size))]  # A-Z, as Kafka's tool
    delimiter = opts.payload_delimiter.encode().decode("unicode_escape")
    try:
        text = Path(opts.payload_file).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"Error: cannot read --payload-file {opts.payload_file}: {exc.strerror}") from None
    found = [p.encode() for p in text.split(delimiter) if p]
    if not found:
        raise CliError(f"Error: --payload-file {opts.payload_file} holds no payloads")
    print(f"Reading payloads from: {Path(opts.payload_file).resolve()}")
    print(f"Number of messages read: {len(found)}")
    return found


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    if opts.transactional_id or opts.transaction_duration_ms:
        raise CliError("Error: transactions are not supported by Odradek yet (--transactional-id)")
    choices = payloads(opts)
    conf = read_properties_file(opts.producer_config)
    conf.update(parse_key_values(opts.producer_props, "--producer-props"))
    bootstrap = opts.bootstrap_server or conf.pop("bootstrap.servers", None)
    if not bootstrap:
        raise UsageError("Error: either --bootstrap-server or bootstrap.servers in --producer-props or "
                         "--producer.config must be given")
    last_stats: list[str] = []  # librdkafka's statistics (JSON), for --print-metrics
    if opts.print_metrics:
        conf.setdefault("statistics.interval.ms", "1000")
    producer, _ = open_client(Producer, bootstrap, conf,
                              defaults={"stats_cb": last_stats.append} if opts.print_metrics else None)
    stats = ProducerStats(time.monotonic())
    failures: list[str] = []

    def report(line: str) -> None:
        print(line, flush=True)

    def delivered(sent_at: float, size: int) -> Callable[[KafkaError | None, Message], None]:
        def callback(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                if len(failures) < 5:
                    failures.append(err.str())
                return
            now = time.monotonic()
            stats.record((now - sent_at) * 1000, size, now, report)
        return callback

    throttle = Throttle(opts.throughput, stats.start)
    single = choices[0] if len(choices) == 1 else None
    rng = random.Random()
    for i in range(opts.num_records):
        value = single if single is not None else rng.choice(choices)
        while True:
            try:
                producer.produce(opts.topic, value, on_delivery=delivered(time.monotonic(), len(value)))
                break
            except BufferError:  # the client's queue is full: let deliveries drain
                producer.poll(0.01)
        producer.poll(0)
        throttle.pace(i + 1, time.monotonic())
    left = producer.flush(60)
    print(stats.summary(time.monotonic()), flush=True)
    if last_stats:
        print(last_stats[-1])
    if failures or left:
        print(f"Error: {opts.num_records - stats.count} records were not delivered"
              f"{': ' + failures[0] if failures else ''}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
