"""Group coordinators (classic and KIP-848 consumer protocols) and the offset store on `__consumer_offsets`.

- `schemas`: Kafka's key/value formats of the records in `__consumer_offsets`.
- `group`: one group's state machine (states, members, generation, protocol selection, static members);
  pure state, no I/O.
- `store`: the `GroupStore` protocol the coordinator persists through, and the `GroupOwner` protocol
  the store reports loads and unloads to.
- `coordinator`: `GroupCoordinator`, the object the broker starts and the request handlers call: timers,
  the rebalance orchestration, the offset APIs and offset retention.
- `offsets`: `OffsetStore`, the broker's `GroupStore`: which `__consumer_offsets` partition holds a
  group, writing records to it, and loading a partition when this broker becomes its leader.

KIP-848 consumer groups (`group.protocol=consumer`) beside them:

- `consumer_group`: one consumer group's state (epochs, members, target assignment, partition epochs) and
  the reconciliation rules; pure, no I/O.
- `assignors`: the server-side assignors `uniform` and `range`.
- `consumer_schemas`: Kafka's record formats of consumer groups in `__consumer_offsets`.
- `consumer_coordinator`: `ConsumerGroupCoordinator` (heartbeats, timers, offsets of consumer groups,
  migration of empty groups between the protocols) and the store/owner splitters that share the offset
  store with the classic coordinator.
"""

from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"
