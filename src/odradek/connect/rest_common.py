"""What the REST API's route modules share: Kafka's error (`{"error_code": N, "message": "..."}` with that HTTP
status) and compact JSON answers."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web


class RestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body, separators=(",", ":")), content_type="application/json")
