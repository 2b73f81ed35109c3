"""SCRAM credentials in the metadata store, where and as Kafka keeps them: `/config/users/<user>` holding
{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=N"}}, each
change announced under /config/changes (entity_path users/<user>). Read at every authentication, so a
change applies to the next login on every broker."""

from __future__ import annotations

from urllib.parse import quote, unquote

from odradek.cluster import znodes as zn
from odradek.cluster.broker_configs import read_entity_config, write_entity_config
from odradek.cluster.store import MetadataStore, NoNodeError
from odradek.security.scram import MECHANISMS, ScramCredential


def user_path(user: str) -> str:
    # Kafka sanitizes entity names in znode paths (URL encoding), so any user name fits in one node
    return f"{zn.CONFIG_USERS}/{quote(user, safe='')}"


async def read_user_config(store: MetadataStore, user: str) -> dict[str, str]:
    return await read_entity_config(store, user_path(user))


async def write_user_config(store: MetadataStore, user: str, config: dict[str, str]) -> None:
    await write_entity_config(store, user_path(user), f"users/{quote(user, safe='')}", config)


async def read_credential(store: MetadataStore, user: str, mechanism: str) -> ScramCredential | None:
    text = (await read_user_config(store, user)).get(mechanism)
    if text is None:
        return None
    try:
        return ScramCredential.from_config(text)
    except (KeyError, ValueError):
        return None


async def list_users(store: MetadataStore) -> list[str]:
    try:
        children = await store.get_children(zn.CONFIG_USERS)
    except NoNodeError:
        return []
    return sorted(unquote(c) for c in children)


def scram_entries(config: dict[str, str]) -> dict[str, int]:
    """mechanism -> iterations of the SCRAM credentials in a user's config."""
    out: dict[str, int] = {}
    for mechanism in MECHANISMS:
        if mechanism in config:
            try:
                out[mechanism] = ScramCredential.from_config(config[mechanism]).iterations
            except (KeyError, ValueError):
                continue
    return out
