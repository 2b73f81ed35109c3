"""What the REST API's route modules share: Kafka's error (`{"error_code": N, "message": "..."}` with that HTTP
status), compact JSON answers, and the reading of the connector bodies (create, config, PATCH) with Kafka's
checks and words, standalone and distributed alike."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from odradek.connect.worker import PAUSED, RUNNING, STOPPED


class RestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body, separators=(",", ":")), content_type="application/json")


def _name_matches(name: str, config: dict[str, str]) -> None:
    if "name" in config and config["name"] != name:
        raise RestError(400, f"Connector name configuration ({config['name']}) doesn't match connector name in "
                        f"the URL ({name})")


def create_body(body: Any) -> tuple[str, dict[str, str], str]:
    """(name, config, initial state) of POST /connectors' body, the config's name set."""
    if not isinstance(body, dict) or not isinstance(body.get("config"), dict):
        raise RestError(400, "Connector config is required")
    config = {str(k): str(v) for k, v in body["config"].items()}
    name = str(body.get("name") or config.get("name") or "")
    if not name.strip():
        raise RestError(400, "Connector name is required")
    _name_matches(name, config)
    initial = str(body.get("initial_state") or RUNNING).upper()
    if initial not in (RUNNING, PAUSED, STOPPED):
        raise RestError(400, f"Invalid initial state: {body.get('initial_state')}")
    config["name"] = name
    return name, config, initial


def config_body(name: str, body: Any) -> dict[str, str]:
    """The config of PUT /connectors/NAME/config's body, its name set."""
    if not isinstance(body, dict):
        raise RestError(400, "Connector config is required")
    config = {str(k): str(v) for k, v in body.items()}
    _name_matches(name, config)
    config["name"] = name
    return config


def patched(config: dict[str, str], body: Any) -> dict[str, str]:
    """`config` with PATCH /connectors/NAME/config's body applied (a null value removes the key)."""
    if not isinstance(body, dict):
        raise RestError(400, "Connector config is required")
    out = dict(config)
    for key, value in body.items():
        if value is None:
            out.pop(str(key), None)
        else:
            out[str(key)] = str(value)
    return out
