"""The command-line frame of the tools and the console: argparse that answers bad flags in one line, as
Kafka's tools do, integer flags, and `run_tool`, which maps every failure to one stderr line and an exit
code instead of a stack trace."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from confluent_kafka import KafkaException

from odradek.admin_client.errors import CliError, UsageError, kafka_message


class ArgParser(argparse.ArgumentParser):
    """argparse that reports bad flags as a single-line UsageError instead of usage + exit 2."""

    def __init__(self, prog: str, description: str, **kwargs: Any) -> None:
        super().__init__(
            prog=f"odradek {prog}",
            description=description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kwargs,
        )

    def error(self, message: str) -> NoReturn:
        raise UsageError(usage_message(message))


class SubParser(argparse.ArgumentParser):
    """A sub-command's parser: bad flags are one line, as for the tool itself."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(usage_message(message))


def subcommands(parser: ArgParser, shared_flags: Callable[..., None]) -> Callable[[str, str], argparse.ArgumentParser]:
    """The tool's sub-commands (`odradek TOOL COMMAND ...`): a function that adds one by name and help text.
    `shared_flags(parser, default=...)` adds the flags the tool takes before any command to each command too,
    so they are accepted after it as well (unset there, they leave the tool's values alone)."""
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND", parser_class=SubParser)
    sub.required = True

    def command(name: str, text: str) -> argparse.ArgumentParser:
        child: argparse.ArgumentParser = sub.add_parser(name, prog=f"{parser.prog} {name}", help=text,
                                                        description=text[0].upper() + text[1:] + ".")
        shared_flags(child, default=argparse.SUPPRESS)
        return child

    return command


def usage_message(message: str) -> str:
    """Rephrase an argparse complaint in the style of Kafka's tools (one line)."""
    unknown = re.match(r"unrecognized arguments: (\S+)", message)
    if unknown:
        return f"Error: {unknown.group(1)} is not a recognized option (see --help)"
    missing = re.match(r"the following arguments are required: (.+)", message)
    if missing:
        return f'Error: Missing required argument "[{missing.group(1).lstrip("-")}]"'
    return f"Error: {message}"


def parse_int(value: str, flag: str, minimum: int | None = None) -> int:
    """An integer flag value with a Kafka-like one-line complaint."""
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"Error: {flag} expects an integer, got '{value}'") from None
    if minimum is not None and number < minimum:
        raise UsageError(f"Error: {flag} must be at least {minimum}, got {number}")
    return number


def run_tool(body: Callable[[], int]) -> int:
    """Run a tool's body; map every failure to one stderr line and an exit code."""
    try:
        return body()
    except CliError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    except SystemExit as exc:  # argparse --help
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KafkaException as exc:
        print(f"Error: {kafka_message(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # stdout closed by the reader (e.g. `| head`)
        silence_stdout()
        return 1
    except Exception as exc:  # never a stack trace
        print(f"Error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail on a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
