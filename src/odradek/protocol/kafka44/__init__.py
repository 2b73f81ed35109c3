"""Message classes of the APIs whose Kafka 4.4 versions kafka-python 3.0.12 has no schema for: ApiVersions
v5 (KIP-1242: the cluster id and node id the client means to reach) and DeleteGroups v3 (a message beside
each group's error code). Each class covers every version of its API, the old ones as kafka-python's.

The schemas beside this module are Kafka's message definitions reduced to the fields (names, types,
versions, defaults); kafka-python's schema machinery builds the classes from them (`load_json=` names the
package to read them from), so they encode and decode like every other message the broker handles.
"""

from __future__ import annotations

import sys
from typing import Any

from odradek.protocol.json_messages import message_classes, no_such_message

__all__ = ["ApiVersionsRequest", "ApiVersionsResponse", "DeleteGroupsRequest", "DeleteGroupsResponse"]

globals().update(message_classes(sys.modules[__name__], __all__))


def __getattr__(name: str) -> Any:  # the classes are made above; this tells type checkers they exist
    raise no_such_message(__name__, name)
