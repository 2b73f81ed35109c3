"""The console's web application: aiohttp routes, server-rendered jinja2 pages and a few JSON endpoints.

Pages render on the server. Each has a `live` block that the page's script re-fetches every few seconds
(the same URL with the `X-Console-Fragment` header answers that block alone), so values stay current
without a second rendering path in JavaScript; charts and the message tail poll JSON endpoints.

Every request first passes the gate (`gate`: Host allowlist, login, same-origin, CSRF and read-only checks).
Actions are POST forms carrying the session's CSRF token; each answers with a redirect back to the page
carrying a one-line result or error; failures never show a stack trace. Protocol calls block, so handlers
run them on worker threads, and a request that the cluster does not answer within the request timeout
(`--timeout`) gets a "cluster unreachable" page (504) while the call finishes in the background: a stalled
or vanished cluster never hangs the console.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from aiohttp import web

from odradek.admin_client.schema_registry import (
    LEVELS,
    SUBJECT_NOT_FOUND,
    VERSION_NOT_FOUND,
    RegistryClient,
    RegistryError,
    RegistrySettings,
)
from odradek.console import browse, connectors, framed, gate, schemas
from odradek.console.cluster import ClusterAdmin, ClusterError
from odradek.console.sampler import LagHistory
from odradek.pipelines.weblogs import METRICS_TOPIC

log = logging.getLogger("odradek.console")

HERE = Path(__file__).parent
FRAGMENT_HEADER = gate.FRAGMENT_HEADER
TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Settings:
    """What the pages need besides the cluster."""

    refresh_ms: int = 5000
    metrics_url_template: str | None = None
    weblogs_topic: str = METRICS_TOPIC
    connect_url: str | None = None  # a Kafka Connect worker's REST API, for the Connectors page
    schema_registry: RegistrySettings | None = None  # the operator's schema registry, for the Schemas pages


class UserError(Exception):
    """A bad form value, reported on the page."""


CLUSTER = web.AppKey("cluster", ClusterAdmin)
DECODER = web.AppKey("decoder", framed.FramedDecoder)
HISTORY = web.AppKey("history", LagHistory)
SETTINGS = web.AppKey("settings", Settings)
TEMPLATES = web.AppKey("templates", jinja2.Environment)


def human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=jinja2.select_autoescape(["html"]), undefined=jinja2.StrictUndefined)
    env.filters["bytes"] = human_bytes
    env.filters["dash"] = lambda v: "-" if v is None else v
    return env


# --- rendering ---------------------------------------------------------------------------------


def render(request: web.Request, name: str, status: int = 200, **context: Any) -> web.Response:
    """The page `name`, or only its `live` block when the page's script asks for it."""
    app = request.app
    cluster = app[CLUSTER]
    context.update(cluster_id=cluster.cluster_id, bootstrap=cluster.bootstrap, settings=app[SETTINGS],
                   path=request.path, ok=request.query.get("ok"), error=context.get("error") or request.query.get("error"),
                   csrf_token=gate.csrf_token(request), csrf_field=gate.CSRF_FIELD,
                   read_only=app[gate.GATE].read_only)
    template = app[TEMPLATES].get_template(name)
    # A block rendered alone sees the context but not the template's top-level imports: a live block
    # imports the macros it uses itself.
    if request.headers.get(FRAGMENT_HEADER) == "live" and "live" in template.blocks:
        html = "".join(template.blocks["live"](template.new_context(context)))
    else:
        html = template.render(context)
    return web.Response(text=html, content_type="text/html", status=status)


def back(location: str, *, ok: str | None = None, error: str | None = None) -> web.HTTPSeeOther:
    query = {k: v for k, v in (("ok", ok), ("error", error)) if v}
    return web.HTTPSeeOther(location + ("?" + urlencode(query) if query else ""))


async def call(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


# --- the Connectors page (a Connect worker's REST API, `connectors.py`) ---------------------------------


async def connectors_page(request: web.Request) -> web.StreamResponse:
    client = request.app.get(connectors.CONNECT)
    if client is None:
        return render(request, "error.html", status=404, title="No Connect worker",
                      error="No Connect worker: start the console with --connect-url URL")
    try:
        rows, error = await call(client.connectors), None
    except connectors.ConnectError as exc:
        rows, error = [], str(exc)
    return render(request, "connectors.html", title="Connectors", connectors=rows, connect_url=client.url,
                  error=error)


async def connector_action(request: web.Request) -> web.StreamResponse:
    client = request.app.get(connectors.CONNECT)
    name, action = request.match_info["name"], request.match_info["action"]
    if client is None or action not in connectors.ACTIONS:
        raise web.HTTPNotFound()
    try:
        await call(client.act, name, action)
    except connectors.ConnectError as exc:
        raise back("/connectors", error=f"Could not {action} {name}: {exc}") from None
    log.info("Asked the Connect worker to %s connector %s", action, name)
    raise back("/connectors", ok=f"Asked the worker to {action} {name}")


# --- the Schemas pages (a schema registry's REST API, `schemas.py`) ----------------------------------------


NO_REGISTRY = ("No schema registry: start the console with --schema-registry-url URL, or point it at a cluster "
               "whose brokers run one (schema_registry_api)")


async def _registry(request: web.Request) -> RegistryClient | None:
    return await call(request.app[schemas.REGISTRY].client)


async def registry_call(request: web.Request, client: RegistryClient, fn: Callable[..., Any], *args: Any) -> Any:
    """A blocking registry call within most of the request's deadline: a registry that stalls is reported as
    the registry's silence, not as the cluster's (which the deadline's own answer would say)."""
    budget = request.app[CLUSTER].timeout * 0.8
    try:
        return await asyncio.wait_for(call(fn, *args), budget)
    except TimeoutError:
        raise RegistryError(f"Schema registry unreachable at {client.url}: no answer within {int(budget * 1000)} ms",
                            unreachable=True) from None


async def schemas_page(request: web.Request) -> web.StreamResponse:
    client = await _registry(request)
    if client is None:
        return render(request, "error.html", status=404, title="No schema registry", error=NO_REGISTRY)
    prefix = request.query.get("prefix", "")
    try:
        page = max(int(request.query.get("page") or 0), 0)
    except ValueError:
        page = 0
    try:
        rows, total, global_level = await registry_call(request, client, schemas.subject_rows, client, prefix,
                                                           page)
        error = None
    except RegistryError as exc:
        rows, total, global_level, error = [], 0, None, str(exc)
    return render(request, "schemas.html", title="Schemas", subjects=rows, total=total, page=page, prefix=prefix,
                  page_size=schemas.PAGE_SIZE, global_level=global_level, levels=LEVELS, registry_url=client.url,
                  error=error)


async def subject_page(request: web.Request) -> web.StreamResponse:
    client = await _registry(request)
    if client is None:
        return render(request, "error.html", status=404, title="No schema registry", error=NO_REGISTRY)
    q = request.query
    name = q.get("name", "")
    version = q.get("version", "latest") or "latest"
    diff = (q["from"], q["to"]) if q.get("from") and q.get("to") else None
    try:
        view = await registry_call(request, client, schemas.subject_view, client, name, version, diff)
    except RegistryError as exc:
        code = exc.code or 0  # the HTTP status or Confluent's error code (42202: an invalid version)
        refused = 400 <= code < 500 or 40000 <= code < 50000
        status = 404 if code in (SUBJECT_NOT_FOUND, VERSION_NOT_FOUND) else 400 if refused else 502
        return render(request, "error.html", status=status, title=f"Subject {name}", error=str(exc))
    # the diff form offers the last two versions unless a diff was asked for
    shown_from, shown_to = diff or (str(view.versions[-2:][0]) if view.versions else "",
                                    str(view.versions[-1]) if view.versions else "")
    return render(request, "subject.html", title=f"Subject {name}", view=view, levels=LEVELS,
                  registry_url=client.url, diff_from=shown_from, diff_to=shown_to)


async def schemas_config(request: web.Request) -> web.StreamResponse:
    """Set (or, for a subject, remove) a compatibility level; back to the page the form was on."""
    client = await _registry(request)
    if client is None:
        raise web.HTTPNotFound()
    form = await request.post()
    subject = str(form.get("subject", "")) or None
    level = str(form.get("level", "")).upper()
    here = "/schemas" if subject is None else f"/schemas/subject?{urlencode({'name': subject})}"
    name = "the global level" if subject is None else f"the level of {subject}"
    try:
        if subject is not None and form.get("reset") == "1":
            await registry_call(request, client, client.delete_config, subject)
            done = f"Removed the compatibility level of {subject}: the global level applies"
        elif level not in LEVELS:
            raise UserError(f"'{level}' is not a compatibility level ({', '.join(LEVELS)})")
        else:
            await registry_call(request, client, client.set_config, subject, level)
            done = f"Set {name} to {level}"
    except (UserError, RegistryError) as exc:
        raise back_to(here, error=f"Could not change {name}: {exc}") from None
    log.info("Schema registry %s: %s", client.url, done)
    raise back_to(here, ok=done)


def back_to(location: str, *, ok: str | None = None, error: str | None = None) -> web.HTTPSeeOther:
    """`back` to a location that may have a query already."""
    query = urlencode({k: v for k, v in (("ok", ok), ("error", error)) if v})
    return web.HTTPSeeOther(location + ("&" if "?" in location else "?") + query if query else location)


# --- middlewares -------------------------------------------------------------------------------


def failure(request: web.Request, status: int, title: str, error: str) -> web.Response:
    """An error answer: JSON for the API, else the error page."""
    if request.path.startswith("/api/"):
        return web.json_response({"error": error}, status=status)
    return render(request, "error.html", status=status, title=title, error=error)


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A deadline on every request; cluster errors as a page with one line; no stack trace ever shown."""
    cluster = request.app[CLUSTER]
    try:
        return await asyncio.wait_for(handler(request), cluster.timeout)
    except web.HTTPException:
        raise
    except TimeoutError:
        log.warning("No answer from the cluster within %d ms for %s %s", cluster.timeout_ms, request.method,
                    request.path)
        return failure(request, 504, "Cluster unreachable",
                       f"Cluster unreachable: no answer from {cluster.bootstrap} within {cluster.timeout_ms} ms "
                       "(the console keeps trying; reload to retry)")
    except ClusterError as exc:
        return failure(request, 502, "Cluster unreachable" if exc.unreachable else "Cluster error", str(exc))
    except Exception as exc:
        log.exception("Error serving %s %s", request.method, request.path)
        return failure(request, 500, "Internal error", f"{type(exc).__name__}: {exc}")


# --- brokers -----------------------------------------------------------------------------------


async def index(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/brokers")


async def brokers_page(request: web.Request) -> web.StreamResponse:
    brokers = await call(request.app[CLUSTER].brokers)
    template = request.app[SETTINGS].metrics_url_template
    links: dict[int, str | None] = {}
    if template:
        for b in brokers:
            try:
                links[b.id] = template.format(id=b.id, host=b.host, port=b.port)
            except (KeyError, IndexError, ValueError):
                links[b.id] = None
    return render(request, "brokers.html", title="Brokers", brokers=brokers, links=links)


# --- topics ------------------------------------------------------------------------------------


async def topics_page(request: web.Request) -> web.StreamResponse:
    topics = await call(request.app[CLUSTER].topics)
    show_internal = request.query.get("internal") == "1"
    shown = [t for t in topics if show_internal or not t.internal]
    return render(request, "topics.html", title="Topics", topics=shown, hidden=len(topics) - len(shown),
                  show_internal=show_internal)


def _int_field(form: Any, name: str, label: str, minimum: int, default: int | None = None) -> int:
    raw = str(form.get(name, "")).strip()
    if not raw and default is not None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UserError(f"{label} must be a whole number, not '{raw}'") from None
    if value < minimum:
        raise UserError(f"{label} must be at least {minimum}")
    return value


def _configs_field(text: str) -> dict[str, str]:
    configs = {}
    for line in text.replace(",", "\n").splitlines():
        line = line.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise UserError(f"config '{line}' is not key=value")
        configs[key.strip()] = value.strip()
    return configs


async def create_topic(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    name = str(form.get("name", "")).strip()
    try:
        if not TOPIC_NAME.match(name) or name in (".", ".."):
            raise UserError(f"'{name}' is not a valid topic name (letters, digits, '.', '_', '-'; at most 249)")
        partitions = _int_field(form, "partitions", "Partitions", 1, 1)
        rf = _int_field(form, "replication_factor", "Replication factor", 1, 1)
        configs = _configs_field(str(form.get("configs", "")))
        await call(request.app[CLUSTER].create_topic, name, partitions, rf, configs)
    except (UserError, ClusterError) as exc:
        raise back("/topics", error=f"Could not create topic '{name}': {exc}") from None
    log.info("Created topic %s (%d partitions, replication factor %d)", name, partitions, rf)
    raise back(f"/topics/{name}", ok=f"Created topic {name}")


async def topic_page(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    cluster = request.app[CLUSTER]
    topic = await call(cluster.topic, name)
    if topic is None:
        return render(request, "error.html", status=404, title="No such topic",
                      error=f"Topic '{name}' does not exist")
    configs = await call(cluster.configs, name)
    return render(request, "topic.html", title=f"Topic {name}", topic=topic, configs=configs)


async def delete_topic(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    form = await request.post()
    if str(form.get("confirm", "")).strip() != name:
        raise back(f"/topics/{name}", error="Type the topic's name to confirm its deletion")
    try:
        await call(request.app[CLUSTER].delete_topic, name)
    except ClusterError as exc:
        raise back(f"/topics/{name}", error=f"Could not delete topic '{name}': {exc}") from None
    log.info("Deleted topic %s", name)
    raise back("/topics", ok=f"Deleted topic {name}")


async def add_partitions(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    form = await request.post()
    try:
        total = _int_field(form, "total", "The new partition count", 1)
        await call(request.app[CLUSTER].add_partitions, name, total)
    except (UserError, ClusterError) as exc:
        raise back(f"/topics/{name}", error=f"Could not add partitions: {exc}") from None
    log.info("Topic %s now has %d partitions", name, total)
    raise back(f"/topics/{name}", ok=f"Topic {name} now has {total} partitions")


async def alter_config(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    form = await request.post()
    key = str(form.get("key", "")).strip()
    reset = form.get("reset") == "1"
    value = None if reset else str(form.get("value", "")).strip()
    try:
        if not key:
            raise UserError("a config name is required")
        await call(request.app[CLUSTER].alter_config, name, key, value)
    except (UserError, ClusterError) as exc:
        raise back(f"/topics/{name}", error=f"Could not change config {key}: {exc}") from None
    done = f"{key} reset to its default" if reset else f"{key}={value}"
    log.info("Topic %s: %s", name, done)
    raise back(f"/topics/{name}", ok=f"Config of {name} updated: {done}")


# --- messages ----------------------------------------------------------------------------------


async def messages_page(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    cluster = request.app[CLUSTER]
    md = await call(cluster.metadata, name)
    meta = md.topics.get(name)
    if meta is None or meta.error is not None:
        return render(request, "error.html", status=404, title="No such topic",
                      error=f"Topic '{name}' does not exist")
    q = request.query
    partitions = sorted(meta.partitions)
    error: str | None = None
    messages: list[browse.Message] = []
    next_offset = end = 0
    try:
        partition = int(q.get("partition", partitions[0] if partitions else 0))
        if partition not in partitions:
            raise UserError(f"topic {name} has no partition {partition}")
        limit = int(q.get("limit") or 20)
        mode = q.get("mode", "offset")
        offset = int(q["offset"]) if mode == "offset" and q.get("offset", "").strip() else None
        timestamp = browse.parse_time(q["timestamp"]) if mode == "timestamp" and q.get("timestamp") else None
        messages, next_offset, end = await call(browse.read, cluster, name, partition, offset, timestamp, limit,
                                                2.0, request.app[DECODER])
    except ValueError as exc:
        error = f"Bad value: {exc}"
        partition, limit, mode = partitions[0] if partitions else 0, 20, "offset"
    except (UserError, ClusterError) as exc:
        error = str(exc)
        partition, limit, mode = partitions[0] if partitions else 0, 20, "offset"
    return render(request, "messages.html", title=f"Messages of {name}", topic=name, partitions=partitions,
                  partition=partition, limit=limit, mode=mode, offset=q.get("offset", ""),
                  timestamp=q.get("timestamp", ""), messages=messages, next_offset=next_offset, end=end,
                  error=error)


async def messages_api(request: web.Request) -> web.StreamResponse:
    """New records for the live tail: {next, rows_html, count} from `offset` on."""
    name = request.match_info["name"]
    try:
        partition = int(request.query["partition"])
        offset = int(request.query["offset"])
        limit = int(request.query.get("limit", 100))
    except (KeyError, ValueError):
        return web.json_response({"error": "partition and offset are required integers"}, status=400)
    try:
        messages, next_offset, _end = await call(browse.read, request.app[CLUSTER], name, partition, offset,
                                                 None, limit, 1.0, request.app[DECODER])
    except ClusterError as exc:
        return web.json_response({"error": str(exc)}, status=502)
    macro = request.app[TEMPLATES].get_template("macros.html").module.message_row  # type: ignore[attr-defined]
    rows = "".join(str(macro(m)) for m in messages)
    return web.json_response({"next": next_offset, "count": len(messages), "rows_html": rows,
                              "messages": [m.as_json() for m in messages]})


# --- consumer groups -----------------------------------------------------------------------------


async def groups_page(request: web.Request) -> web.StreamResponse:
    cluster = request.app[CLUSTER]
    shared = await call(cluster.share_groups)
    share_ids = {g.id for g in shared}
    groups = [g for g in await call(cluster.groups) if g.id not in share_ids] + shared
    return render(request, "groups.html", title="Groups", groups=sorted(groups, key=lambda g: g.id))


async def group_page(request: web.Request) -> web.StreamResponse:
    group_id = request.match_info["group"]
    group = await call(request.app[CLUSTER].group, group_id)
    if group is None:
        shared = await call(request.app[CLUSTER].share_group, group_id)
        if shared is not None:
            return render(request, "share_group.html", title=f"Share group {group_id}", group=shared[0],
                          partitions=shared[1], total_lag=sum(p.lag or 0 for p in shared[1]))
        return render(request, "error.html", status=404, title="No such group",
                      error=f"Consumer group '{group_id}' does not exist")
    return render(request, "group.html", title=f"Consumer group {group_id}", group=group,
                  topics=sorted({p.topic for p in group.partitions}))


async def group_lag_api(request: web.Request) -> web.StreamResponse:
    return web.json_response(request.app[HISTORY].series(request.match_info["group"]))


async def reset_offsets(request: web.Request) -> web.StreamResponse:
    group_id = request.match_info["group"]
    form = await request.post()
    to = str(form.get("to", ""))
    topic = str(form.get("topic", "")) or None
    here = f"/groups/{quote(group_id, safe='')}"
    try:
        offset = _int_field(form, "offset", "The offset", 0) if to == "offset" else None
        target = await call(request.app[CLUSTER].reset_offsets, group_id, to, offset, topic)
    except (UserError, ClusterError) as exc:
        raise back(here, error=f"Could not reset offsets: {exc}") from None
    log.info("Reset offsets of group %s to %s: %s", group_id, to,
             ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(target.items())))
    raise back(here, ok=f"Reset {len(target)} partition offset(s) of {group_id} to "
                        + (str(offset) if to == "offset" else to))


# --- weblogs metrics -----------------------------------------------------------------------------


async def weblogs_page(request: web.Request) -> web.StreamResponse:
    topic = request.app[SETTINGS].weblogs_topic
    md = await call(request.app[CLUSTER].metadata)
    exists = topic in md.topics
    return render(request, "weblogs.html", title="Weblogs metrics", topic=topic, exists=exists)


async def weblogs_api(request: web.Request) -> web.StreamResponse:
    windows, problem = await call(browse.weblogs_metrics, request.app[CLUSTER], request.app[SETTINGS].weblogs_topic,
                                  request.app[DECODER])
    keys = ("requests", "bytes", "error_rate_4xx", "error_rate_5xx", "latency_p50_ms", "latency_p95_ms",
            "latency_p99_ms", "distinct_clients")
    # the minute under way is still counting: charted with the finished ones it would look like a drop
    now = time.time()
    done = [w for w in windows if _window_end_s(w) <= now]
    current = next((w for w in reversed(windows) if _window_end_s(w) > now), None)
    return web.json_response({"t": [w["t"] for w in done],
                              **{k: [w.get(k) for w in done] for k in keys},
                              "latest": done[-1] if done else None, "current": current, "problem": problem})


def _window_end_s(window: dict[str, Any]) -> float:
    end = window.get("window_end")
    try:
        return browse.parse_time(str(end)) / 1000 if end is not None else float(window["t"]) + 60
    except ValueError:
        return float(window["t"]) + 60


# --- the application -----------------------------------------------------------------------------


def discover_registry(cluster: ClusterAdmin) -> str | None:
    """The registry a broker of the cluster runs (`schema_registry_api`), if any answers with one."""
    try:
        found = cluster.broker_config("schema_registry_api")
    except ClusterError as exc:
        log.debug("Could not ask the cluster for a schema registry: %s", exc)
        return None
    if found is None:
        return None
    url = schemas.registry_url_of(*found)
    if url is not None:
        log.info("Using the schema registry the cluster runs at %s", url)
    return url


def create_app(cluster: ClusterAdmin, history: LagHistory, settings: Settings, access: gate.Gate) -> web.Application:
    app = web.Application(middlewares=[*gate.MIDDLEWARES, guard])
    app[CLUSTER] = cluster
    app[HISTORY] = history
    app[SETTINGS] = settings
    app[TEMPLATES] = environment()
    access.login_template = app[TEMPLATES].get_template("login.html")
    gate.install(app, access)
    r = app.router
    r.add_get("/", index)
    r.add_get("/brokers", brokers_page)
    r.add_get("/topics", topics_page)
    r.add_post("/topics", create_topic)
    r.add_get("/topics/{name}", topic_page)
    r.add_post("/topics/{name}/delete", delete_topic)
    r.add_post("/topics/{name}/partitions", add_partitions)
    r.add_post("/topics/{name}/config", alter_config)
    r.add_get("/topics/{name}/messages", messages_page)
    r.add_get("/api/topics/{name}/messages", messages_api)
    r.add_get("/groups", groups_page)
    r.add_get("/groups/{group}", group_page)
    r.add_post("/groups/{group}/reset", reset_offsets)
    r.add_get("/api/groups/{group}/lag", group_lag_api)
    r.add_get("/weblogs", weblogs_page)
    r.add_get("/api/weblogs", weblogs_api)
    connectors.install(app, settings.connect_url, cluster.timeout)
    r.add_get("/connectors", connectors_page)
    r.add_post("/connectors/{name}/{action}", connector_action)
    schemas.install(app, settings.schema_registry, cluster.timeout, lambda: discover_registry(cluster))
    app[DECODER] = framed.FramedDecoder(app[schemas.REGISTRY], cluster.timeout)
    r.add_get("/schemas", schemas_page)
    r.add_get("/schemas/subject", subject_page)
    r.add_post("/schemas/config", schemas_config)
    r.add_static("/static", HERE / "static")
    return app
