"""The ACL authorizer: `authorizer.class.name` (Kafka's AclAuthorizer or StandardAuthorizer; both mean
the same ACL semantics here), `super.users` and `allow.everyone.if.no.acl.found`, over this broker's
AclCache. Denials are logged as Kafka's authorizer logs them, on the `kafka.authorizer.logger` logger at
INFO, at a bounded rate.

No listener is privileged: a connection's principal is what its listener authenticated (the SASL user,
the TLS client certificate's subject) or User:ANONYMOUS (PLAINTEXT, and TLS without a client
certificate), and it is authorized like any other. Brokers reach each other with the inter-broker
listener's credentials, so `super.users` must name the brokers' own principal, as in Kafka; a cluster
whose inter-broker listener is PLAINTEXT needs `super.users=User:ANONYMOUS`, which makes every client of
a PLAINTEXT listener a super user too (the broker warns at start-up).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from odradek.config_keys import ConfigError
from odradek.security.acl import (
    SUPPORTED_OPERATIONS,
    AclOperation,
    PatternType,
    ResourcePattern,
    ResourceType,
    decide,
    decide_by_type,
)
from odradek.security.acl_store import AclCache

AUTHORIZER_CLASSES = ("kafka.security.authorizer.AclAuthorizer",
                      "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
audit = logging.getLogger("kafka.authorizer.logger")


def parse_super_users(text: str | None) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (User:CN=a,O=b keeps its commas)."""
    return frozenset(p.strip() for p in (text or "").split(";") if p.strip())


def check_class(name: str | None) -> bool:
    """Whether `authorizer.class.name` asks for an authorizer; ConfigError (one line) for one we lack."""
    name = (name or "").strip()
    if not name:
        return False
    if name not in AUTHORIZER_CLASSES:
        raise ConfigError(f"authorizer.class.name={name}: Odradek provides {' and '.join(AUTHORIZER_CLASSES)} "
                          "(the same ACL authorizer)")
    return True


class RateLimiter:
    """A token bucket: `rate` events a second, bursts of `burst`; counts what it refused."""

    def __init__(self, rate: float = 10.0, burst: float = 50.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = burst
        self.last = clock()
        self.suppressed = 0

    def allow(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        self.suppressed += 1
        return False


class Authorizer:
    def __init__(self, cache: AclCache, super_users: frozenset[str], allow_if_no_acl: bool) -> None:
        self.cache = cache
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._log_limit = RateLimiter()

    def is_super(self, principal: str, listener: str) -> bool:
        """`listener` is not consulted: which listener a request came in on grants nothing by itself."""
        return principal in self.super_users

    def authorize(self, principal: str, host: str, listener: str, op: AclOperation, resource_type: ResourceType,
                  name: str, request: str = "", log_denial: bool = True) -> bool:
        if self.is_super(principal, listener):
            return True
        decision = decide(self.cache.table.matching(resource_type, name), principal, host, op, self.allow_if_no_acl)
        if not decision.allowed and log_denial and audit.isEnabledFor(logging.INFO):
            self._log_denied(principal, host, op, ResourcePattern(resource_type, name, PatternType.LITERAL), request,
                             decision.reason)
        return decision.allowed

    def authorize_by_type(self, principal: str, host: str, listener: str, op: AclOperation,
                          resource_type: ResourceType) -> bool:
        if self.is_super(principal, listener):
            return True
        return decide_by_type(self.cache.table, resource_type, principal, host, op, self.allow_if_no_acl)

    def authorized_operations(self, principal: str, host: str, listener: str, resource_type: ResourceType,
                              name: str) -> set[int]:
        supported = SUPPORTED_OPERATIONS.get(resource_type, frozenset())
        if self.is_super(principal, listener):
            return {int(op) for op in supported}
        acls = self.cache.table.matching(resource_type, name)
        return {int(op) for op in supported if decide(acls, principal, host, op, self.allow_if_no_acl).allowed}

    def _log_denied(self, principal: str, host: str, op: AclOperation, resource: ResourcePattern, request: str,
                    reason: str) -> None:
        limit = self._log_limit
        if not limit.allow():
            return
        if limit.suppressed:
            audit.info("%d authorization denials were not logged (more than %g a second)", limit.suppressed,
                       limit.rate)
            limit.suppressed = 0
        audit.info("Principal = %s is Denied operation = %s from host = %s on resource = %s for request = %s "
                   "with resourceRefCount = 1 based on rule %s", principal, op.name, host, resource.log_name(),
                   request or "?", reason)
