"""Names of partition directories in a log dir (Kafka's LocalLog names): `<topic>-<partition>` for a
log, `<topic>-<partition>.<uuid>-future` for a replica being moved into the dir (KIP-113), and
`<topic>-<partition>.<uuid>-delete` for one being deleted; parsing them back.
"""

from __future__ import annotations

import re
import uuid

MAX_FILE_NAME = 255  # bytes in one path component (ext4, xfs, ...)


def delete_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>.<uuid>-delete`, the topic cut short (as Kafka does) so that the name stays within
    MAX_FILE_NAME: a topic name may have 249 characters, and `<topic>-<partition>` alone fits."""
    suffix = f"-{partition}.{uuid.uuid4().hex}-delete"
    prefix = topic.encode()[: MAX_FILE_NAME - len(suffix)].decode(errors="ignore")
    return prefix + suffix


FUTURE_DIR_SUFFIX = "-future"
_FUTURE_DIR = re.compile(r"^(.+-\d+)\.[0-9a-f]{32}-future$")


def future_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>.<uuid>-future`: a replica being moved into this log dir (KIP-113). Not cut
    short like a delete name: AlterReplicaLogDirs refuses topics whose future name would not fit."""
    return f"{topic}-{partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_future_dir(name: str) -> tuple[str, int] | None:
    """The partition of a future replica's directory name, None for any other name."""
    m = _FUTURE_DIR.match(name)
    return parse_topic_partition(m.group(1)) if m else None


def parse_topic_partition(name: str) -> tuple[str, int]:
    """'my-topic-3' -> ('my-topic', 3): the partition follows the LAST dash."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"Not a partition directory name: {name!r}")
    return topic, int(partition)
