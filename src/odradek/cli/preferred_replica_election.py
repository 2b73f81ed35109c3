"""`odradek preferred-replica-election`: Kafka 2.x's kafka-preferred-replica-election.sh.

    odradek preferred-replica-election (--zookeeper H:P[/chroot] | --bootstrap-server H:P)
        [--path-to-json-file F]

With --zookeeper it writes `/admin/preferred_replica_election` (the controller elects, then deletes the
znode); with --bootstrap-server it calls the ElectLeaders API. Without a JSON file every partition is
named. Deprecated in Kafka for kafka-leader-election.sh (`odradek leader-election`).
"""

from __future__ import annotations

import argparse
import json

from confluent_kafka import ElectionType

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import read_properties_file
from odradek.admin_client.errors import CliError, UsageError
from odradek.cli.common import add_zookeeper_flag
from odradek.cli.leader_election import elect, read_election_file, report
from odradek.cli.zk_session import ZkSession, create_json, read_json, read_topic, topic_names
from odradek.cluster import znodes as zn
from odradek.cluster.elections import TopicPartition, election_json
from odradek.cluster.store import MetadataStore

ZK_TIMEOUT_MS = 30_000


def build_parser() -> ArgParser:
    parser = ArgParser(
        "preferred-replica-election",
        "This tool helps to causes leadership for each partition to be transferred back to the 'preferred "
        "replica', it can be used to balance leadership among the servers.",
    )
    add_zookeeper_flag(parser, "DEPRECATED: the ZooKeeper connect string; REQUIRED unless --bootstrap-server")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT",
                        help="the broker(s) to connect to; REQUIRED unless --zookeeper is given")
    parser.add_argument("--admin.config", dest="admin_config", metavar="FILE",
                        help="admin client properties file (with --bootstrap-server)")
    parser.add_argument("--path-to-json-file", metavar="FILE",
                        help='JSON file listing partitions: {"partitions": [{"topic": "foo", "partition": 1}]}; '
                             "defaults to all existing partitions")
    return parser


def validate(opts: argparse.Namespace) -> None:
    if bool(opts.zookeeper) == bool(opts.bootstrap_server):
        raise UsageError("Error: Exactly one of 'bootstrap-server' or 'zookeeper' must be provided")
    if opts.admin_config and not opts.bootstrap_server:
        raise UsageError("Error: Option admin.config is only allowed with bootstrap-server")


def scala_set(partitions: list[tuple[str, int]]) -> str:
    return f"Set({', '.join(f'{t}-{p}' for t, p in partitions)})"


async def _existing(
    store: MetadataStore, wanted: list[TopicPartition] | None
) -> tuple[list[TopicPartition], list[TopicPartition]]:
    """The partitions to elect, and those named in `wanted` that do not exist (all partitions when None)."""
    existing: set[TopicPartition] = set()
    for name in {t for t, _ in wanted} if wanted is not None else await topic_names(store):
        topic = await read_topic(store, name)
        if topic is not None:
            existing |= {(name, p) for p in topic.partitions}
    if wanted is None:
        return sorted(existing), []
    return [tp for tp in wanted if tp in existing], [tp for tp in wanted if tp not in existing]


def via_zookeeper(connect: str, wanted: list[tuple[str, int]] | None) -> int:
    print("Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.")
    print("Use --bootstrap-server instead to specify a broker to connect to.")
    with ZkSession(connect, ZK_TIMEOUT_MS) as zk:
        valid, invalid = zk.run(_existing, wanted)
        data = election_json(valid)
        if not zk.run(create_json, zn.PREFERRED_REPLICA_ELECTION, data):
            running = zk.run(read_json, zn.PREFERRED_REPLICA_ELECTION) or {}
            names = ",".join(f"{p.get('topic')}-{p.get('partition')}" for p in running.get("partitions", []))
            raise CliError(f"Error: Preferred replica leader election currently in progress for {names}. "
                           "Aborting operation")
    print(f"Created preferred replica election path with {json.dumps(data, separators=(',', ':'))}")
    print(f"Successfully started preferred replica election for partitions {scala_set(valid)}")
    for t, p in invalid:
        print(f"Skipping preferred replica leader election for partition {t}-{p} since it doesn't exist.")
    return 0


def via_admin_client(bootstrap: str, wanted: list[tuple[str, int]] | None, props: dict[str, str]) -> int:
    outcome = elect(bootstrap, ElectionType.PREFERRED, wanted, props)
    failed = report(
        outcome,
        "Successfully completed preferred leader election for partitions",
        "Preferred replica already elected for partitions",
        lambda tp, exc: f"Error completing preferred leader election for partition: {tp}: {exc}",
    )
    if failed:
        raise CliError(f"Error: {failed} preferred replica(s) could not be elected")
    return 0


def main(argv: list[str]) -> int:
    def body() -> int:
        opts = build_parser().parse_args(argv)
        validate(opts)
        wanted = read_election_file(opts.path_to_json_file) if opts.path_to_json_file else None
        if opts.zookeeper:
            return via_zookeeper(opts.zookeeper, wanted)
        return via_admin_client(opts.bootstrap_server, wanted, read_properties_file(opts.admin_config))

    return run_tool(body)
