"""Message classes of the KIP-1071 streams-group APIs that kafka-python 3.0.12 has no schema for:
StreamsGroupHeartbeat (API 88) and StreamsGroupDescribe (API 89), at the versions Kafka 4.4 serves (v0-1
each), and KIP-1331's StreamsGroupTopologyDescriptionUpdate (API 93, v0).

The schemas beside this module are Kafka's message definitions reduced to the fields (names, types,
versions, defaults, read off Kafka 4.4's generated schemas); kafka-python's schema machinery builds the
classes from them (`odradek.protocol.json_messages`).
"""

from __future__ import annotations

import sys
from typing import Any

from odradek.protocol.json_messages import message_classes, no_such_message

__all__ = ["StreamsGroupDescribeRequest", "StreamsGroupDescribeResponse", "StreamsGroupHeartbeatRequest",
           "StreamsGroupHeartbeatResponse", "StreamsGroupTopologyDescriptionUpdateRequest",
           "StreamsGroupTopologyDescriptionUpdateResponse"]

globals().update(message_classes(sys.modules[__name__], __all__))


def __getattr__(name: str) -> Any:  # the classes are made above; this tells type checkers they exist
    raise no_such_message(__name__, name)
