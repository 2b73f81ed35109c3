"""Message classes of KIP-932's admin APIs for share-group offsets that kafka-python 3.0.12 has no schema
for: DescribeShareGroupOffsets (90, v0-1; v1 adds each partition's Lag, KIP-1226), AlterShareGroupOffsets
(91, v0) and DeleteShareGroupOffsets (92, v0), the versions Kafka 4.2 serves.

The schemas beside this module are Kafka 4.2's message definitions reduced to names, types, versions and
defaults; `odradek.protocol.json_messages` builds the classes from them, as for `odradek.protocol.kip932`.
The responses of Alter and Delete carry a top-level error (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND...) besides
the per-topic or per-partition ones; DeleteShareGroupOffsets names whole topics, not partitions.
"""

from __future__ import annotations

import sys
from typing import Any

from odradek.protocol.json_messages import message_classes, no_such_message

__all__ = ["AlterShareGroupOffsetsRequest", "AlterShareGroupOffsetsResponse", "DeleteShareGroupOffsetsRequest",
           "DeleteShareGroupOffsetsResponse", "DescribeShareGroupOffsetsRequest",
           "DescribeShareGroupOffsetsResponse"]

globals().update(message_classes(sys.modules[__name__], __all__))


def __getattr__(name: str) -> Any:  # the classes are made above; this tells type checkers they exist
    raise no_such_message(__name__, name)
