"""`odradek schemas COMMAND`: list, show, register and check schemas in a schema registry (Odradek's, Confluent's
or Karapace), and read or set compatibility levels, over Confluent Schema Registry's REST API.

    odradek schemas list [--versions] [--prefix P] [--deleted]
    odradek schemas get SUBJECT [--version N|latest] [--schema-only]
    odradek schemas register SUBJECT --schema-file F [--schema-type AVRO|JSON|PROTOBUF] [--references FILE]
                                     [--reference NAME=SUBJECT:VERSION ...] [--normalize]
    odradek schemas check SUBJECT --schema-file F [--version N|latest|all] [--schema-type ...] [--references ...]
    odradek schemas config [SUBJECT] [--level LEVEL | --delete]
    odradek schemas delete SUBJECT [--version N|latest] [--permanent]

Every command takes --schema-registry-url URL (default http://localhost:8081), --user USER:PASSWORD for basic
auth (or `basic.auth.user.info` in --command-config FILE, which keeps the password out of the process list),
--ca-file FILE for an https registry (or `schema.registry.ssl.truststore.location`, PEM) and --timeout MS.
`check` exits 0 when the schema is compatible and 1, printing the registry's reasons, when it is not. Every
failure is one line on stderr and exit code 1: the registry's own message with its error code (`Subject 'x'
not found. (40401)`), or that it did not answer.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from odradek.admin_client.command import ArgParser, parse_int, run_tool, subcommands
from odradek.admin_client.connect import read_properties_file
from odradek.admin_client.errors import CliError, UsageError
from odradek.admin_client.schema_registry import (
    DEFAULT_URL,
    LEVELS,
    SCHEMA_TYPES,
    RegistryClient,
    RegistryError,
    check_url,
    settings_from,
)

DEFAULT_TIMEOUT_MS = 30_000
MAX_SCHEMA_FILE = 16 << 20  # the registry's own bound on a request body
REFERENCE = re.compile(r"^([^=]+)=(.+):(-?\d+|latest)$")



def _registry_flags(parser: argparse.ArgumentParser, default: Any = None) -> None:
    parser.add_argument("--schema-registry-url", metavar="URL", default=default,
                        help=f"the schema registry's REST API (default {DEFAULT_URL}, or schema.registry.url "
                             "of --command-config)")
    parser.add_argument("--user", metavar="USER:PASSWORD", default=default,
                        help="basic auth credentials (or basic.auth.user.info in --command-config)")
    parser.add_argument("--ca-file", metavar="FILE", default=default,
                        help="PEM CA certificates to verify an https registry with (or "
                             "schema.registry.ssl.truststore.location in --command-config)")
    parser.add_argument("--command-config", metavar="FILE", default=default,
                        help="property file with the client's settings: schema.registry.url, basic.auth.user.info, "
                             "schema.registry.ssl.truststore.location")
    parser.add_argument("--timeout", metavar="MS", default=default,
                        help=f"timeout of each request to the registry (default {DEFAULT_TIMEOUT_MS})")


def _schema_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schema-file", metavar="FILE", required=True, help="the schema's text (- for stdin)")
    parser.add_argument("--schema-type", default="AVRO", type=str.upper, choices=SCHEMA_TYPES,
                        help="the schema's type (default AVRO)")
    parser.add_argument("--references", metavar="FILE",
                        help="a JSON file with the schema's references: [{\"name\", \"subject\", \"version\"}, ...]")
    parser.add_argument("--reference", metavar="NAME=SUBJECT:VERSION", action="append", default=[],
                        help="one reference of the schema (repeatable), e.g. other.proto=other-value:1")


def build_parser() -> ArgParser:
    p = ArgParser("schemas", __doc__ or "")
    _registry_flags(p)
    command = subcommands(p, _registry_flags)

    ls = command("list", "list the subjects")
    ls.add_argument("--versions", action="store_true", help="print each subject's versions after a tab")
    ls.add_argument("--prefix", default="", help="only the subjects whose names start with this")
    ls.add_argument("--deleted", action="store_true", help="include soft-deleted subjects (and versions)")
    get = command("get", "print a version of a subject: its id, type, references and schema")
    get.add_argument("subject")
    get.add_argument("--version", default="latest", help="a version number or latest (the default)")
    get.add_argument("--schema-only", action="store_true", help="print the schema's text alone, as stored")
    reg = command("register", "register a schema under a subject and print its id")
    reg.add_argument("subject")
    _schema_flags(reg)
    reg.add_argument("--normalize", action="store_true", help="normalize the schema before registering it")
    chk = command("check", "check a schema's compatibility with a subject (exit 0 compatible, 1 not)")
    chk.add_argument("subject")
    _schema_flags(chk)
    chk.add_argument("--version", default="latest",
                     help="the version to check against: a number, latest (the default), or all (every version "
                          "the compatibility level says)")
    cfg = command("config", "print or set the compatibility level of a subject, or the global one")
    cfg.add_argument("subject", nargs="?")
    level = cfg.add_mutually_exclusive_group()
    level.add_argument("--level", type=str.upper, choices=LEVELS, help="set the compatibility level")
    level.add_argument("--delete", action="store_true",
                       help="remove the subject's own level (the global one applies again)")
    dele = command("delete", "delete a subject or one version of it (soft, then --permanent)")
    dele.add_argument("subject")
    dele.add_argument("--version", help="one version (a number or latest) instead of the whole subject")
    dele.add_argument("--permanent", action="store_true", help="hard-delete what was soft-deleted before")
    return p


# ---- the commands -------------------------------------------------------------------------------------


def reference_text(ref: dict[str, Any]) -> str:
    return f"{ref.get('name')}={ref.get('subject')}:{ref.get('version')}"


def cmd_list(client: RegistryClient, opts: argparse.Namespace) -> int:
    for subject in client.subjects(opts.prefix, opts.deleted):
        if opts.versions:
            versions = client.versions(subject, opts.deleted)
            print(f"{subject}\t{','.join(str(v) for v in versions)}")
        else:
            print(subject)
    return 0


def cmd_get(client: RegistryClient, opts: argparse.Namespace) -> int:
    v = client.version(opts.subject, version_arg(opts.version))
    if opts.schema_only:
        print(v.schema)
        return 0
    print(f"Subject: {v.subject}\nVersion: {v.version}\nID: {v.id}\nType: {v.schema_type}")
    if v.references:
        print("References: " + ", ".join(reference_text(r) for r in v.references))
    print("Schema:")
    print(v.pretty())
    return 0


def cmd_register(client: RegistryClient, opts: argparse.Namespace) -> int:
    schema_id = client.register(opts.subject, read_schema(opts.schema_file), opts.schema_type, references(opts),
                                opts.normalize)
    print(f"Successfully registered schema with ID: {schema_id}")
    return 0


def cmd_check(client: RegistryClient, opts: argparse.Namespace) -> int:
    target = None if opts.version == "all" else version_arg(opts.version)
    problems = client.check(opts.subject, read_schema(opts.schema_file), opts.schema_type, references(opts), target)
    against = "every version the compatibility level names" if target is None else f"version {target}"
    if not problems:
        print(f"Compatible with {against} of subject '{opts.subject}'")
        return 0
    print(f"Incompatible with {against} of subject '{opts.subject}':")
    for problem in problems:
        print(f"  {problem}")
    return 1


def cmd_config(client: RegistryClient, opts: argparse.Namespace) -> int:
    name = "global" if opts.subject is None else f"subject '{opts.subject}'"
    if opts.delete:
        if opts.subject is None:
            raise UsageError("Error: --delete needs a SUBJECT (the global level can only be set)")
        client.delete_config(opts.subject)
        print(f"Removed the compatibility level of {name}; the global level applies")
        return 0
    if opts.level:
        level = client.set_config(opts.subject, opts.level)
        print(f"Compatibility level of {name} set to {level}")
        return 0
    level, own = client.config(opts.subject)
    origin = "" if opts.subject is None else (" (the subject's own)" if own else " (the global level)")
    print(f"Compatibility level of {name}: {level}{origin}")
    return 0


def cmd_delete(client: RegistryClient, opts: argparse.Namespace) -> int:
    version = None if opts.version is None else version_arg(opts.version)
    deleted = client.delete(opts.subject, version, opts.permanent)
    how = "Permanently deleted" if opts.permanent else "Deleted"
    print(f"{how} version(s) {', '.join(str(v) for v in deleted)} of subject '{opts.subject}'")
    return 0


COMMANDS: dict[str, Callable[[RegistryClient, argparse.Namespace], int]] = {
    "list": cmd_list, "get": cmd_get, "register": cmd_register, "check": cmd_check, "config": cmd_config,
    "delete": cmd_delete,
}


# ---- arguments ------------------------------------------------------------------------------------------


def version_arg(text: str) -> str:
    if text == "latest" or re.fullmatch(r"-?\d+", text):
        return text
    raise UsageError(f"Error: --version expects a version number or latest, got '{text}'")


def read_schema(path: str) -> str:
    try:
        raw = sys.stdin.buffer.read(MAX_SCHEMA_FILE + 1) if path == "-" else _read_bounded(Path(path))
    except OSError as exc:
        raise CliError(f"Error: cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_SCHEMA_FILE:
        raise CliError(f"Error: {path} is larger than {MAX_SCHEMA_FILE} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"Error: {path} is not UTF-8 text") from None


def _read_bounded(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.read(MAX_SCHEMA_FILE + 1)


def references(opts: argparse.Namespace) -> list[dict[str, Any]]:
    """--references FILE (Confluent CLI's JSON list) and every --reference NAME=SUBJECT:VERSION."""
    refs: list[dict[str, Any]] = []
    if opts.references:
        try:
            doc = json.loads(read_schema(opts.references))
        except ValueError as exc:
            raise CliError(f"Error: {opts.references} is not JSON: {exc}") from None
        if not isinstance(doc, list) or not all(isinstance(r, dict) and {"name", "subject", "version"} <= set(r)
                                                for r in doc):
            raise CliError(f"Error: {opts.references} must hold a JSON list of {{\"name\", \"subject\", "
                           "\"version\"}} objects")
        refs += doc
    for text in opts.reference:
        m = REFERENCE.match(text)
        if m is None:
            raise UsageError(f"Error: --reference expects NAME=SUBJECT:VERSION, got '{text}'")
        version: int | str = m.group(3) if m.group(3) == "latest" else int(m.group(3))
        refs.append({"name": m.group(1), "subject": m.group(2), "version": version})
    return refs


def client_of(opts: argparse.Namespace) -> RegistryClient:
    props = read_properties_file(opts.command_config)
    settings = settings_from(props, opts.schema_registry_url, opts.user, opts.ca_file)
    if settings.user_info is not None and ":" not in settings.user_info:
        raise UsageError("Error: --user expects USER:PASSWORD")
    try:
        check_url(settings.url)
    except ValueError as exc:
        raise UsageError(f"Error: {exc}") from None
    timeout_ms = parse_int(opts.timeout or str(DEFAULT_TIMEOUT_MS), "--timeout", minimum=1)
    try:
        return RegistryClient(settings, timeout_ms / 1000)
    except RegistryError as exc:
        raise CliError(f"Error: {exc}") from None


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    client = client_of(opts)
    try:
        return COMMANDS[opts.command](client, opts)
    except RegistryError as exc:
        code = f" ({exc.code})" if exc.code is not None and not exc.unreachable else ""
        raise CliError(f"Error: {exc}{code}") from None


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
