"""Keys and values in Confluent's wire format (magic byte 0, a 4-byte schema id, the payload), decoded for
the message browser and the weblogs page through the console's schema registry (`schemas.RegistryLink`:
the one given with --schema-registry-url, or the one the cluster's brokers run).

Avro is shown as Avro's JSON encoding (as Confluent's console consumer prints it), JSON Schema as the JSON
text behind the header; Protobuf stays bytes (decoding it needs the schema's message descriptors, which the
console does not compile). Whatever does not decode (an id the registry does not know, a registry that
does not answer, a truncated payload, bytes left over) stays bytes, with a note saying why.

Bounded work: schemas by id are cached (odradek.serde's client, over the console's registry client for its
TLS CA and credentials; an unknown id is remembered for ten seconds); lookups wait at most LOOKUP_TIMEOUT_S,
and a registry that did not answer is not asked again for DOWN_S, so a page of records from a stalled
registry costs one short wait, not one per record; serde.avro's guards refuse schemas whose arrays could
claim billions of empty items and read recursive schemas within Python's recursion limit. Avro's JSON is read
in pure Python (a few seconds a MiB on a busy machine), so a payload larger than MAX_DECODE_BYTES is not
decoded, nor are the records of a page past its first PAGE_DECODE_BYTES (`PageBudget`).
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from odradek.admin_client.schema_registry import RegistryClient as ConsoleRegistryClient
from odradek.admin_client.schema_registry import RegistryError as ConsoleRegistryError
from odradek.console.schemas import RegistryLink
from odradek.serde.avro import AvroDeserializer, DecodeError, subject_for
from odradek.serde.registry_client import SCHEMA_NOT_FOUND, RegistryClient, RegistryError
from odradek.serde.wire import HEADER, MAGIC

MAX_DECODE_BYTES = 256 << 10  # a payload larger than this is shown as bytes (cut), not decoded
PAGE_DECODE_BYTES = 1 << 20  # payload bytes one page (or live-tail poll) decodes at most
LOOKUP_TIMEOUT_S = 2.0  # a registry lookup's wait (at most a quarter of the request timeout)
DOWN_S = 10.0  # a registry that did not answer is not asked again for this long
NO_REGISTRY_S = 10.0  # "the cluster runs no registry" is believed this long before asking again
MAX_SUBJECTS = 1000  # (id, subject) pairs whose subject and version are remembered


@dataclass
class Decoded:
    """What the wire format said: the schema id, and the decoded text or why there is none."""

    schema_id: int
    schema_type: str = ""  # AVRO, JSON, PROTOBUF; "" when the id's schema could not be had
    text: str | None = None  # Avro JSON or JSON Schema's JSON, pretty-printed; None: not decoded
    note: str = ""  # why not decoded
    subject: str | None = None
    version: int | None = None


class PageBudget:
    """The payload bytes one page may still decode."""

    def __init__(self, limit: int = PAGE_DECODE_BYTES) -> None:
        self.left = limit

    def take(self, n: int) -> bool:
        if n > self.left:
            self.left = 0  # the rest of the page stays undecoded too, not just the larger records
            return False
        self.left -= n
        return True


def is_framed(data: bytes) -> bool:
    return len(data) >= HEADER.size and data[0] == MAGIC


class _Registry(RegistryClient):
    """odradek.serde's caching client speaking through the console's registry client (its https CA and basic
    auth); a registry that does not answer is reported, without asking it, for DOWN_S."""

    def __init__(self, client: ConsoleRegistryClient) -> None:
        super().__init__(client.url, timeout_s=client.timeout_s)
        self.client = client
        self.down_until = 0.0
        self.down_reason = ""
        self.subjects: dict[tuple[int, str], tuple[str | None, int | None]] = {}

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        wait = self.down_until - time.monotonic()
        if wait > 0:
            raise RegistryError(f"{self.down_reason} (asked again in {math.ceil(wait)} s)")
        try:
            return self.client.call(method, path, body)
        except ConsoleRegistryError as exc:
            if exc.unreachable:
                self.down_until, self.down_reason = time.monotonic() + DOWN_S, str(exc)
            raise RegistryError(str(exc), exc.code) from None

    def subject_of(self, schema_id: int, preferred: str) -> tuple[str | None, int | None]:
        """A subject and version the id is registered under (`preferred`, the record's TopicNameStrategy
        subject, when it is one), or (None, None). Asked once per id and preferred subject, so that an id
        registered under the topic's subject after it was first seen under another one is found."""
        key = (schema_id, preferred)
        if key not in self.subjects:
            try:
                answer = self._call("GET", f"/schemas/ids/{schema_id}/versions")
            except RegistryError:
                return None, None
            found = [(str(v["subject"]), int(v["version"])) for v in answer if isinstance(v, dict)
                     and isinstance(v.get("subject"), str) and isinstance(v.get("version"), int)] \
                if isinstance(answer, list) else []
            if len(self.subjects) >= MAX_SUBJECTS:
                self.subjects.clear()
            self.subjects[key] = next(((s, v) for s, v in found if s == preferred), found[0] if found else (None, None))
        return self.subjects[key]


class FramedDecoder:
    """Decodes wire-format bytes through the console's registry, once it knows one."""

    def __init__(self, link: RegistryLink, request_timeout_s: float) -> None:
        self.link = link
        self.timeout_s = min(LOOKUP_TIMEOUT_S, request_timeout_s / 4)
        self._registry: _Registry | None = None
        self._none_until = 0.0
        self._lock = threading.Lock()

    def registry(self) -> _Registry | None:
        """Blocking (the cluster is asked for a registry when none was given): the registry, if any."""
        with self._lock:
            if self._registry is None and time.monotonic() >= self._none_until:
                settings = self.link.settings()
                if settings is None:
                    self._none_until = time.monotonic() + NO_REGISTRY_S
                else:
                    self._registry = _Registry(ConsoleRegistryClient(settings, self.timeout_s))
            return self._registry

    def decode(self, data: bytes, topic: str, is_key: bool = False, budget: PageBudget | None = None) -> Decoded | None:
        """The decoded form of `data`, or None when it is not in the wire format."""
        if not is_framed(data):
            return None
        schema_id = HEADER.unpack_from(data)[1]
        found = Decoded(schema_id)
        registry = self.registry()
        if registry is None:
            found.note = "no schema registry known to the console (--schema-registry-url) to decode it with"
            return found
        try:
            schema = registry.schema_by_id(schema_id)
        except RegistryError as exc:
            found.note = (f"schema id {schema_id} is unknown to the registry" if exc.error_code == SCHEMA_NOT_FOUND
                          else f"schema id {schema_id} not looked up: {exc}")
            return found
        found.schema_type = schema.schema_type
        found.subject, found.version = registry.subject_of(schema_id, subject_for(topic, is_key))
        if len(data) > MAX_DECODE_BYTES:
            found.note = f"{len(data)} bytes: larger than the {MAX_DECODE_BYTES >> 10} KiB the browser decodes"
        elif budget is not None and not budget.take(len(data)):
            found.note = (f"not decoded: this page decoded {PAGE_DECODE_BYTES >> 10} KiB of records already "
                          "(show fewer records at a time)")
        elif schema.schema_type == "AVRO":
            found.text, found.note = _avro(registry, data)
        elif schema.schema_type == "JSON":
            found.text, found.note = _json(data[HEADER.size:])
        else:
            found.note = (f"a {schema.schema_type} schema: decoding it needs the schema's message descriptors, "
                          "which the console does not compile")
        return found

    def datum(self, data: bytes) -> Any:
        """The Avro datum of framed bytes (DecodeError, or RegistryError when there is no registry to ask)."""
        registry = self.registry()
        if registry is None:
            raise RegistryError("no schema registry known to the console")
        if len(data) > MAX_DECODE_BYTES:
            raise DecodeError(f"{len(data)} bytes: larger than the {MAX_DECODE_BYTES >> 10} KiB decoded here")
        return AvroDeserializer(registry).decode(data)


def _avro(registry: _Registry, data: bytes) -> tuple[str | None, str]:
    """(pretty Avro JSON, "") or (None, why not)."""
    try:
        value, schema_id, left = AvroDeserializer(registry).json_value(data)
    except (DecodeError, RegistryError) as exc:
        return None, str(exc)
    if left:  # Confluent's serializers write the datum and nothing after it
        return None, f"schema id {schema_id} reads only {len(data) - HEADER.size - left} of the payload's " \
                     f"{len(data) - HEADER.size} bytes"
    try:
        return json.dumps(value, indent=2, ensure_ascii=False), ""
    except (ValueError, RecursionError) as exc:  # nested within the reader's limit, but not the encoder's
        return None, f"schema id {schema_id}: the record cannot be shown as JSON ({type(exc).__name__})"


def _json(payload: bytes) -> tuple[str | None, str]:
    try:
        return json.dumps(json.loads(payload.decode("utf-8")), indent=2, ensure_ascii=False), ""
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"the payload behind the header is not JSON ({type(exc).__name__})"
