"""Message classes of the KIP-848 APIs that kafka-python 3.0.12 has no schema for: ConsumerGroupHeartbeat
(API 68) and ConsumerGroupDescribe (API 69), at the versions Kafka 4.0 serves (v0-1 each).

The schemas beside this module are Kafka's message definitions reduced to the fields (names, types,
versions, defaults); kafka-python's schema machinery builds the classes from them (`load_json=` names the
package to read them from), so they encode and decode like every other message the broker handles.
"""

from __future__ import annotations

import sys
from typing import Any

from odradek.protocol.json_messages import message_classes, no_such_message

__all__ = ["ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse", "ConsumerGroupHeartbeatRequest",
           "ConsumerGroupHeartbeatResponse"]

globals().update(message_classes(sys.modules[__name__], __all__))


def __getattr__(name: str) -> Any:  # the classes are made above; this tells type checkers they exist
    raise no_such_message(__name__, name)
