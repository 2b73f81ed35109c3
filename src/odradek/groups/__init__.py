"""Group coordinator (classic rebalance protocol) and the offset store on `__consumer_offsets`.

- `schemas`: Kafka's key/value formats of the records in `__consumer_offsets`.
- `coordinator`: groups, members, the rebalance state machine, and `GroupCoordinator`, the object the
  broker starts and the request handlers call.
- `offsets`: which `__consumer_offsets` partition holds a group, writing records to it, loading a
  partition when this broker becomes its leader, and offset retention.
"""

from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"
