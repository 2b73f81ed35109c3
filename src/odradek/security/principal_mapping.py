"""`ssl.principal.mapping.rules` (KIP-371): how a TLS client certificate's distinguished name becomes the
user name of its principal. Rules are tried in order; `RULE:pattern/replacement/[L|U]` applies when the
pattern matches the whole DN (replacement groups as `$1`, result lower- or upper-cased with L/U) and
`DEFAULT` keeps the DN as it is. A DN no rule matches cannot be mapped: the connection is refused, as
Kafka refuses it. Pure: parsed once per listener at start-up."""

from __future__ import annotations

import re
from dataclasses import dataclass

from odradek.config_keys import ConfigError

KEY = "ssl.principal.mapping.rules"


class NoMatchingRule(Exception):
    """No rule maps this distinguished name."""


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    template: str = ""
    case: str = ""  # "", "L" or "U"

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        m = self.pattern.fullmatch(dn)
        if m is None:
            return None
        out = m.expand(self.template)
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


def _java_template(replacement: str) -> str:
    """Java's replacement syntax ($1, \\$ for a dollar) as a Python template for Match.expand."""
    out, i = [], 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
        elif c == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            j = i + 1
            while j < len(replacement) and replacement[j].isdigit():
                j += 1
            out.append(f"\\g<{replacement[i + 1:j]}>")
            i = j
        else:
            out.append("\\\\" if c == "\\" else c)
            i += 1
    return "".join(out)


def _until_slash(text: str, pos: int) -> tuple[str, int]:
    """The text up to the next unescaped '/', with '\\/' unescaped; the position after the slash."""
    out = []
    while pos < len(text):
        c = text[pos]
        if c == "\\" and pos + 1 < len(text) and text[pos + 1] == "/":
            out.append("/")
            pos += 2
        elif c == "/":
            return "".join(out), pos + 1
        else:
            out.append(c)
            pos += 1
    raise ConfigError(f"Invalid rule in {KEY}: missing '/' in {text!r}")


def parse_rules(text: str) -> list[Rule]:
    rules: list[Rule] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n:
            break
        if text.startswith("DEFAULT", pos):
            rules.append(Rule(None))
            pos += len("DEFAULT")
        elif text.startswith("RULE:", pos):
            pattern, pos = _until_slash(text, pos + len("RULE:"))
            replacement, pos = _until_slash(text, pos)
            case = ""
            if pos < n and text[pos] in "LU":
                case, pos = text[pos], pos + 1
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"Invalid rule in {KEY}: {pattern!r}: {exc}") from None
            template = _java_template(replacement)
            if any(int(g) > compiled.groups for g in re.findall(r"\\g<(\d+)>", template)):
                raise ConfigError(f"Invalid rule in {KEY}: {replacement!r} names a group {pattern!r} lacks")
            rules.append(Rule(compiled, template, case))
        else:
            raise ConfigError(f"Invalid rule in {KEY}: {text[pos:pos + 40]!r} (expected RULE:pattern/replacement/ "
                              "or DEFAULT)")
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos < n and text[pos] not in ",\r\n":
            raise ConfigError(f"Invalid rule in {KEY}: unexpected {text[pos:pos + 20]!r} after a rule")
    if not rules:
        raise ConfigError(f"{KEY} is empty: use DEFAULT")
    return rules


def map_principal(rules: list[Rule], dn: str) -> str:
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMatchingRule(f"No rules apply to {dn}, rules {KEY}")
