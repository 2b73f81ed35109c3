"""ZooKeeper access for the legacy `--zookeeper` mode of the admin tools (Kafka 2.x): read topic and broker
znodes, write the admin request znodes the controller watches. Blocking kazoo calls, bounded by the
tool's timeout; every failure is a one-line CliError."""

from __future__ import annotations

import json
import logging
from typing import Any

from odradek.cli.common import CliError
from odradek.cluster import znodes as zn


def _quiet_kazoo() -> None:
    logger = logging.getLogger("kazoo")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False


class ZkAdmin:
    """`with ZkAdmin("h:2181/chroot") as zk: ...`"""

    def __init__(self, connect: str, timeout_s: float = 30.0, connect_timeout_s: float = 10.0) -> None:
        self.connect = connect
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._client: Any = None

    def __enter__(self) -> ZkAdmin:
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError

        _quiet_kazoo()
        client = KazooClient(hosts=self.connect, timeout=self.timeout_s)
        try:
            client.start(timeout=self.connect_timeout_s)
        except (KazooTimeoutError, ValueError) as exc:
            client.close()
            raise CliError(f"Error: Timed out waiting for connection to ZooKeeper at {self.connect} "
                           f"within {int(self.connect_timeout_s * 1000)} ms"
                           if isinstance(exc, KazooTimeoutError) else f"Error: invalid --zookeeper: {exc}") from None
        self._client = client
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.stop()
            self._client.close()
            self._client = None

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from kazoo.exceptions import KazooException

        try:
            return fn(*args, **kwargs)
        except KazooException as exc:
            if type(exc).__name__ in ("NoNodeError", "NodeExistsError"):
                raise
            raise CliError(f"Error: ZooKeeper request failed: {type(exc).__name__}") from None

    def get_json(self, path: str) -> Any | None:
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._call(self._client.get, path)
        except NoNodeError:
            return None
        try:
            return json.loads(data.decode("utf-8")) if data else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise CliError(f"Error: malformed JSON in znode {path}") from None

    def children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return sorted(self._call(self._client.get_children, path))
        except NoNodeError:
            return []

    def exists(self, path: str) -> bool:
        return self._call(self._client.exists, path) is not None

    def create_json(self, path: str, data: Any) -> bool:
        """Create a persistent znode holding `data`; False if it already exists."""
        from kazoo.exceptions import NodeExistsError

        body = json.dumps(data, separators=(",", ":")).encode()
        try:
            self._call(self._client.create, path, body, makepath=True)
            return True
        except NodeExistsError:
            return False

    def topic(self, name: str) -> zn.TopicAssignment | None:
        data = self.get_json(zn.topic_path(name))
        if data is None:
            return None
        try:
            return zn.TopicAssignment.from_json(data)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise CliError(f"Error: malformed topic znode {zn.topic_path(name)}") from None

    def topics(self) -> list[str]:
        return self.children(zn.BROKER_TOPICS)

    def broker_ids(self) -> list[int]:
        return sorted(int(i) for i in self.children(zn.BROKER_IDS) if i.isdigit())
