"""The feature levels (KIP-584) this broker advertises in ApiVersions, and so what `kafka-features describe`
and the Admin API's describeFeatures show: for each feature the range of levels Odradek can serve and the
level it serves (finalized). Odradek's levels follow what it serves, not a controller's record: they change
only with the broker's code or config, so they are computed, never stored.

- group.version 1: KIP-848 consumer groups (ConsumerGroupHeartbeat), finalized 0 when
  `group.coordinator.rebalance.protocols` leaves "consumer" out.
- share.version 1: KIP-932 share groups; level 2 (Kafka 4.4's share group dead-letter queue) is not served.
- transaction.version 2: KIP-890 part 2 (the Java producer runs "TV2" when finalized >= 2: no
  AddPartitionsToTxn/AddOffsetsToTxn, EndTxn v5 bumping the epoch), finalized at the broker's
  `transaction.version` (2 by default, as on Kafka 4's new clusters; 0 or 1: the older protocol, level
  1 changing only Kafka's own transaction log records, which no client sees).
- streams.version 1 once the KIP-1071 streams group APIs are registered (StreamsGroupHeartbeat, key 88).
- metadata.version, kraft.version and eligible.leader.replicas.version are KRaft's: Odradek has no KRaft
  metadata log, no KRaft quorum and no ELR, and advertises none of them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

STREAMS_GROUP_HEARTBEAT_KEY = 88


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    min_version: int
    max_version: int
    level: int  # finalized; 0 means not finalized (Kafka leaves level-0 features out of FinalizedFeatures)


def features(api_keys: Collection[int], consumer_protocol: bool, transaction_version: int = 2) -> list[Feature]:
    """The features of a broker serving `api_keys`, with or without KIP-848's consumer protocol enabled,
    finalizing `transaction.version` at `transaction_version`."""
    out = [
        Feature("group.version", 0, 1, 1 if consumer_protocol else 0),
        Feature("share.version", 0, 1, 1),
        Feature("transaction.version", 0, 2, transaction_version),
    ]
    if STREAMS_GROUP_HEARTBEAT_KEY in api_keys:
        out.append(Feature("streams.version", 0, 1, 1))
    return out


def finalized_epoch(feats: Collection[Feature]) -> int:
    """FinalizedFeaturesEpoch: the sum of the finalized levels. Kafka's is the metadata log offset of the last
    feature change; clients only take finalized features whose epoch is above the last they saw, so the epoch
    must grow when a level rises (an upgrade) — the sum does, and is the same on every broker of a version."""
    return sum(f.level for f in feats)
