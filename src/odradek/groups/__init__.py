"""Consumer groups of every type on the coordinator runtime (`odradek.coordinator`), and their records in
`__consumer_offsets`.

- `service`: `GroupCoordinatorService`, the one group coordinator the broker builds and the request
  handlers call; the `CoordinatorShard` of `__consumer_offsets`; routes each API to the group's type.
- `offset_manager`: the one `OffsetManager` for every group type (commits, transactional commits, fetch,
  delete, retention) and the `GroupType` protocol of what it asks a group type.
- `store`: the `GroupStore` protocol the coordinator persists through (the runtime; fakes in tests).
- `schemas`, `consumer_schemas`, `share_schemas`: Kafka's key/value formats of the records in `__consumer_offsets`;
  `offsets`: how a partition's records replay into groups, and the topic's settings.

Classic groups: `group` (one group's state machine: states, members, generation, protocol selection,
static members; pure state, no I/O) and `coordinator` (`GroupCoordinator`, the classic group type: timers
and the rebalance orchestration). KIP-848 consumer groups (`group.protocol=consumer`): `consumer_group`
(epochs, members, target assignment, reconciliation; pure, no I/O), `assignors` (`uniform`, `range`) and
`consumer_coordinator` (`ConsumerGroupCoordinator`, the consumer group type: heartbeats, timers, migration
of empty groups between the types).
"""

from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"
