"""TLS listeners and HTTP basic authentication as Confluent's registry offers them. An https listener takes
`ssl.keystore.location` (a PEM file of key and certificate chain; `ssl.key.password`), `ssl.truststore.location`
(PEM) and `ssl.client.authentication` (NONE, REQUESTED, REQUIRED). `authentication.method=BASIC` checks every
request's credentials against the users of a JAAS file's section named `authentication.realm` (Jetty's
PropertyFileLoginModule: `file="users.properties"`, each line `user: password[,role...]`, the password plain or
`MD5:` hex); the JAAS file is named by our key `authentication.jaas.file` or, as for Confluent's, by
`-Djava.security.auth.login.config=` in SCHEMA_REGISTRY_OPTS. `authentication.roles` (default `*`) are the roles
allowed in."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import ssl
from typing import Any

from aiohttp import web

from odradek.config_keys import ConfigError
from odradek.schema_registry.admission import USER_KEY
from odradek.schema_registry.config import RegistryConfig, RegistryConfigError
from odradek.security.http_host import same_secret
from odradek.security.tls import server_context

CLIENT_AUTH = {"NONE": "none", "REQUESTED": "requested", "REQUIRED": "required", "TRUE": "required",
               "FALSE": "none"}


def listener_ssl_context(config: RegistryConfig) -> ssl.SSLContext:
    props = config.props
    auth = props.get("ssl.client.authentication") or props.get("ssl.client.auth") or "NONE"

    def lookup(key: str) -> str | None:
        if key == "ssl.client.auth":
            return CLIENT_AUTH.get(auth.upper(), auth)
        if key.endswith(".type") and (props.get(key) or "PEM").upper() != "PEM":
            return props.get(key)
        return props.get(key) or None

    try:
        return server_context(lookup)
    except ConfigError as exc:
        raise RegistryConfigError(str(exc)) from None


def _jaas_path(config: RegistryConfig) -> str:
    path = config.props.get("authentication.jaas.file", "")
    if not path:
        found = re.search(r"-Djava\.security\.auth\.login\.config=(\S+)", os.environ.get("SCHEMA_REGISTRY_OPTS", ""))
        path = found.group(1) if found else ""
    if not path:
        raise RegistryConfigError("authentication.method=BASIC needs authentication.jaas.file (or "
                                  "-Djava.security.auth.login.config in SCHEMA_REGISTRY_OPTS)")
    return path


def read_users(config: RegistryConfig) -> dict[str, tuple[str, set[str]]]:
    """user -> (stored password, roles) from the realm's property file."""
    realm = config.props["authentication.realm"]
    try:
        with open(_jaas_path(config), encoding="utf-8") as f:
            jaas = f.read()
    except OSError as exc:
        raise RegistryConfigError(f"Cannot read the JAAS file: {exc.strerror or exc}") from None
    section = re.search(r"(?s)(?:^|\n)\s*" + re.escape(realm) + r"\s*\{(.*?)\}\s*;", jaas) if realm else None
    if section is None:
        raise RegistryConfigError(f"The JAAS file has no section for authentication.realm '{realm}'")
    file = re.search(r'file\s*=\s*"([^"]*)"', section.group(1))
    if file is None:
        raise RegistryConfigError(f"The JAAS section {realm} names no file=\"...\" of users")
    users: dict[str, tuple[str, set[str]]] = {}
    try:
        with open(file.group(1), encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith(("#", "!")) or ":" not in line:
                    continue
                user, _, rest = line.partition(":")
                password, *roles = [p.strip() for p in rest.split(",")]
                users[user.strip()] = (password, set(roles))
    except OSError as exc:
        raise RegistryConfigError(f"Cannot read the users file {file.group(1)}: {exc.strerror or exc}") from None
    return users


def _password_ok(given: str, stored: str) -> bool:
    if stored.startswith("MD5:"):
        return same_secret(hashlib.md5(given.encode()).hexdigest(), stored[4:].lower())
    return same_secret(given, stored)


def basic_auth_middleware(config: RegistryConfig) -> Any:
    users = read_users(config)
    allowed = {r.strip() for r in config.props["authentication.roles"].split(",") if r.strip()}
    realm = config.props["authentication.realm"]

    def refuse() -> web.Response:
        return web.Response(status=401, text='{"error_code":401,"message":"Unauthorized"}',
                            content_type="application/vnd.schemaregistry.v1+json",
                            headers={"WWW-Authenticate": f'Basic realm="{realm}"'})

    @web.middleware
    async def check(request: web.Request, handler: Any) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        if not header.lower().startswith("basic "):
            return refuse()
        try:
            user, _, password = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return refuse()
        entry = users.get(user)
        if entry is None or not _password_ok(password, entry[0]):
            return refuse()
        if "*" not in allowed and not (entry[1] & allowed):
            return web.Response(status=403, text='{"error_code":403,"message":"Forbidden"}',
                                content_type="application/vnd.schemaregistry.v1+json")
        request[USER_KEY] = user  # whose share of the heavy work the request takes (admission.py)
        return await handler(request)

    return check
