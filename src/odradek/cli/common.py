"""Flag helpers only the tools use, and the frame of tools with sub-commands (`odradek cluster up`). What
they share with the web console (client configuration, the bootstrap flags, one-line errors, the
command-line frame) is in `odradek.admin_client`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

from odradek.admin_client.command import run_tool
from odradek.admin_client.errors import UsageError


def run_subcommand(tool: str, commands: Mapping[str, Callable[[list[str]], int]], usage: str, argv: list[str]) -> int:
    """`odradek <tool> <command> [flags]`: the usage for no command (status 2) or --help (status 0), one line
    for an unknown command (status 2), else the command under run_tool's exit codes."""
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] not in commands:
        print(f"Error: unknown {tool} command '{argv[0]}' (expected one of {', '.join(commands)})", file=sys.stderr)
        return 2
    return run_tool(lambda: commands[argv[0]](argv[1:]))


def add_zookeeper_flag(parser: argparse.ArgumentParser, help: str, metavar: str = "HOST:PORT[/CHROOT]") -> None:
    """The deprecated `--zookeeper` of Kafka 0.9-2.x tools (cluster mode only); `help` says what it does
    in this tool."""
    parser.add_argument("--zookeeper", metavar=metavar, help=help)


def parse_key_values(items: Iterable[str] | None, flag: str = "--property") -> dict[str, str]:
    """Parse repeated `k=v` flag values into a dict; a value may be empty, a key may not."""
    result: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"Error: invalid {flag} '{item}': expected key=value")
        result[key] = value
    return result


def parse_bool(value: str | None, default: bool = False) -> bool:
    """Kafka's lenient boolean: 'true' (any case) is true, anything else false."""
    if value is None:
        return default
    return value.strip().lower() == "true"


def one_action(opts: argparse.Namespace, actions: Sequence[str], message: str) -> str:
    """The one action flag of `actions` (store_true flags, named as on the command line) that is set;
    none or several is a UsageError saying `message`, each tool's words for it."""
    chosen = [a for a in actions if getattr(opts, a.replace("-", "_"))]
    if len(chosen) != 1:
        raise UsageError(message)
    return chosen[0]
