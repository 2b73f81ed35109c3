"""`odradek console-producer`: send lines from stdin to a topic, like Kafka's kafka-console-producer.sh.

One record per line. With `--property parse.key=true` a line is `key<key.separator>value`; with
`parse.headers=true` it starts with `h1:v1,h2:v2<headers.delimiter>`. At end of input the producer
flushes and exits 0, or 1 when any record could not be delivered (one stderr line per failure).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import add_bootstrap_flags, bootstrap_of, open_client, read_properties_file
from odradek.admin_client.errors import CliError, UsageError, kafka_message
from odradek.cli.common import parse_bool, parse_key_values

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DEFAULT_DELIVERY_TIMEOUT_MS = 30_000

# Flag dest -> librdkafka property, for flags that map one to one.
FLAG_PROPERTIES = {
    "request_required_acks": "acks",
    "compression_codec": "compression.type",
    "batch_size": "batch.num.messages",
    "timeout": "linger.ms",
    "request_timeout_ms": "request.timeout.ms",
    "message_send_max_retries": "retries",
    "retry_backoff_ms": "retry.backoff.ms",
    "metadata_expiry_ms": "metadata.max.age.ms",
    "socket_buffer_size": "socket.send.buffer.bytes",
    "max_partition_memory_bytes": "batch.size",
}


def build_parser() -> ArgParser:
    parser = ArgParser(
        "console-producer",
        "Read data from standard input and publish it to a topic, one record per line.",
    )
    add_bootstrap_flags(parser, broker_list=True)
    parser.add_argument("--topic", metavar="TOPIC", help="REQUIRED: the topic to produce to")
    parser.add_argument(
        "--property",
        action="append",
        metavar="PROP=VALUE",
        help="line reader properties: parse.key, key.separator, parse.headers, headers.delimiter, "
        "headers.separator, headers.key.separator, null.marker, ignore.error",
    )
    parser.add_argument("--reader-config", metavar="FILE", help="line reader properties file")
    parser.add_argument("--producer-property", action="append", metavar="PROP=VALUE", help="a producer property")
    parser.add_argument("--producer.config", dest="producer_config", metavar="FILE", help="producer properties file")
    _add_tuning_flags(parser)
    return parser


def _add_tuning_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--request-required-acks", metavar="ACKS", help="acks: -1/all, 0 or 1 (default -1)")
    parser.add_argument(
        "--compression-codec",
        nargs="?",
        const="gzip",
        choices=CODECS,
        metavar="CODEC",
        help="none, gzip, snappy, lz4 or zstd; without a value: gzip",
    )
    parser.add_argument("--sync", action="store_true", help="send each record synchronously")
    parser.add_argument("--batch-size", type=int, metavar="N", help="records per batch when asynchronous")
    parser.add_argument("--timeout", type=int, metavar="MS", help="how long a record may wait for its batch (linger)")
    parser.add_argument("--request-timeout-ms", type=int, metavar="MS", help="broker acknowledgement timeout")
    parser.add_argument("--message-send-max-retries", type=int, metavar="N", help="retries before giving up")
    parser.add_argument("--retry-backoff-ms", type=int, metavar="MS", help="wait before a retry")
    parser.add_argument("--metadata-expiry-ms", type=int, metavar="MS", help="metadata refresh interval")
    parser.add_argument("--socket-buffer-size", type=int, metavar="BYTES", help="TCP send buffer size")
    parser.add_argument("--max-partition-memory-bytes", type=int, metavar="BYTES", help="batch size in bytes")
    parser.add_argument("--max-block-ms", type=int, metavar="MS", help="accepted for compatibility; ignored")
    parser.add_argument("--max-memory-bytes", type=int, metavar="BYTES", help="accepted for compatibility; ignored")
    parser.add_argument("--line-reader", metavar="CLASS", help="only the default line reader is available")


# --- line parsing -----------------------------------------------------------------------------


@dataclass
class LineFormat:
    """How a line of input becomes a record (Kafka's LineMessageReader properties)."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_marker: bytes | None = None
    ignore_error: bool = False

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> LineFormat:
        def sep(name: str, default: str) -> bytes:
            return props.get(name, default).encode()

        marker = props.get("null.marker")
        return cls(
            parse_key=parse_bool(props.get("parse.key")),
            key_separator=sep("key.separator", "\t"),
            parse_headers=parse_bool(props.get("parse.headers")),
            headers_delimiter=sep("headers.delimiter", "\t"),
            headers_separator=sep("headers.separator", ","),
            headers_key_separator=sep("headers.key.separator", ":"),
            null_marker=marker.encode() if marker else None,
            ignore_error=parse_bool(props.get("ignore.error")),
        )


@dataclass
class Line:
    """One parsed input line."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, str | bytes | None]] = field(default_factory=list)


class LineError(CliError):
    """A line that does not fit the format."""


def parse_line(raw: bytes, number: int, fmt: LineFormat) -> Line:
    """Split one line (without its newline) into headers, key and value."""
    rest = raw
    headers: list[tuple[str, str | bytes | None]] = []
    if fmt.parse_headers:
        head, found, rest = _cut(rest, fmt.headers_delimiter, number, "headers delimiter", fmt)
        headers = parse_headers(head, fmt) if found else []
    key: bytes | None = None
    if fmt.parse_key:
        key, found, rest = _cut(rest, fmt.key_separator, number, "key separator", fmt)
        if not found:
            key = None
    return Line(_nullable(key, fmt), _nullable(rest, fmt), headers)


def _cut(text: bytes, sep: bytes, number: int, what: str, fmt: LineFormat) -> tuple[bytes, bool, bytes]:
    """(before, found, after) of the first `sep`; a missing separator fails unless ignore.error."""
    before, found, after = text.partition(sep)
    if found:
        return before, True, after
    if fmt.ignore_error:
        return b"", False, text
    shown = text.decode("utf-8", "replace")
    raise LineError(f"Error: No {what} found on line number {number}: '{shown}'")


def parse_headers(text: bytes, fmt: LineFormat) -> list[tuple[str, str | bytes | None]]:
    headers: list[tuple[str, str | bytes | None]] = []
    for item in text.split(fmt.headers_separator) if text else []:
        name, found, value = item.partition(fmt.headers_key_separator)
        headers.append((name.decode("utf-8", "replace"), _nullable(value, fmt) if found else None))
    return headers


def _nullable(value: bytes | None, fmt: LineFormat) -> bytes | None:
    if value is None or (fmt.null_marker is not None and value == fmt.null_marker):
        return None
    return value


def read_lines(stream: BinaryIO, prompt: bool) -> Iterator[bytes]:
    """Lines of `stream` without their line ending; '>' prompts on a terminal."""
    while True:
        if prompt:
            sys.stdout.write(">")
            sys.stdout.flush()
        raw = stream.readline()
        if not raw:
            return
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        yield raw


# --- producing --------------------------------------------------------------------------------


def producer_config(opts: argparse.Namespace) -> dict[str, str]:
    """File < --producer-property < explicit flags; Kafka's defaults where nothing is set."""
    conf = read_properties_file(opts.producer_config)
    conf.update(parse_key_values(opts.producer_property, "--producer-property"))
    for dest, prop in FLAG_PROPERTIES.items():
        value = getattr(opts, dest)
        if value is not None:
            conf[prop] = str(value)
    conf.setdefault("acks", "-1")
    conf.setdefault("partitioner", "murmur2_random")  # the Java client's key -> partition mapping
    if "delivery.timeout.ms" not in conf and "message.timeout.ms" not in conf:
        conf["message.timeout.ms"] = str(DEFAULT_DELIVERY_TIMEOUT_MS)
    conf.setdefault("client.id", "console-producer")
    return conf


def delivery_timeout_ms(conf: dict[str, Any]) -> int:
    value = conf.get("delivery.timeout.ms", conf.get("message.timeout.ms", DEFAULT_DELIVERY_TIMEOUT_MS))
    try:
        return int(value)
    except ValueError:
        return DEFAULT_DELIVERY_TIMEOUT_MS


class Sender:
    """Wraps the Producer: queues lines, counts and reports delivery failures."""

    def __init__(self, producer: Producer, topic: str, sync: bool, flush_timeout_ms: int) -> None:
        self.producer = producer
        self.topic = topic
        self.sync = sync
        self.flush_timeout = flush_timeout_ms / 1000 + 5
        self.failures = 0

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            return
        self.failures += 1
        key = msg.key()
        shown_key = "null" if key is None else key.decode("utf-8", "replace")
        size = len(msg.value() or b"")
        print(
            f"Error when sending message to topic {self.topic} with key: {shown_key}, "
            f"value: {size} bytes with error: {err.str()}",
            file=sys.stderr,
        )

    def send(self, line: Line) -> None:
        while True:
            try:
                self.producer.produce(
                    self.topic, value=line.value, key=line.key, headers=line.headers or None,
                    on_delivery=self.on_delivery,
                )
                break
            except BufferError:  # local queue full: let deliveries drain
                self.producer.poll(0.1)
            except KafkaException as exc:
                self.failures += 1
                print(f"Error when sending message to topic {self.topic}: {kafka_message(exc)}", file=sys.stderr)
                return
        if self.sync:
            self.flush()
        else:
            self.producer.poll(0)

    def flush(self) -> int:
        """Wait for outstanding deliveries; returns how many are still undelivered."""
        deadline = time.monotonic() + self.flush_timeout
        remaining = len(self.producer)
        while remaining and time.monotonic() < deadline:
            remaining = self.producer.flush(min(0.5, max(0.0, deadline - time.monotonic())))
        return remaining


def produce_all(sender: Sender, fmt: LineFormat, stream: BinaryIO, prompt: bool) -> None:
    for number, raw in enumerate(read_lines(stream, prompt), start=1):
        sender.send(parse_line(raw, number, fmt))


def finish(sender: Sender) -> int:
    left = sender.flush()
    if left:
        print(f"Error: {left} records were not delivered within {int(sender.flush_timeout * 1000)} ms",
              file=sys.stderr)
        return 1
    return 1 if sender.failures else 0


def check_topic(producer: Producer, topic: str, timeout_s: float = 10.0) -> None:
    """Fail at once, naming the topic, when the cluster neither has it nor creates it on first use;
    otherwise every record would wait out delivery.timeout.ms in silence. A metadata request for the
    topic asks the broker to create it (allow.auto.create.topics): only a broker with
    auto.create.topics.enable=false answers UNKNOWN_TOPIC_OR_PARTITION."""
    try:
        found = producer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    except KafkaException:
        return  # the broker is slow to answer: the records' own delivery reports will tell
    if found is not None and found.error is not None and found.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        raise CliError(f"Error: topic '{topic}' does not exist and the cluster does not create topics on first "
                       f"use (auto.create.topics.enable=false): create it with "
                       f"`odradek topics --create --topic {topic}`")


def check_flags(opts: argparse.Namespace) -> str:
    if not opts.topic:
        raise UsageError('Error: Missing required argument "[topic]"')
    if opts.line_reader and not opts.line_reader.endswith("LineMessageReader"):
        raise UsageError(f"Error: line reader '{opts.line_reader}' is not available; only the default one is")
    return bootstrap_of(opts)


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    bootstrap = check_flags(opts)
    reader_props = read_properties_file(opts.reader_config)
    reader_props.update(parse_key_values(opts.property))
    fmt = LineFormat.from_properties(reader_props)
    conf = producer_config(opts)
    producer, _ = open_client(Producer, bootstrap, conf)
    check_topic(producer, opts.topic)
    sender = Sender(producer, opts.topic, opts.sync, delivery_timeout_ms(conf))
    try:
        produce_all(sender, fmt, sys.stdin.buffer, sys.stdin.isatty())
    except (LineError, KeyboardInterrupt) as exc:
        finish(sender)
        if isinstance(exc, LineError):
            raise
        return 130
    return finish(sender)


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
