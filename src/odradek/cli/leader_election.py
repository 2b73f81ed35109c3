"""`odradek leader-election`: elect preferred or unclean leaders, like Kafka's kafka-leader-election.sh.

    odradek leader-election --bootstrap-server H:P --election-type PREFERRED|UNCLEAN
        (--all-topic-partitions | --topic T --partition P | --path-to-json-file F)

The election goes through confluent-kafka's AdminClient.elect_leaders (the ElectLeaders API); the
output lines are Kafka's LeaderElectionCommand's. Partitions that already have the wanted leader are
reported as such; any other per-partition error makes the exit code 1.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import add_bootstrap_flags, open_client, read_properties_file
from odradek.admin_client.errors import CliError, UsageError, kafka_message
from odradek.cluster.elections import parse_election_json

TIMEOUT_S = 30.0
ElectionOutcome = dict[tuple[str, int], tuple[str, str] | None]  # partition -> (error name, message) | None

# Java exception classes whose names do not follow the error name.
_JAVA_NAMES = {
    "REQUEST_TIMED_OUT": "TimeoutException",
    "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
    "TOPIC_EXCEPTION": "InvalidTopicException",
    "UNKNOWN_TOPIC_OR_PART": "UnknownTopicOrPartitionException",
    "_TIMED_OUT": "TimeoutException",
}


def java_exception(name: str, message: str) -> str:
    """How Kafka's tool prints a per-partition error: the Java exception's toString."""
    cls = _JAVA_NAMES.get(name) or "".join(w.capitalize() for w in name.strip("_").split("_")) + "Exception"
    return f"org.apache.kafka.common.errors.{cls}: {message}"


def build_parser() -> ArgParser:
    parser = ArgParser(
        "leader-election",
        "This tool attempts to elect a new leader for a set of topic partitions. The type of elections "
        "supported are preferred replicas and unclean replicas.",
    )
    add_bootstrap_flags(parser)
    parser.add_argument("--admin.config", dest="admin_config", metavar="FILE",
                        help="configuration properties file to pass to the admin client")
    parser.add_argument("--election-type", metavar="TYPE",
                        help='REQUIRED: "preferred" (the preferred replica leads, if in sync) or "unclean" '
                             "(only for partitions without a live leader: any live replica may lead)")
    parser.add_argument("--all-topic-partitions", action="store_true",
                        help="elect on every partition (not with --topic or --path-to-json-file)")
    parser.add_argument("--topic", metavar="TOPIC", help="the topic of the partition to elect a leader for")
    parser.add_argument("--partition", metavar="ID", help="the partition id (REQUIRED with --topic)")
    parser.add_argument("--path-to-json-file", metavar="FILE",
                        help='JSON file listing partitions: {"partitions": [{"topic": "foo", "partition": 1}]}')
    return parser


def validate(opts: argparse.Namespace) -> None:
    """Kafka's LeaderElectionCommand checks, worded as it words them."""
    missing = [name for name, value in (("bootstrap-server", opts.bootstrap_server),
                                        ("election-type", opts.election_type)) if not value]
    if missing:
        raise UsageError(f"Error: Missing required option(s): {', '.join(missing)}")
    chosen = [opts.topic is not None, opts.all_topic_partitions, opts.path_to_json_file is not None]
    if sum(chosen) != 1:
        raise UsageError("Error: One and only one of the following options is required: "
                         "topic, all-topic-partitions, path-to-json-file")
    if opts.topic is not None and opts.partition is None:
        raise UsageError("Error: Missing required option(s): partition")
    if opts.topic is None and opts.partition is not None:
        raise UsageError("Error: Option partition is only allowed if topic is used")


def election_type(value: str) -> ElectionType:
    try:
        return ElectionType[value.strip().upper()]
    except KeyError:
        raise UsageError(f"Error: --election-type must be PREFERRED or UNCLEAN, got '{value}'") from None


def read_election_file(path: str) -> list[tuple[str, int]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"Error: cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise CliError("Error: Replica election data is empty") from None
    try:
        return parse_election_json(data)
    except ValueError as exc:
        raise CliError(f"Error: {exc}") from None


def wanted_partitions(opts: argparse.Namespace) -> list[tuple[str, int]] | None:
    if opts.path_to_json_file is not None:
        return read_election_file(opts.path_to_json_file)
    if opts.topic is not None:
        try:
            return [(opts.topic, int(opts.partition))]
        except ValueError:
            raise UsageError(f"Error: --partition expects an integer, got '{opts.partition}'") from None
    return None


def elect(bootstrap: str, etype: ElectionType, partitions: list[tuple[str, int]] | None,
          props: dict[str, str]) -> ElectionOutcome:
    """Run the election; per partition None (done) or (error name, message)."""
    # socket.timeout.ms bounds the request and the broker-side wait (confluent-kafka 2.16's elect_leaders
    # does not take its timeout keywords)
    client, _ = open_client(AdminClient, bootstrap, props, defaults={"socket.timeout.ms": int(TIMEOUT_S * 1000)})
    tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    future = client.elect_leaders(etype, tps)
    try:
        results = future.result(timeout=TIMEOUT_S + 5)
    except TimeoutError:
        raise CliError("Timeout waiting for election results") from None
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if getattr(err, "name", lambda: "")() in ("_TIMED_OUT", "REQUEST_TIMED_OUT"):
            raise CliError("Timeout waiting for election results") from None
        raise CliError(f"Error while making request: {kafka_message(exc)}") from None
    out: ElectionOutcome = {}
    for tp, error in results.items():
        if error is None:
            out[(tp.topic, tp.partition)] = None
        else:
            kerr = error if isinstance(error, KafkaError) else (getattr(error, "args", None) or [None])[0]
            if isinstance(kerr, KafkaError):
                out[(tp.topic, tp.partition)] = (kerr.name(), kerr.str())
            else:
                out[(tp.topic, tp.partition)] = ("UNKNOWN_SERVER_ERROR", str(error))
    return out


def report(outcome: ElectionOutcome, success: str, noop: str, failure: Callable[[str, str], str]) -> int:
    """Print Kafka's three kinds of lines; returns the number of failed partitions."""
    ordered = sorted(outcome.items())
    done = [f"{t}-{p}" for (t, p), r in ordered if r is None]
    skipped = [f"{t}-{p}" for (t, p), r in ordered if r is not None and r[0] == "ELECTION_NOT_NEEDED"]
    failed = [(f"{t}-{p}", r) for (t, p), r in ordered if r is not None and r[0] != "ELECTION_NOT_NEEDED"]
    if done:
        print(f"{success} {', '.join(done)}")
    if skipped:
        print(f"{noop} {', '.join(skipped)}")
    for name, (err, msg) in failed:
        print(failure(name, java_exception(err, msg)))
    return len(failed)


def main(argv: list[str]) -> int:
    def body() -> int:
        opts = build_parser().parse_args(argv)
        validate(opts)
        etype = election_type(opts.election_type)
        partitions = wanted_partitions(opts)
        props = read_properties_file(opts.admin_config)
        outcome = elect(opts.bootstrap_server, etype, partitions, props)
        kind = etype.name
        failed = report(
            outcome,
            f"Successfully completed leader election ({kind}) for partitions",
            "Valid replica already elected for partitions",
            lambda tp, exc: f"Error completing leader election ({kind}) for partition: {tp}: {exc}",
        )
        if failed:
            raise CliError(f"Error: {failed} replica(s) could not be elected")
        return 0

    return run_tool(body)
