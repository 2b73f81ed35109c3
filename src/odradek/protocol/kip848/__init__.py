"""Message classes of the KIP-848 APIs that kafka-python 3.0.12 has no schema for: ConsumerGroupHeartbeat
(API 68) and ConsumerGroupDescribe (API 69), at the versions Kafka 4.0 serves (v0-1 each).

The schemas beside this module are Kafka's message definitions reduced to the fields (names, types,
versions, defaults); kafka-python's schema machinery builds the classes from them (`load_json=` names the
package to read them from), so they encode and decode like every other message the broker handles.
"""

from __future__ import annotations

import sys

from kafka.protocol.api_message import ApiMessage

_HERE = sys.modules[__name__]


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


__all__ = ["ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse", "ConsumerGroupHeartbeatRequest",
           "ConsumerGroupHeartbeatResponse"]
