"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): SCRAM credentials as the
metadata store keeps them (`security/scram_store.py`), with Kafka's per-user errors. The client sends the
salted password; the broker derives and stores the stored and server keys."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

from odradek.protocol.errors import ErrorCode
from odradek.security.scram import MAX_ITERATIONS, MECHANISM_IDS, MIN_ITERATIONS, credential_from_salted
from odradek.security.scram_store import list_users, read_user_config, scram_entries, write_user_config
from odradek.server import authz
from odradek.server.registry import RequestContext, handles

_MECHANISM_NAMES = {v: k for k, v in MECHANISM_IDS.items()}

DescribeResult = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
CredentialInfo = DescribeResult.CredentialInfo
AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


@handles(DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, versions=(0, 0))
async def describe_user_scram_credentials(ctx: RequestContext, request: Any) -> DescribeUserScramCredentialsResponse:
    authz.require(ctx, authz.Op.DESCRIBE, authz.CLUSTER)
    store = ctx.broker.store
    asked = None if request.users is None else [u.name for u in request.users]
    results = []
    if not asked:  # null or empty: every user with a SCRAM credential
        for user in await list_users(store):
            entries = scram_entries(await read_user_config(store, user))
            if entries:
                results.append(_described(user, entries))
    else:
        seen: set[str] = set()
        for user in asked:
            if user in seen:
                continue
            seen.add(user)
            if asked.count(user) > 1:
                results.append(DescribeResult(user=user, error_code=ErrorCode.DUPLICATE_RESOURCE, credential_infos=[],
                                              error_message="Cannot describe SCRAM credentials for the same user "
                                                            f"twice in a single request: {user}"))
                continue
            entries = scram_entries(await read_user_config(store, user))
            if not entries:
                results.append(DescribeResult(user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND, credential_infos=[],
                                              error_message=f"Attempt to describe a user credential that does not "
                                                            f"exist: {user}"))
            else:
                results.append(_described(user, entries))
    return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=0, error_message=None, results=results)


def _described(user: str, entries: dict[str, int]) -> Any:
    infos = [CredentialInfo(mechanism=MECHANISM_IDS[m], iterations=i) for m, i in sorted(entries.items())]
    return DescribeResult(user=user, error_code=0, error_message=None, credential_infos=infos)


@handles(AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, versions=(0, 0))
async def alter_user_scram_credentials(ctx: RequestContext, request: Any) -> AlterUserScramCredentialsResponse:
    store = ctx.broker.store
    errors: dict[str, tuple[int, str]] = {}
    users: list[str] = []
    pairs: list[tuple[str, int]] = []
    for op in [*request.deletions, *request.upsertions]:
        if op.name not in users:
            users.append(op.name)
        if (op.name, op.mechanism) in pairs:
            errors.setdefault(op.name, (ErrorCode.DUPLICATE_RESOURCE,
                                        "A user credential cannot be altered twice in the same request"))
        pairs.append((op.name, op.mechanism))
        if op.mechanism not in _MECHANISM_NAMES:
            errors.setdefault(op.name, (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"))
        if not op.name:
            errors.setdefault(op.name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"))
        if not authz.allowed(ctx, authz.Op.ALTER, authz.CLUSTER):
            errors[op.name] = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    for up in request.upsertions:
        if up.iterations < MIN_ITERATIONS:
            errors.setdefault(up.name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"))
        elif up.iterations > MAX_ITERATIONS:
            errors.setdefault(up.name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"))
    configs = {user: await read_user_config(store, user) for user in users if user not in errors}
    for d in request.deletions:
        if d.name in configs and _MECHANISM_NAMES[d.mechanism] not in configs[d.name]:
            errors.setdefault(d.name, (ErrorCode.RESOURCE_NOT_FOUND,
                                       "Attempt to delete a user credential that does not exist"))
    for user in users:
        if user in errors:
            continue
        config = dict(configs[user])
        for d in request.deletions:
            if d.name == user:
                config.pop(_MECHANISM_NAMES[d.mechanism], None)
        for up in request.upsertions:
            if up.name == user:
                mechanism = _MECHANISM_NAMES[up.mechanism]
                cred = credential_from_salted(mechanism, bytes(up.salted_password), bytes(up.salt), up.iterations)
                config[mechanism] = cred.to_config()
        await write_user_config(store, user, config)
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=[
        AlterResult(user=user, error_code=errors.get(user, (0, None))[0], error_message=errors.get(user, (0, None))[1])
        for user in users
    ])
