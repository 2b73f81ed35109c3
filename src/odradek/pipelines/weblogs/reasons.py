"""Why a line went to the dead-letter topic: the parser's reasons, shared with the generator's labels."""

from __future__ import annotations

EMPTY = "empty line"
UNPARSEABLE = "unparseable line"
BAD_TIMESTAMP = "bad timestamp"
BAD_STATUS = "bad status"
BAD_BYTES = "bad bytes"
BAD_LATENCY = "bad latency"
UNDECODABLE = "undecodable value"  # with a schema registry: not framed Avro of a known schema

ALL = (EMPTY, UNPARSEABLE, BAD_TIMESTAMP, BAD_STATUS, BAD_BYTES, BAD_LATENCY, UNDECODABLE)
