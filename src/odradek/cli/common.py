"""Flag helpers only the tools use. What they share with the web console (client configuration, the
bootstrap flags, one-line errors, the command-line frame) is in `odradek.admin_client`."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence

from odradek.admin_client.errors import UsageError


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
