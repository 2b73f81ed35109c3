"""Entry point of the `odradek` command: routes `odradek <tool> [args]` to the tool's module.

Tool modules are imported lazily, so a broken or slow import in one tool never affects another,
and `odradek --help` stays fast. Each tool is a function `(argv: list[str]) -> int` of its module:
`main` unless the table names another (the three ZooKeeper tools share one module).
"""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import NamedTuple


class Tool(NamedTuple):
    """One entry of the dispatch table."""

    module: str
    summary: str
    function: str = "main"


TOOLS: dict[str, Tool] = {
    "server-start": Tool("odradek.cli.server_start", "start a broker from a server.properties file"),
    "server-stop": Tool("odradek.cli.server_stop", "stop brokers running on this machine"),
    "topics": Tool("odradek.cli.topics", "create, list, describe, alter and delete topics"),
    "configs": Tool("odradek.cli.configs",
                    "describe and alter topic, broker (dynamic), broker-logger and group configs"),
    "acls": Tool("odradek.cli.acls", "add, remove and list ACLs (brokers with authorizer.class.name)"),
    "console-producer": Tool("odradek.cli.console_producer", "send lines read from stdin to a topic"),
    "console-consumer": Tool("odradek.cli.console_consumer", "print records of topics to stdout"),
    "consumer-groups": Tool("odradek.cli.consumer_groups",
                            "list, describe and delete consumer groups; reset or delete their offsets"),
    "share-groups": Tool("odradek.cli.share_groups",
                         "list, describe and delete share groups; reset or delete their offsets"),
    "connect-standalone": Tool("odradek.cli.connect_standalone",
                               "run a standalone Kafka Connect worker with the connectors of the files given"),
    "connect-distributed": Tool("odradek.cli.connect_distributed",
                                "run a distributed Kafka Connect worker (the Connect group of group.id)"),
    "schema-registry": Tool("odradek.cli.schema_registry",
                            "run a schema registry with Confluent's REST API from a schema-registry.properties"),
    "schemas": Tool("odradek.cli.schemas",
                    "list, show, register and check schemas in a schema registry; compatibility levels"),
    "dump-log": Tool("odradek.cli.dump_log", "print the batches and records of log segment files"),
    "demo": Tool("odradek.cli.demo", "broker + generator + Spark streaming job with live metrics (the main job)"),
    "pipeline": Tool("odradek.cli.pipeline", "generate input for, run and archive the Spark analytics pipelines"),
    "zookeeper-server-start": Tool("odradek.cli.zookeeper", "run a ZooKeeper server from zoo.cfg", "start_main"),
    "zookeeper-server-stop": Tool("odradek.cli.zookeeper", "stop ZooKeeper servers started here", "stop_main"),
    "zookeeper-server-status": Tool("odradek.cli.zookeeper", "print a ZooKeeper server's mode", "status_main"),
    "zookeeper-security-migration": Tool("odradek.cli.zookeeper_security_migration",
                                         "set the Kafka znodes' ACLs secure or unsecure (as zookeeper.set.acl does)"),
    "cluster": Tool("odradek.cli.cluster", "run a local ZooKeeper ensemble + brokers (up, status, down)"),
    "spark": Tool("odradek.cli.spark_cluster",
                  "run a local Spark standalone cluster for the pipelines (up, status, down)"),
    "leader-election": Tool("odradek.cli.leader_election", "elect preferred or unclean partition leaders"),
    "preferred-replica-election": Tool("odradek.cli.preferred_replica_election",
                                       "move leadership back to preferred replicas (Kafka 2.x tool)"),
    "reassign-partitions": Tool("odradek.cli.reassign_partitions", "move partition replicas between brokers"),
    "transactions": Tool("odradek.cli.transactions",
                         "list, describe and abort transactions; find hanging ones (kafka-transactions.sh)"),
    "log-dirs": Tool("odradek.cli.log_dirs", "describe the brokers' log directories and partition sizes"),
    "console": Tool("odradek.console.server", "the web console: brokers, topics, messages, groups and lag"),
    "producer-perf-test": Tool("odradek.cli.producer_perf_test", "measure produce throughput and latency"),
    "consumer-perf-test": Tool("odradek.cli.consumer_perf_test", "measure consume throughput"),
}

PROG = "odradek"


def usage() -> str:
    """The top-level help text: synopsis and one line per tool."""
    width = max(len(name) for name in TOOLS)
    lines = [
        f"usage: {PROG} <tool> [args]",
        "",
        "Odradek, a Kafka-compatible commit-log broker. Tools:",
    ]
    lines += [f"  {name.ljust(width)}  {tool.summary}" for name, tool in TOOLS.items()]
    lines += ["", f"Run '{PROG} <tool> --help' for the flags of a tool, '{PROG} --version' for the version."]
    return "\n".join(lines)


def package_version() -> str:
    try:
        return version("odradek")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def unknown_tool(name: str) -> str:
    """The error line for a tool name not in the table, with the closest tool names."""
    close = difflib.get_close_matches(name, list(TOOLS), n=2, cutoff=0.6)
    prefixed = [t for t in TOOLS if name and t.startswith(name) and t not in close]
    close = (close + prefixed)[:2]
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return f"{PROG}: unknown tool '{name}'{hint}"


def load_tool(name: str) -> Callable[[list[str]], int]:
    """Import the module of tool `name` and return its entry function."""
    tool = TOOLS[name]
    entry: Callable[[list[str]], int] = getattr(importlib.import_module(tool.module), tool.function)
    return entry


def main(argv: list[str] | None = None) -> int:
    """Dispatch `argv` (default: sys.argv[1:]) to a tool; returns the process exit code. Whatever the
    tool, output cut off by its reader (`| head`) and a Ctrl-C no tool handled end without a traceback."""
    try:
        return _dispatch(sys.argv[1:] if argv is None else list(argv))
    except BrokenPipeError:
        from odradek.admin_client.command import silence_stdout  # only now: it loads librdkafka

        silence_stdout()
        return 1
    except KeyboardInterrupt:
        return 130


def _dispatch(args: list[str]) -> int:
    if not args:
        print(usage(), file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] in ("-V", "--version", "version"):
        print(f"{PROG} {package_version()}")
        return 0
    name, rest = args[0], args[1:]
    if name not in TOOLS:
        print(unknown_tool(name), file=sys.stderr)
        print(usage(), file=sys.stderr)
        return 2
    try:
        tool_main = load_tool(name)
    except ImportError as exc:
        print(f"{PROG}: tool '{name}' is not available: {exc}", file=sys.stderr)
        return 1
    return int(tool_main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
