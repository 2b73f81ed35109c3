"""The broker's own registry as Schema ID Validation's lookup: what a schema id stands for, read from the
registry's state in process (no HTTP). Its answers carry the state's generation, so the broker's cache drops
them as soon as the registry applies a record (a schema registered a moment ago validates at once); the walk
over the state runs on a worker thread, as a large registry makes it a few milliseconds."""

from __future__ import annotations

import asyncio

from odradek.schema_registry.state import RegistryState
from odradek.server.schema_names import record_name
from odradek.server.schema_validation import SchemaFacts


class StateLookup:
    def __init__(self, state: RegistryState) -> None:
        self.state = state

    def token(self) -> object:
        return self.state.generation

    async def close(self) -> None:
        return None

    async def facts(self, schema_id: int) -> SchemaFacts | None:
        return await asyncio.to_thread(self._facts, schema_id)

    def _facts(self, schema_id: int) -> SchemaFacts | None:
        rec = self.state.schema(schema_id)
        if rec is None:
            return None
        subjects = frozenset(r.subject for r in self.state.uses_of(schema_id))
        return SchemaFacts(record_name(rec.schema_type, rec.schema), subjects)
