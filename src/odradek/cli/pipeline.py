"""`odradek pipeline <action> <name> ...`: run the analytics pipelines on Spark against a broker.

    odradek pipeline list
    odradek pipeline generate weblogs --bootstrap-server H:P [--rate N] [--count N | --duration S] [--seed N]
                                      [--malformed-fraction F] [--start-time T]
    odradek pipeline run weblogs --bootstrap-server H:P --checkpoint DIR --output DIR [--trigger 5s|available-now]
                                 [--master spark://HOST:PORT]
    odradek pipeline archive weblogs --bootstrap-server H:P --output DIR [--starting-offsets X] [--ending-offsets X]
                                     [--starting-timestamp T] [--ending-timestamp T] [--master spark://HOST:PORT]

Each action takes --schema-registry-url URL: then the topics hold Avro in Confluent's wire format, with their
schemas registered under <topic>-value (the same URL must be given to all three).
run and archive need the spark extra (pip install -e '.[spark]'); they run in Spark's local mode unless
--master names a standalone cluster (odradek spark up starts one on this host).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from odradek.pipelines import PIPELINES
from odradek.serde.registry_client import RegistryError


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="odradek pipeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="list the pipelines")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("name", help="pipeline name (see: odradek pipeline list)")
        p.add_argument("--bootstrap-server", required=True, help="broker address, host:port")
        p.add_argument("--schema-registry-url", default=None, metavar="URL",
                       help="a schema registry (http://HOST:PORT): the topics' values are Avro in Confluent's "
                            "wire format, their schemas registered under <topic>-value; without it, plain text "
                            "and JSON")

    gen = sub.add_parser("generate", help="produce generated input records")
    common(gen)
    gen.add_argument("--topic", default="access-logs", help="topic to produce to (default access-logs)")
    gen.add_argument("--partitions", type=int, default=0, help="create the topic with this many partitions if missing")
    gen.add_argument("--rate", type=float, default=500.0, help="events per second (default 500)")
    gen.add_argument("--count", type=int, default=0, help="stop after this many records")
    gen.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    gen.add_argument("--seed", type=int, default=42,
                     help="seed of the generator: the same seed gives the same events (default 42)")
    gen.add_argument("--malformed-fraction", type=float, default=0.01, help="share of damaged lines (default 0.01)")
    gen.add_argument("--start-time", default=None,
                     help="event time of the first record (ms or ISO 8601): produce as fast as possible with "
                          "simulated times; without it, events are live and paced to the wall clock")

    def master(p: argparse.ArgumentParser) -> None:
        p.add_argument("--master", default=None, metavar="URL",
                       help="Spark master: spark://HOST:PORT of a standalone cluster (odradek spark up), or "
                            "local[N] (default local[2])")

    run = sub.add_parser("run", help="run the streaming job")
    common(run)
    master(run)
    run.add_argument("--checkpoint", required=True, help="checkpoint directory (kept across restarts)")
    run.add_argument("--output", required=True, help="output directory (Parquet)")
    run.add_argument("--trigger", default="5s", help="micro-batch interval such as 5s, or available-now")
    run.add_argument("--watermark", default="1 minute", help="how late events may be (default '1 minute')")
    run.add_argument("--starting-offsets", default="earliest", help="for a new checkpoint: earliest, latest or JSON")
    run.add_argument("--max-offsets-per-trigger", type=int, default=None)
    run.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    run.add_argument("--verbose", action="store_true",
                     help="show Spark's own log on the terminal (by default it goes to CHECKPOINT/spark.log)")

    arc = sub.add_parser("archive", help="run the batch job over a range of the input topic")
    common(arc)
    master(arc)
    arc.add_argument("--output", required=True, help="output directory (Parquet events and summary.json)")
    arc.add_argument("--topic", default="access-logs", help="topic to read (default access-logs)")
    arc.add_argument("--starting-offsets", default=None, help="earliest (default) or per-partition JSON")
    arc.add_argument("--ending-offsets", default=None, help="latest (default) or per-partition JSON")
    arc.add_argument("--starting-timestamp", default=None, help="ms or ISO 8601")
    arc.add_argument("--ending-timestamp", default=None, help="ms or ISO 8601")
    arc.add_argument("--verbose", action="store_true",
                     help="show Spark's own log on the terminal (by default it goes to OUTPUT/spark.log)")
    return ap


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.action == "list":
        for name in PIPELINES:
            print(name)
        return 0
    if args.name not in PIPELINES:
        print(f"odradek pipeline: unknown pipeline {args.name!r}; known: {', '.join(PIPELINES)}", file=sys.stderr)
        return 2
    module = importlib.import_module(PIPELINES[args.name])
    try:
        return int(getattr(module, args.action)(args) or 0)
    except RegistryError as exc:  # unreachable, or it refused a schema: one line, before anything ran
        print(f"odradek pipeline {args.action}: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(f"odradek pipeline {args.action}: {exc} (install the spark extra: pip install -e '.[spark]')",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # a batch action (archive) interrupted in the middle of a Spark job
        print(f"odradek pipeline {args.action}: interrupted", file=sys.stderr)
        return 130
