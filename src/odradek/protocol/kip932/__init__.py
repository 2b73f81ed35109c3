"""Message classes of the KIP-932 share-group APIs that kafka-python 3.0.12 has no schema for:
ShareGroupHeartbeat (76) and ShareGroupDescribe (77) at v1, ShareFetch (78) and ShareAcknowledge (79) at
v1-2 — Kafka 4.2's versions (librdkafka 2.16's `ShareConsumer` sends v1; v2 adds ShareAcquireMode,
KIP-1206, and IsRenewAck with the RENEW acknowledgement, KIP-1222, and ShareAcknowledge's answer gains
AcquisitionLockTimeoutMs); and the share-state APIs brokers send to the share coordinator at Kafka 4.2's
versions: InitializeShareGroupState (83) v0, ReadShareGroupState (84) v0, WriteShareGroupState (85) v0-1,
DeleteShareGroupState (86) v0 and ReadShareGroupStateSummary (87) v0-1 (v1 of both adds
DeliveryCompleteCount, KIP-1226).

The schemas beside this module are Kafka's message definitions reduced to the fields of the versions
served (names, types, versions, defaults); kafka-python's schema machinery builds the classes from them
(`load_json=` names the package to read them from), as for `odradek.protocol.kip848`. v1 of ShareFetch
takes MaxRecords and BatchSize instead of a per-partition byte limit and answers AcquisitionLockTimeoutMs.
"""

from __future__ import annotations

import sys
from typing import Any

from odradek.protocol.json_messages import message_classes, no_such_message

__all__ = ["DeleteShareGroupStateRequest", "DeleteShareGroupStateResponse", "InitializeShareGroupStateRequest",
           "InitializeShareGroupStateResponse", "ReadShareGroupStateRequest", "ReadShareGroupStateResponse",
           "ReadShareGroupStateSummaryRequest", "ReadShareGroupStateSummaryResponse", "ShareAcknowledgeRequest",
           "ShareAcknowledgeResponse", "ShareFetchRequest", "ShareFetchResponse", "ShareGroupDescribeRequest",
           "ShareGroupDescribeResponse", "ShareGroupHeartbeatRequest", "ShareGroupHeartbeatResponse",
           "WriteShareGroupStateRequest", "WriteShareGroupStateResponse"]

globals().update(message_classes(sys.modules[__name__], __all__))


def __getattr__(name: str) -> Any:  # the classes are made above; this tells type checkers they exist
    raise no_such_message(__name__, name)
