"""ssl.principal.mapping.rules (KIP-371): parsing, Java replacement syntax, case folding, rule order,
DEFAULT, and the errors of a rule that cannot work."""

from __future__ import annotations

import pytest

from odradek.config_keys import ConfigError
from odradek.security.principal_mapping import NoMatchingRule, map_principal, parse_rules

DN = "CN=Alice Smith,OU=ServiceUsers,O=Example,L=Paris,ST=IDF,C=FR"


def test_rules_apply_in_order_with_groups_and_case() -> None:
    rules = parse_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,\n"
                        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U, DEFAULT")
    assert map_principal(rules, DN) == "alice smith"
    assert map_principal(rules, "CN=bob,OU=Eng,O=X,L=Y,ST=Z,C=DE") == "BOB@ENG"
    assert map_principal(rules, "CN=carol") == "CN=carol"  # DEFAULT keeps the DN


def test_escaped_slash_and_literal_dollar() -> None:
    rules = parse_rules(r"RULE:^CN=([^,]*)\/x,.*$/\$$1/")
    assert map_principal(rules, "CN=a/x,O=b") == "$a"


def test_no_rule_matches() -> None:
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=dave"):
        map_principal(parse_rules("RULE:^CN=(.*),OU=Ops$/$1/"), "CN=dave,OU=Dev")


@pytest.mark.parametrize(("text", "needle"), [
    ("RULE:^CN=(.*)$", "missing '/'"),
    ("RULE:^CN=(.*$/$1/", "Invalid rule"),
    ("RULE:^CN=(.*)$/$2/", "names a group"),
    ("NOPE", "expected RULE:pattern/replacement/ or DEFAULT"),
    ("DEFAULT junk", "unexpected"),
    (" , ", "is empty"),
])
def test_bad_rules_are_config_errors(text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_rules(text)
