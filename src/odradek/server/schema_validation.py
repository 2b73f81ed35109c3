"""Schema ID Validation (Confluent Server's): for a topic with `confluent.key.schema.validation` or
`confluent.value.schema.validation` on, the leader appends a produced batch only when every non-null key / value
starts with Confluent's wire format and its schema id is registered under the subject the topic's
`confluent.{key,value}.subject.name.strategy` names: TopicNameStrategy `<topic>-key` / `<topic>-value`,
RecordNameStrategy the schema's record name, TopicRecordNameStrategy `<topic>-<record name>`. Otherwise the
whole batch is refused with INVALID_RECORD, each offending record named in record_errors (KIP-467), as Kafka
reports its own record errors. Null keys and values pass, as in Confluent Server (tombstones).

What a schema id stands for comes from a `SchemaLookup`: the broker's own registry read in process, or the
registry at `confluent.schema.registry.url` over HTTP. Answers are kept in bounded LRU caches (known ids for
`POSITIVE_TTL_S`, unknown ones for `NEGATIVE_TTL_S`; the in-process registry's answers are also dropped at
each change of its state); lookups run at most `MAX_LOOKUPS` at a time, one per id however many batches ask,
and a batch resolves its new ids `IDS_PER_ROUND` at a time, stopping at the first round that finds a bad one,
so a batch of thousands of bogus ids costs one round. A registry that does not answer makes the partition's
answer NOT_LEADER_OR_FOLLOWER (what Confluent Server's producers see then: retriable), and for
`DOWN_PAUSE_S` afterwards ids not in the cache fail at once instead of each waiting for a timeout.

Decoding records is the one thing the produce path otherwise never does: topics without validation pay
two attribute reads (their LogConfig's flags). A batch of up to INLINE_RECORDS records is walked on the
event loop (decompressing to at most INLINE_DECOMPRESSED there), a larger one on a worker thread
(`MAX_DECODES` at a time), its decompression bounded by the topic's `LogConfig.max_decompressed_bytes`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from odradek.protocol.errors import ErrorCode, KafkaError, RecordValidationError
from odradek.protocol.records import DecompressedTooLarge, validate_batches
from odradek.protocol.schema_ids import NOT_WIRE, NULL, scan_schema_ids
from odradek.ratelog import LimitedLog
from odradek.storage.log_config import LogConfig

log = logging.getLogger("odradek.server.schema_validation")

RECORD_NAME = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
TOPIC_RECORD_NAME = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"

POSITIVE_TTL_S = 300.0
NEGATIVE_TTL_S = 10.0  # an unknown id, or an id refused under a subject, is asked again after this
CACHE_ENTRIES = 10_000  # per cache (known ids, unknown ids)
MAX_LOOKUPS = 8
IDS_PER_ROUND = 16
DOWN_PAUSE_S = 1.0
MAX_DECODES = 2
# a batch is scanned on the loop when its records are this few (and their data this small, compressed or
# not, and this small decompressed): ~2,000 records of 100 bytes take about a millisecond; others on a thread
INLINE_BYTES = 512 * 1024
INLINE_RECORDS = 4096
INLINE_DECOMPRESSED = 1024 * 1024
NAMED_RECORDS = 100  # record_errors past this many carry no message


class RegistryUnavailable(Exception):
    """The registry could not answer (down, timed out, not configured, not started yet)."""


@dataclass(frozen=True, slots=True)
class SchemaFacts:
    """What validation needs of a registered schema id: its record name (None when the schema has none) and
    the subjects that hold it in a live version."""

    record_name: str | None
    subjects: frozenset[str]


class SchemaLookup(Protocol):
    async def facts(self, schema_id: int) -> SchemaFacts | None:
        """The facts of `schema_id`, None when the registry has no such id; raises RegistryUnavailable."""

    def token(self) -> object:
        """Answers cached under another token are stale (the in-process registry's state generation); a
        lookup whose answers only age returns None."""

    async def close(self) -> None: ...


@dataclass(slots=True)
class _Entry:
    facts: SchemaFacts | None
    at: float
    token: object


class _Lru:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: OrderedDict[int, _Entry] = OrderedDict()

    def get(self, key: int) -> _Entry | None:
        entry = self.items.get(key)
        if entry is not None:
            self.items.move_to_end(key)
        return entry

    def put(self, key: int, entry: _Entry) -> None:
        self.items[key] = entry
        self.items.move_to_end(key)
        while len(self.items) > self.capacity:
            self.items.popitem(last=False)

    def pop(self, key: int) -> None:
        self.items.pop(key, None)


def subject_for(strategy: str, topic: str, is_key: bool, name: str | None) -> str | None:
    """The subject a strategy names for a key or value whose schema has record name `name` (None: no subject,
    the record-name strategies need a name); TopicNameStrategy, the default, is any other value."""
    if strategy == RECORD_NAME:
        return name
    if strategy == TOPIC_RECORD_NAME:
        return None if name is None else f"{topic}-{name}"
    return f"{topic}-key" if is_key else f"{topic}-value"


class SchemaValidation:
    """The broker's one validator; `lookup` is set at start-up (None: no registry, every batch of a validated
    topic is answered as with a registry down)."""

    def __init__(self, lookup: SchemaLookup | None = None) -> None:
        self.lookup = lookup
        self._known = _Lru(CACHE_ENTRIES)
        self._unknown = _Lru(CACHE_ENTRIES)
        self._inflight: dict[int, asyncio.Future[SchemaFacts | None]] = {}  # the task asking for each id
        self._lookups = asyncio.Semaphore(MAX_LOOKUPS)
        self._decodes = asyncio.Semaphore(MAX_DECODES)
        self._down_until = 0.0
        self._warn = LimitedLog(log)

    async def close(self) -> None:
        if self.lookup is not None:
            await self.lookup.close()

    # ---- a batch ------------------------------------------------------------------------------------

    async def check(self, topic: str, partition: int, config: LogConfig, records: memoryview) -> None:
        """Raise RecordValidationError (INVALID_RECORD) naming the records whose key / value fails, KafkaError
        NOT_LEADER_OR_FOLLOWER when the registry cannot answer, CORRUPT_MESSAGE for malformed records."""
        batches = validate_batches(records, config.max_message_bytes)
        limit = config.max_decompressed_bytes
        ids = None
        if len(records) <= INLINE_BYTES and sum(h.records_count for _, h in batches) <= INLINE_RECORDS:
            try:  # a millisecond or two on the loop at most: cheaper than a thread's hop and its GIL handoffs
                ids = scan_schema_ids(records, batches, min(limit, INLINE_DECOMPRESSED))
            except DecompressedTooLarge:
                pass  # on a thread, within the whole budget
        if ids is None:
            async with self._decodes:
                ids = await asyncio.to_thread(scan_schema_ids, records, batches, limit)
        keys, values = ids
        key_on, value_on = config.confluent_key_schema_validation, config.confluent_value_schema_validation
        strategies = (config.confluent_key_subject_name_strategy, config.confluent_value_subject_name_strategy)
        # the distinct ids (in the order records carry them) with the sides (key, value) they are checked for;
        # records are looked at one by one only when some id or field fails
        distinct = (dict.fromkeys(keys) if key_on else {}, dict.fromkeys(values) if value_on else {})
        sides: dict[int, set[bool]] = {}
        for is_key, found in ((True, distinct[0]), (False, distinct[1])):
            for schema_id in found:
                if schema_id > 0:
                    sides.setdefault(schema_id, set()).add(is_key)

        def fails(schema_id: int, facts: SchemaFacts | None) -> bool:
            return facts is None or any(
                subject_for(strategies[0 if is_key else 1], topic, is_key, facts.record_name) not in facts.subjects
                for is_key in sides[schema_id])

        facts = await self._resolve(topic, list(sides), fails)
        bad = tuple({i for i in found if _problem(topic, is_key, i, strategies[0 if is_key else 1], facts)}
                    for is_key, found in ((True, distinct[0]), (False, distinct[1])))
        if not bad[0] and not bad[1]:
            return
        errors: list[tuple[int, str | None]] = []
        for index, (key, value) in enumerate(zip(keys, values, strict=True)):
            problem = None
            if key in bad[0]:
                problem = _problem(topic, True, key, strategies[0], facts)
            elif value in bad[1]:
                problem = _problem(topic, False, value, strategies[1], facts)
            if problem is not None:
                errors.append((index, f"Record {index} of the batch to {topic}-{partition} failed schema "
                                      f"validation: {problem}" if len(errors) < NAMED_RECORDS else None))
        first = errors[0][1] or ""
        more = f" ({len(errors)} of {len(keys)} records failed)" if len(errors) > 1 else ""
        raise RecordValidationError(ErrorCode.INVALID_RECORD, first + more, errors)

    async def _resolve(self, topic: str, ids: list[int], fails: Callable[[int, SchemaFacts | None], bool]
                       ) -> dict[int, SchemaFacts | None]:
        """The facts of the ids a batch carries. Ids not in the cache are asked IDS_PER_ROUND at a time, up to
        the first round with an id that `fails`: the ids after it stay absent (their records are not named,
        the batch is refused anyway). A cached answer that fails and is older than NEGATIVE_TTL_S is asked
        again (the schema may have been registered under the subject since)."""
        out: dict[int, SchemaFacts | None] = {}
        missing: list[int] = []
        now = time.monotonic()
        for schema_id in ids:
            entry = self._cached(schema_id)
            if entry is None or (entry.facts is not None and now - entry.at >= NEGATIVE_TTL_S
                                 and fails(schema_id, entry.facts)):
                missing.append(schema_id)
            else:
                out[schema_id] = entry.facts
        try:
            for start in range(0, len(missing), IDS_PER_ROUND):
                chunk = missing[start:start + IDS_PER_ROUND]
                answers = await asyncio.gather(*(self._facts(i) for i in chunk))
                out.update(zip(chunk, answers, strict=True))
                if any(fails(i, a) for i, a in zip(chunk, answers, strict=True)):
                    break
        except RegistryUnavailable as exc:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"Cannot validate the schema ids of records to {topic}: {exc}; retry later") from None
        return out

    # ---- the caches ---------------------------------------------------------------------------------

    def _cached(self, schema_id: int) -> _Entry | None:
        lookup = self.lookup
        if lookup is None:
            return None
        now, token = time.monotonic(), lookup.token()
        for cache, ttl in ((self._known, POSITIVE_TTL_S), (self._unknown, NEGATIVE_TTL_S)):
            entry = cache.get(schema_id)
            if entry is not None:
                if now - entry.at < ttl and entry.token == token:
                    return entry
                cache.pop(schema_id)
        return None

    async def _facts(self, schema_id: int) -> SchemaFacts | None:
        """The lookup's answer for an id, cached. One task asks per id, whoever waits for it (a produce request
        that goes away does not cancel the others' answer); MAX_LOOKUPS tasks ask at once."""
        task = self._inflight.get(schema_id)
        if task is None:
            lookup = self.lookup
            if lookup is None:
                raise RegistryUnavailable("this broker has no schema registry (confluent.schema.registry.url)")
            if time.monotonic() < self._down_until:
                raise RegistryUnavailable("the schema registry did not answer a moment ago")
            task = asyncio.ensure_future(self._ask(lookup, schema_id))
            self._inflight[schema_id] = task
            task.add_done_callback(lambda done: self._asked(schema_id, done))
        return await asyncio.shield(task)

    def _asked(self, schema_id: int, task: asyncio.Future[SchemaFacts | None]) -> None:
        self._inflight.pop(schema_id, None)
        if not task.cancelled():
            task.exception()  # retrieved: no "never retrieved" warning when every asker went away

    async def _ask(self, lookup: SchemaLookup, schema_id: int) -> SchemaFacts | None:
        async with self._lookups:
            token = lookup.token()
            try:
                facts = await lookup.facts(schema_id)
            except RegistryUnavailable as exc:
                self._down_until = time.monotonic() + DOWN_PAUSE_S
                self._warn.warning("Schema validation cannot reach the schema registry: %s", exc)
                raise
        (self._known if facts is not None else self._unknown).put(schema_id, _Entry(facts, time.monotonic(), token))
        return facts


def _problem(topic: str, is_key: bool, schema_id: int, strategy: str,
             facts: dict[int, SchemaFacts | None]) -> str | None:
    what = "key" if is_key else "value"
    if schema_id == NULL:
        return None
    if schema_id == NOT_WIRE:
        return f"its {what} is not in Confluent's wire format (magic byte 0, then a 4-byte schema id)"
    if schema_id <= 0:
        return f"its {what}'s schema id {schema_id} is not a registered schema id"
    if schema_id not in facts:
        return None  # not resolved: the batch is refused for other records
    found = facts[schema_id]
    if found is None:
        return f"its {what}'s schema id {schema_id} is not registered in the schema registry"
    subject = subject_for(strategy, topic, is_key, found.record_name)
    short = strategy.rsplit(".", 1)[-1]
    if subject is None:
        return f"its {what}'s schema id {schema_id} has no record name, which {short} needs"
    if subject not in found.subjects:
        return f"its {what}'s schema id {schema_id} is not registered under subject {subject} ({short})"
    return None

