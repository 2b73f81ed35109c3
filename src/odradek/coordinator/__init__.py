"""The coordinator runtime: state machines kept in compacted internal topics (`__consumer_offsets`,
`__transaction_state`), as Kafka's `coordinator-common` keeps them for its group, share and transaction
coordinators.

- `placement`: which partition of an internal topic holds a key (Kafka's hash of the key).
- `partitions`: the narrow protocols the runtime needs from the broker: a `PartitionWriter` (leadership of
  a partition, its log to replay, appends through the leader) and `CoordinatorMetadata` (topic and broker
  metadata, leadership change notifications, creating the topic). `odradek.server.coordinator_partitions`
  implements both over the broker's replica manager and metadata cache; unit tests use fakes.
- `loader`: reading a partition from its log start to its end as a reader of committed data sees it.
- `runtime`: `CoordinatorRuntime`, one per internal topic: loads a partition by replaying it when this
  broker becomes its leader, serves its keys only then (COORDINATOR_LOAD_IN_PROGRESS before,
  NOT_COORDINATOR elsewhere), writes records through the partition leader (acks=all), and unloads the
  partition when this broker stops leading it (or leads it at a new epoch: fencing). What a partition's
  records mean is the `CoordinatorShard`'s business (groups, transactions).

Nothing here knows groups or transactions; `odradek.groups` and `odradek.txn` build on it.
"""

from __future__ import annotations
