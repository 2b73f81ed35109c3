"""src/odradek/config_key_types.py, the catalogue's broker keys grouped by the type of their values (what
types `BrokerConfig.get`; and the group keys, what types `GroupConfigs.value`), is generated from the
catalogue: this test checks it is current, and running this file (`python -m tests.unit.test_config_key_types`)
rewrites it after a change to the catalogue. And LogConfig's typed fields are checked against the catalogue's
topic keys."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import get_type_hints

from odradek.config import BrokerConfig
from odradek.config_keys import BROKER_KEYS, GROUP_CONFIGS, TOPIC_CONFIGS, ConfigKey, ConfigType, Password
from odradek.storage.log_config import LogConfig

GENERATED = Path(__file__).resolve().parents[2] / "src" / "odradek" / "config_key_types.py"

# (alias, Python type of the values) for each ConfigType
_PY_TYPES: dict[ConfigType, tuple[str, type]] = {
    ConfigType.BOOLEAN: ("Bool", bool),
    ConfigType.INT: ("Int", int),
    ConfigType.SHORT: ("Int", int),
    ConfigType.LONG: ("Int", int),
    ConfigType.DOUBLE: ("Float", float),
    ConfigType.STRING: ("Str", str),
    ConfigType.CLASS: ("Str", str),
    ConfigType.LIST: ("List", list),
    ConfigType.PASSWORD: ("Password", Password),
}

_HEADER = '''"""The broker keys of the catalogue (`odradek.config_keys.BROKER_KEYS`) grouped by the type of their
values, for typing `BrokerConfig.get`: `<Type>Key` names keys with a default, `Optional<Type>Key` keys
Kafka documents without one (their value is None until set). Bool: bool; Int: int (Kafka's int, short,
long); Float: float; Str: str (string, class); List: list[str]; Password: Password.

GENERATED from the catalogue: do not edit. tests/unit/test_config_key_types.py checks that it is
current; `python -m tests.unit.test_config_key_types` rewrites it.
"""

from typing import Literal, TypeAlias
'''


def alias_of(key: ConfigKey) -> str:
    name = _PY_TYPES[key.type][0] + "Key"
    return "Optional" + name if key.default is None else name


def render() -> str:
    groups: dict[str, list[str]] = {}
    for alias in ("Bool", "Int", "Float", "Str", "List", "Password"):
        groups[alias + "Key"] = []
        groups["Optional" + alias + "Key"] = []
    for name, key in sorted(BROKER_KEYS.items()):
        groups[alias_of(key)].append(name)
    for name, key in sorted(GROUP_CONFIGS.items()):
        groups.setdefault("Group" + alias_of(key), []).append(name)
    out = [_HEADER]
    for alias, names in groups.items():
        if not names:
            continue
        if alias == "GroupIntKey":
            out.append("\n# The group configs (GROUP_CONFIGS) by the type of their values, for typing GroupConfigs.value.\n")
        out.append(f"\n{alias}: TypeAlias = Literal[\n")
        out.extend(f'    "{name}",\n' for name in names)
        out.append("]\n")
    return "".join(out)


def test_generated_key_types_match_the_catalogue() -> None:
    assert GENERATED.read_text() == render(), (
        "src/odradek/config_key_types.py is stale: run `python -m tests.unit.test_config_key_types`"
    )


def test_every_value_has_its_generated_type() -> None:
    """What `get` returns at run time is what the generated aliases promise: the documented defaults,
    and values as configured."""
    config = BrokerConfig.from_props({"log.dirs": "/tmp/k", "ssl.keystore.password": "x", "broker.rack": "r1"})
    for name, key in BROKER_KEYS.items():
        value = config.value(name)
        if value is None:
            assert key.default is None, name
            continue
        expected = _PY_TYPES[key.type][1]
        assert isinstance(value, expected) and not (expected is int and isinstance(value, bool)), (name, value)
        if expected is list:
            assert all(isinstance(item, str) for item in value), name


def test_log_config_fields_have_the_catalogue_types() -> None:
    """LogConfig, the typed topic config the log reads, is built from catalogue values without a type
    check by mypy (`cls(**values)`): its field types must be the catalogue's (cleanup.policy, a list
    there, becomes a tuple)."""
    hints = get_type_hints(LogConfig)
    for field in fields(LogConfig):
        key = TOPIC_CONFIGS[field.name.replace("_", ".")]
        expected = _PY_TYPES[key.type][1]
        hint = hints[field.name]
        if expected is list:
            assert hint == tuple[str, ...], field.name
        else:
            assert hint is expected and key.default is not None, field.name
        assert isinstance(getattr(LogConfig.from_props(), field.name), tuple if expected is list else expected)


if __name__ == "__main__":
    GENERATED.write_text(render())
    print(f"wrote {GENERATED}")
