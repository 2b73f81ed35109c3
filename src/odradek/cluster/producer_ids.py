"""Producer id allocation for idempotent producers: each broker claims blocks of ids from the
`/latest_producer_id_block` znode with a conditional write, so ids are unique across the cluster."""

from __future__ import annotations

import json

from odradek.cluster.store import BadVersionError, MetadataStore, NodeExistsError, NoNodeError, to_json

PRODUCER_ID_BLOCK = "/latest_producer_id_block"
BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, store: MetadataStore, broker_id: int) -> None:
        self.store = store
        self.broker_id = broker_id
        self._next = 0
        self._end = -1  # inclusive end of the current block

    async def next_id(self) -> int:
        if self._next > self._end:
            await self._claim_block()
        pid = self._next
        self._next += 1
        return pid

    async def _claim_block(self) -> None:
        while True:
            try:
                data, stat = await self.store.get(PRODUCER_ID_BLOCK)
                start = int(json.loads(data)["block_end"]) + 1 if data else 0
                version = stat.version
            except NoNodeError:
                start, version = 0, None
            block = {"version": 1, "broker": self.broker_id, "block_start": str(start),
                     "block_end": str(start + BLOCK_SIZE - 1)}
            try:
                if version is None:
                    await self.store.create(PRODUCER_ID_BLOCK, to_json(block))
                else:
                    await self.store.set(PRODUCER_ID_BLOCK, to_json(block), version=version)
            except (BadVersionError, NodeExistsError):
                continue
            self._next, self._end = start, start + BLOCK_SIZE - 1
            return
