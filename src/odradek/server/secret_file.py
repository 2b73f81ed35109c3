"""The start-up check that files holding secrets are private: a server.properties with a password or a JAAS
config, or the JAAS file the ZooKeeper client logs in with, that group or others can read gives the broker a
WARN line naming the file, its mode and what it holds (never the values)."""

from __future__ import annotations

import os
import stat

from odradek.config import BrokerConfig


def exposed_file_warning(path: str, holds: str) -> str | None:
    """The warning for `path` holding `holds` when group or others may read it; None when only its owner
    may, or it cannot be examined."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return None
    readers = " and ".join(w for bit, w in ((stat.S_IRGRP, "group"), (stat.S_IROTH, "others")) if mode & bit)
    return f"{path} holds {holds} and is readable by {readers} (mode {mode:04o}); restrict it with chmod 600"


def exposed_secrets_warning(path: str, config: BrokerConfig) -> str | None:
    """The warning for `path`, the config file `config` was loaded from, when it holds a secret."""
    secrets = config.secret_keys()
    if not secrets:
        return None
    warning = exposed_file_warning(path, f"secrets ({', '.join(secrets)})")
    return f"Configuration file {warning}" if warning else None
