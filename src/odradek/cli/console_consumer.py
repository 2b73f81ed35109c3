"""`odradek console-consumer`: print records to stdout, like Kafka's kafka-console-consumer.sh.

Subscribes to `--topic` or `--include REGEX` in a consumer group (a random `console-consumer-NNNNN`
one, without commits, unless `--group` is given), or reads one `--partition` from `--offset`.
Records are written with Kafka's default formatter layout; at the end (max messages, idle
timeout, SIGINT/SIGTERM or a closed stdout) `Processed a total of N messages` goes to stderr.

`--zookeeper HOST:PORT[/chroot]`, the old (0.8-2.x) consumer's flag still found in guides, is served by
the same consumer: its bootstrap servers are the brokers registered under /brokers/ids.

`--formatter io.confluent.kafka.formatter.AvroMessageFormatter --property schema.registry.url=URL` (or
`--value-deserializer io.confluent.kafka.serializers.KafkaAvroDeserializer` with that property) prints values
in Confluent's wire format as Avro JSON, as Confluent's kafka-avro-console-consumer does (avro_formatter).
"""

from __future__ import annotations

import argparse
import random
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from odradek.admin_client.command import ArgParser, run_tool, silence_stdout
from odradek.admin_client.connect import add_bootstrap_flags, bootstrap_of, open_client, read_properties_file
from odradek.admin_client.errors import UsageError
from odradek.cli.avro_formatter import AVRO_DESERIALIZERS, AVRO_FORMATTERS, AvroCodec, RecordError
from odradek.cli.common import add_zookeeper_flag, parse_bool, parse_key_values

POLL_SLICE_S = 0.2
CLOSE_TIMEOUT_S = 10.0
DEFAULT_FORMATTERS = (
    "kafka.tools.DefaultMessageFormatter",
    "org.apache.kafka.tools.consumer.DefaultMessageFormatter",
)
TIMESTAMP_NAMES = {1: "CreateTime", 2: "LogAppendTime"}


def build_parser() -> ArgParser:
    parser = ArgParser("console-consumer", "Consume records from Kafka topics and print them to standard output.")
    add_bootstrap_flags(parser)
    add_zookeeper_flag(parser, "DEPRECATED (the old consumer): find the brokers through ZooKeeper (cluster mode only)",
                       "HOST:PORT[,HOST:PORT][/chroot]")
    parser.add_argument("--new-consumer", action="store_true", help="accepted for compatibility (0.9-0.10)")
    parser.add_argument("--topic", metavar="TOPIC", help="the topic to consume")
    parser.add_argument("--include", metavar="REGEX", help="regular expression of the topics to consume")
    parser.add_argument("--whitelist", dest="include_old", metavar="REGEX", help="DEPRECATED, use --include")
    parser.add_argument("--partition", type=int, metavar="P", help="consume only this partition")
    parser.add_argument(
        "--offset", metavar="OFFSET", help="with --partition: a non-negative offset, 'earliest' or 'latest' (default)"
    )
    parser.add_argument("--from-beginning", action="store_true", help="start at the earliest offset")
    parser.add_argument("--group", metavar="GROUP", help="the consumer group id")
    parser.add_argument("--max-messages", type=int, metavar="N", help="exit after N messages")
    parser.add_argument("--timeout-ms", type=int, metavar="MS", help="exit when no message arrives for MS ms")
    parser.add_argument(
        "--property",
        "--formatter-property",  # Kafka 4's name (KIP-1147)
        dest="property",
        action="append",
        metavar="PROP=VALUE",
        help="formatter properties: print.timestamp, print.key, print.offset, print.partition, print.headers, "
        "print.value, key.separator, line.separator, headers.separator, headers.key.separator, null.literal; "
        "with the Avro formatter also schema.registry.url, print.schema.ids, schema.id.separator, "
        "key.deserializer, basic.auth.user.info",
    )
    parser.add_argument("--consumer-property", action="append", metavar="PROP=VALUE", help="a consumer property")
    parser.add_argument("--consumer.config", dest="consumer_config", metavar="FILE", help="consumer properties file")
    parser.add_argument(
        "--isolation-level",
        choices=("read_committed", "read_uncommitted"),
        help="read_committed hides aborted transactional records (default read_uncommitted)",
    )
    parser.add_argument("--formatter", metavar="CLASS",
                        help="the default formatter, or io.confluent.kafka.formatter.AvroMessageFormatter (Avro in "
                        "Confluent's wire format printed as JSON; needs --property schema.registry.url=URL)")
    parser.add_argument("--skip-message-on-error", action="store_true",
                        help="a record the formatter cannot decode is reported on stderr and skipped, instead of "
                        "ending the consumer")
    parser.add_argument("--key-deserializer", metavar="CLASS",
                        help="with the Avro formatter, a class other than KafkaAvroDeserializer keeps keys as bytes "
                        "(as --property key.deserializer=...); otherwise accepted for compatibility")
    parser.add_argument("--value-deserializer", metavar="CLASS",
                        help="io.confluent.kafka.serializers.KafkaAvroDeserializer decodes values as the Avro "
                        "formatter does; any other is accepted for compatibility and bytes are printed")
    return parser


# --- options --------------------------------------------------------------------------------


@dataclass
class Source:
    """What to read: a subscription (topics or a regex) or one assigned partition."""

    topic: str | None
    pattern: str | None
    partition: int | None
    start: int  # for an assigned partition: OFFSET_BEGINNING, OFFSET_END or an offset


def parse_offset(text: str | None, from_beginning: bool) -> int:
    if text is None:
        return OFFSET_BEGINNING if from_beginning else OFFSET_END
    lowered = text.strip().lower()
    if lowered == "earliest":
        return OFFSET_BEGINNING
    if lowered == "latest":
        return OFFSET_END
    if lowered.isdigit():
        return int(lowered)
    raise UsageError(
        f"Error: The provided offset value '{text}' is incorrect. "
        "Valid values are 'earliest', 'latest', or a non-negative long."
    )


def source_of(opts: argparse.Namespace) -> Source:
    pattern = opts.include or opts.include_old
    if bool(opts.topic) == bool(pattern):
        raise UsageError("Error: Exactly one of --include/--topic is required.")
    if opts.partition is not None and not opts.topic:
        raise UsageError("Error: The topic is required when partition is specified.")
    if opts.offset is not None and opts.partition is None:
        raise UsageError("Error: The partition is required when offset is specified.")
    if opts.offset is not None and opts.from_beginning:
        raise UsageError("Error: Options from-beginning and offset cannot be specified together.")
    start = parse_offset(opts.offset, opts.from_beginning)
    return Source(opts.topic, pattern, opts.partition, start)


def subscription_pattern(regex: str) -> str:
    """Kafka's include list (commas mean '|', whole-name match) as a librdkafka regex."""
    cleaned = regex.strip().replace(",", "|").replace(" ", "").strip("\"'")
    return f"^({cleaned})$"


def group_of(opts: argparse.Namespace, props: dict[str, str], file_props: dict[str, str]) -> str | None:
    """The group id from --group, --consumer-property or --consumer.config, which must agree."""
    found = {v for v in (opts.group, props.get("group.id"), file_props.get("group.id")) if v}
    if len(found) > 1:
        raise UsageError(
            "Error: The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. "
            f"Detected group ids: {', '.join(sorted(repr(g) for g in found))}"
        )
    return found.pop() if found else None


def consumer_config(opts: argparse.Namespace, source: Source) -> dict[str, str]:
    """File < --consumer-property < flags, with the console consumer's own defaults."""
    file_props = read_properties_file(opts.consumer_config)
    props = parse_key_values(opts.consumer_property, "--consumer-property")
    group = group_of(opts, props, file_props)
    conf = {**file_props, **props}
    if group is None:
        conf["group.id"] = f"console-consumer-{random.randrange(10000, 100000)}"
        conf["enable.auto.commit"] = "false"
    else:
        conf["group.id"] = group
    reset = conf.get("auto.offset.reset")
    if opts.from_beginning and reset not in (None, "earliest", "smallest", "beginning"):
        raise UsageError(f"Error: Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}'")
    if opts.from_beginning or reset is None:
        conf["auto.offset.reset"] = "earliest" if opts.from_beginning else "latest"
    if opts.isolation_level:
        conf["isolation.level"] = opts.isolation_level
    conf["enable.auto.offset.store"] = "false"  # only printed records count as consumed
    conf.setdefault("client.id", "console-consumer")
    conf.setdefault("allow.auto.create.topics", "true")  # the Java consumer's default
    conf.pop("exclude.internal.topics", None)
    return conf


# --- formatting -------------------------------------------------------------------------------


@dataclass
class Formatter:
    """Kafka's DefaultMessageFormatter: optional timestamp, partition, offset, headers, key, value."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_literal: bytes = b"null"
    avro: AvroCodec | None = None  # Confluent's AvroMessageFormatter: keys and values decoded

    @classmethod
    def from_properties(cls, props: dict[str, str], avro: AvroCodec | None = None) -> Formatter:
        def text(name: str, default: str) -> bytes:
            return props.get(name, default).encode()

        return cls(
            avro=avro,
            print_timestamp=parse_bool(props.get("print.timestamp")),
            print_partition=parse_bool(props.get("print.partition")),
            print_offset=parse_bool(props.get("print.offset")),
            print_headers=parse_bool(props.get("print.headers")),
            print_key=parse_bool(props.get("print.key")),
            print_value=parse_bool(props.get("print.value"), default=True),
            key_separator=text("key.separator", "\t"),
            line_separator=text("line.separator", "\n"),
            headers_separator=text("headers.separator", ","),
            headers_key_separator=text("headers.key.separator", ":"),
            null_literal=text("null.literal", "null"),
        )

    def format(self, msg: Any) -> bytes:
        """One record as bytes, fields joined by key.separator, ended by line.separator."""
        fields: list[bytes] = []
        if self.print_timestamp:
            fields.append(self.timestamp(msg))
        if self.print_partition:
            fields.append(b"Partition:%d" % msg.partition())
        if self.print_offset:
            fields.append(b"Offset:%d" % msg.offset())
        if self.print_headers:
            fields.append(self.headers(msg.headers()))
        if self.print_key:
            key = msg.key()
            if self.avro is not None and self.avro.decode_key:
                key = self.avro.render(msg, key, "key")
            fields.append(self.nullable(key))
        if self.print_value:
            value = msg.value() if self.avro is None else self.avro.render(msg, msg.value(), "value")
            fields.append(self.nullable(value))
        return self.key_separator.join(fields) + self.line_separator

    def timestamp(self, msg: Any) -> bytes:
        kind, value = msg.timestamp()
        name = TIMESTAMP_NAMES.get(kind)
        return b"NO_TIMESTAMP" if name is None else f"{name}:{value}".encode()

    def headers(self, headers: list[tuple[str, bytes | None]] | None) -> bytes:
        if not headers:
            return b"NO_HEADERS"
        return self.headers_separator.join(
            name.encode() + self.headers_key_separator + self.nullable(value) for name, value in headers
        )

    def nullable(self, value: bytes | str | None) -> bytes:
        if value is None:
            return self.null_literal
        return value.encode() if isinstance(value, str) else value


# --- consuming --------------------------------------------------------------------------------


class StopFlag:
    """Set by SIGINT/SIGTERM; the loop checks it between polls."""

    def __init__(self) -> None:
        self.stopped = False

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.handle)

    def handle(self, signum: int, frame: Any) -> None:
        self.stopped = True


@dataclass
class Limits:
    max_messages: int | None
    timeout_ms: int | None


class Printer:
    """Writes formatted records to stdout; flushes per record on a terminal, else when idle."""

    def __init__(self, out: BinaryIO, formatter: Formatter, interactive: bool, skip_errors: bool = False) -> None:
        self.out = out
        self.formatter = formatter
        self.interactive = interactive
        self.skip_errors = skip_errors
        self.failed = False  # a record the formatter could not decode ended the run

    def write(self, msg: Any) -> None:
        try:
            line = self.formatter.format(msg)
        except RecordError as exc:  # Kafka's ConsoleConsumer: report and skip, or stop
            if not self.skip_errors:
                raise
            print(f"Error processing message, skipping this message: {exc}", file=sys.stderr)
            return
        self.out.write(line)
        if self.interactive:
            self.out.flush()

    def flush(self) -> None:
        self.out.flush()

    def idle(self) -> None:
        """Flush, and notice a reader that went away even when nothing is being written."""
        self.flush()
        if output_closed(self.out):
            raise BrokenPipeError("stdout was closed")


def output_closed(out: BinaryIO) -> bool:
    """True when `out` is a pipe whose reading end has been closed (poll reports an error)."""
    try:
        poller = select.poll()
        poller.register(out.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError, AttributeError):
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events)


class Reporter:
    """Prints each distinct non-fatal consumer error once, as a warning line."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def warn(self, err: KafkaError) -> None:
        text = err.str()
        if text not in self.seen:
            self.seen.add(text)
            print(f"WARNING: {text}", file=sys.stderr)


@dataclass
class Progress:
    """How many records were printed; kept outside the loop so an aborted loop still reports it."""

    count: int = 0


def consume(
    consumer: Consumer,
    printer: Printer,
    limits: Limits,
    stop: StopFlag,
    store: Callable[[Message], None],
    progress: Progress,
) -> None:
    """The poll loop: print records until max messages, the idle timeout or a stop signal."""
    idle_since = time.monotonic()
    reporter = Reporter()
    while not stop.stopped and (limits.max_messages is None or progress.count < limits.max_messages):
        msg = consumer.poll(POLL_SLICE_S)
        if msg is None:
            printer.idle()
            if limits.timeout_ms is not None and (time.monotonic() - idle_since) * 1000 >= limits.timeout_ms:
                break
            continue
        if (error := msg.error()) is not None:
            handle_error(error, reporter)
            continue
        printer.write(msg)
        store(msg)
        progress.count += 1
        idle_since = time.monotonic()


def handle_error(err: KafkaError, reporter: Reporter) -> None:
    if err.code() == KafkaError._PARTITION_EOF:
        return
    if err.fatal():
        raise KafkaException(err)
    reporter.warn(err)


def start(consumer: Consumer, source: Source) -> None:
    if source.partition is not None:
        assert source.topic is not None
        consumer.assign([TopicPartition(source.topic, source.partition, source.start)])
    elif source.pattern is not None:
        consumer.subscribe([subscription_pattern(source.pattern)])
    else:
        assert source.topic is not None
        consumer.subscribe([source.topic])


def check_flags(opts: argparse.Namespace) -> tuple[str, Source]:
    if opts.zookeeper and opts.bootstrap_server:
        raise UsageError("Error: Only one of --bootstrap-server or --zookeeper must be specified")
    bootstrap = opts.zookeeper if opts.zookeeper else bootstrap_of(opts)
    if opts.formatter and opts.formatter not in DEFAULT_FORMATTERS + AVRO_FORMATTERS:
        raise UsageError(f"Error: formatter '{opts.formatter}' is not available; the default one and "
                         f"{', '.join(AVRO_FORMATTERS)} are")
    if opts.max_messages is not None and opts.max_messages < 0:
        raise UsageError("Error: --max-messages must not be negative")
    return bootstrap, source_of(opts)


def run_consumer(consumer: Consumer, source: Source, printer: Printer, limits: Limits, commit: bool) -> int:
    """Consume until a limit or a signal; returns the count of printed records."""
    stop = StopFlag()
    stop.install()

    def store(msg: Message) -> None:
        if commit:
            consumer.store_offsets(message=msg)

    start(consumer, source)
    progress = Progress()
    try:
        consume(consumer, printer, limits, stop, store, progress)
        printer.flush()
    except RecordError as exc:
        printer.flush()
        print(f"Error processing message, terminating consumer process: {exc}", file=sys.stderr)
        printer.failed = True
    except BrokenPipeError:
        silence_stdout()
    finally:
        print(f"Processed a total of {progress.count} messages", file=sys.stderr)
        close_quietly(consumer)
    return progress.count


def close_quietly(consumer: Consumer, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
    """Close (commit, leave the group) without hanging on an unreachable broker.

    librdkafka's close can block for a session timeout when the coordinator is gone, so it runs
    in a daemon thread that is abandoned after `timeout_s`.
    """

    def close() -> None:
        try:
            consumer.close()
        except Exception:
            pass

    closer = threading.Thread(target=close, name="consumer-close", daemon=True)
    closer.start()
    closer.join(timeout_s)
    if closer.is_alive():
        print(
            f"WARNING: the consumer did not close within {int(timeout_s * 1000)} ms; "
            "its last offsets may not be committed",
            file=sys.stderr,
        )


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    bootstrap, source = check_flags(opts)
    conf = consumer_config(opts, source)
    if opts.zookeeper:
        bootstrap = brokers_in_zookeeper(opts.zookeeper)
    commit = parse_bool(conf.get("enable.auto.commit"), default=True)
    formatter = formatter_of(opts)
    consumer, _ = open_client(Consumer, bootstrap, conf, on_unreachable=close_quietly)
    printer = Printer(sys.stdout.buffer, formatter, sys.stdout.isatty(), opts.skip_message_on_error)
    run_consumer(consumer, source, printer, Limits(opts.max_messages, opts.timeout_ms), commit)
    return 1 if printer.failed else 0


def formatter_of(opts: argparse.Namespace) -> Formatter:
    """The formatter of --formatter, --property and --value-deserializer (Avro when either asks for it)."""
    props = parse_key_values(opts.property)
    avro = None
    value_deserializer = opts.value_deserializer or props.get("value.deserializer")
    if opts.formatter in AVRO_FORMATTERS or value_deserializer in AVRO_DESERIALIZERS:
        # Confluent's formatter decodes keys too unless key.deserializer names another deserializer
        key_deserializer = props.get("key.deserializer") or opts.key_deserializer
        decode_key = opts.formatter in AVRO_FORMATTERS and key_deserializer in (None, *AVRO_DESERIALIZERS)
        try:
            avro = AvroCodec.from_properties(props, decode_key=decode_key)
        except ValueError as exc:
            raise UsageError(f"Error: {exc}") from None
    return Formatter.from_properties(props, avro)


def brokers_in_zookeeper(connect: str) -> str:
    """The old consumer's --zookeeper: consume from the brokers registered there."""
    from odradek.cli.zkadmin import bootstrap_from_zookeeper  # kazoo only when asked for

    bootstrap = bootstrap_from_zookeeper(connect)
    print(
        f"WARNING: --zookeeper is deprecated (the old consumer is gone): consuming from the brokers registered "
        f"in ZooKeeper at {connect} ({bootstrap}); use --bootstrap-server instead",
        file=sys.stderr,
    )
    return bootstrap


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
