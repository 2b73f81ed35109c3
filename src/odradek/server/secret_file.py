"""The start-up check that a configuration file holding secrets is private: a server.properties with a
password or a JAAS config that group or others can read gives the broker a WARN line naming the file, its
mode and the keys (never their values)."""

from __future__ import annotations

import os
import stat

from odradek.config import BrokerConfig


def exposed_secrets_warning(path: str, config: BrokerConfig) -> str | None:
    """The warning for `path` (the config file `config` was loaded from), or None when it holds no secret,
    cannot be examined, or only its owner may read it."""
    secrets = config.secret_keys()
    if not secrets:
        return None
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return None
    readers = " and ".join(w for bit, w in ((stat.S_IRGRP, "group"), (stat.S_IROTH, "others")) if mode & bit)
    return (f"Configuration file {path} holds secrets ({', '.join(secrets)}) and is readable by {readers} "
            f"(mode {mode:04o}); restrict it with chmod 600")
