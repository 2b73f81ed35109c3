"""Kafka Connect's REST API (port 8083), with Kafka's paths, JSON shapes, status codes and error body
`{"error_code": N, "message": "..."}`: the root, connectors (create, config, status, tasks, pause, resume, stop,
restart, delete, topics, offsets), connector plugins with `config/validate`, loggers and health. Worker calls run
on threads: starting and stopping tasks waits for them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from odradek import __version__
from odradek.connect.api import ConfigException, ConfigValue
from odradek.connect.rest_common import RestError, _json, config_body, create_body, patched
from odradek.connect.worker import FAILED, PAUSED, RUNNING, STOPPED, ConnectorState, Worker

log = logging.getLogger("odradek.connect.rest")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# Kafka 4.4's 404 messages for a connector or task that does not exist, where they differ from the usual
# "Connector NAME not found" ({name}, {task}: the path's)
NO_CONNECTOR_STATUS = "No status found for connector {name}"
NO_TASK_STATUS = "No status found for task {name}-{task}"
UNKNOWN_CONNECTOR = "Unknown connector {name}"  # pause, resume, stop
UNKNOWN_CONNECTOR_COLON = "Unknown connector: {name}"  # restarts (a distributed worker's all of them)


def not_found_message(template: str, request: web.Request) -> str:
    return template.format(name=request.match_info["name"], task=request.match_info.get("task", ""))


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except RestError as exc:
        return _json({"error_code": exc.status, "message": exc.message}, exc.status)
    except ConfigException as exc:
        return _json({"error_code": 400, "message": str(exc)}, 400)
    except web.HTTPNotFound:
        return _json({"error_code": 404, "message": "HTTP 404 Not Found"}, 404)
    except web.HTTPMethodNotAllowed:
        return _json({"error_code": 405, "message": "HTTP 405 Method Not Allowed"}, 405)


class ConnectRest:
    """The routes over one worker."""

    def __init__(self, worker: Worker, cluster_id: str | None) -> None:
        self.worker = worker
        self.cluster_id = cluster_id

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_errors])
        r = app.router
        r.add_get("/", self.root)
        r.add_get("/health", self.health)
        r.add_get("/connectors", self.list_connectors)
        r.add_post("/connectors", self.create)
        r.add_get("/connectors/{name}", self.info)
        r.add_delete("/connectors/{name}", self.delete)
        r.add_get("/connectors/{name}/config", self.get_config)
        r.add_put("/connectors/{name}/config", self.put_config)
        r.add_patch("/connectors/{name}/config", self.patch_config)
        r.add_get("/connectors/{name}/status", self.status)
        r.add_get("/connectors/{name}/tasks", self.tasks)
        r.add_get("/connectors/{name}/tasks/{task}/status", self.task_status)
        r.add_post("/connectors/{name}/tasks/{task}/restart", self.restart_task)
        r.add_post("/connectors/{name}/restart", self.restart)
        r.add_put("/connectors/{name}/pause", self.pause)
        r.add_put("/connectors/{name}/resume", self.resume)
        r.add_put("/connectors/{name}/stop", self.stop)
        r.add_get("/connectors/{name}/offsets", self.offsets)
        r.add_get("/connector-plugins", self.plugins)
        r.add_put("/connector-plugins/{plugin}/config/validate", self.validate)
        r.add_get("/admin/loggers", self.loggers)
        from odradek.connect import rest_ops

        rest_ops.add_routes(app, self)
        return app

    # ---- helpers -------------------------------------------------------------------------------------

    def _connector(self, request: web.Request, missing: str = "Connector {name} not found") -> ConnectorState:
        """The connector the path names; a 404 with `missing` (Kafka's message of the endpoint) if none."""
        name = request.match_info["name"]
        state = self.worker.connectors.get(name)
        if state is None:
            raise RestError(404, not_found_message(missing, request))
        return state

    async def _body(self, request: web.Request) -> Any:
        try:
            return await request.json()
        except (ValueError, UnicodeDecodeError) as exc:
            raise RestError(400, f"Cannot deserialize value: {exc}") from None

    def _worker_id(self) -> str:
        return self.worker.worker_id

    def _info(self, state: ConnectorState) -> dict[str, Any]:
        return {"name": state.name, "config": state.config,
                "tasks": [{"connector": state.name, "task": t.id} for t in state.tasks], "type": state.kind}

    def _status(self, state: ConnectorState) -> dict[str, Any]:
        connector: dict[str, Any] = {"state": state.state, "worker_id": self._worker_id()}
        if state.trace is not None:
            connector["trace"] = state.trace
        if state.version is not None:
            connector["version"] = state.version
        tasks = []
        for task in state.tasks:
            entry: dict[str, Any] = {"id": task.id, "state": task.state, "worker_id": self._worker_id()}
            if task.trace is not None:
                entry["trace"] = task.trace
            if task.version is not None:
                entry["version"] = task.version
            tasks.append(entry)
        return {"name": state.name, "connector": connector, "tasks": tasks, "type": state.kind}

    # ---- routes --------------------------------------------------------------------------------------

    async def root(self, request: web.Request) -> web.Response:
        return _json({"version": __version__, "commit": "odradek", "kafka_cluster_id": self.cluster_id})

    async def health(self, request: web.Request) -> web.Response:
        return _json({"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."})

    async def list_connectors(self, request: web.Request) -> web.Response:
        expand = request.query.getall("expand", [])
        names = sorted(self.worker.connectors)
        if not expand:
            return _json(names)
        out: dict[str, Any] = {}
        for name in names:
            state = self.worker.connectors.get(name)
            if state is None:
                continue
            entry: dict[str, Any] = {}
            if "status" in expand:
                entry["status"] = self._status(state)
            if "info" in expand:
                entry["info"] = self._info(state)
            out[name] = entry
        return _json(out)

    async def create(self, request: web.Request) -> web.Response:
        name, config, initial = create_body(await self._body(request))
        if name in self.worker.connectors:
            raise RestError(409, f"Connector {name} already exists")
        _created, state = await asyncio.to_thread(self.worker.put_connector, name, config, initial)
        return _json(self._info(state), 201)

    async def info(self, request: web.Request) -> web.Response:
        return _json(self._info(self._connector(request)))

    async def delete(self, request: web.Request) -> web.Response:
        state = self._connector(request)
        await asyncio.to_thread(self.worker.delete, state.name)
        return web.Response(status=204)

    async def get_config(self, request: web.Request) -> web.Response:
        return _json(self._connector(request).config)

    async def put_config(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        config = config_body(name, await self._body(request))
        created, state = await asyncio.to_thread(self.worker.put_connector, name, config)
        return _json(self._info(state), 201 if created else 200)

    async def patch_config(self, request: web.Request) -> web.Response:
        state = self._connector(request)
        config = patched(state.config, await self._body(request))
        _created, state = await asyncio.to_thread(self.worker.put_connector, state.name, config)
        return _json(self._info(state))

    async def status(self, request: web.Request) -> web.Response:
        return _json(self._status(self._connector(request, NO_CONNECTOR_STATUS)))

    async def tasks(self, request: web.Request) -> web.Response:
        state = self._connector(request)
        return _json([{"id": {"connector": state.name, "task": i}, "config": config}
                      for i, config in enumerate(state.task_configs)])

    def _task_id(self, request: web.Request, state: ConnectorState, missing: str = NO_TASK_STATUS) -> int:
        try:
            task_id = int(request.match_info["task"])
        except ValueError:
            raise RestError(404, "HTTP 404 Not Found") from None
        if not 0 <= task_id < len(state.tasks):
            raise RestError(404, not_found_message(missing, request))
        return task_id

    async def task_status(self, request: web.Request) -> web.Response:
        state = self._connector(request, NO_TASK_STATUS)
        task = state.tasks[self._task_id(request, state)]
        body: dict[str, Any] = {"id": task.id, "state": task.state, "worker_id": self._worker_id()}
        if task.trace is not None:
            body["trace"] = task.trace
        if task.version is not None:
            body["version"] = task.version
        return _json(body)

    async def restart_task(self, request: web.Request) -> web.Response:
        state = self._connector(request)
        task_id = self._task_id(request, state, "Task {name}-{task} not found")
        await asyncio.to_thread(self.worker.restart_task, state.name, task_id)
        return web.Response(status=204)

    async def restart(self, request: web.Request) -> web.Response:
        include_tasks = request.query.get("includeTasks", "false").lower() == "true"
        only_failed = request.query.get("onlyFailed", "false").lower() == "true"
        # Kafka's standalone herder: its plain restart and its restart of connector and tasks word it apart
        state = self._connector(request, UNKNOWN_CONNECTOR_COLON if include_tasks or only_failed
                                else "Connector {name} not found")
        if not include_tasks and not only_failed:
            await asyncio.to_thread(self.worker.restart, state.name, False, False)
            return web.Response(status=204)
        # Kafka answers 202 with the states as the restart plan leaves them
        planned = self._status(state)
        if not only_failed or state.state == FAILED:
            planned["connector"]["state"] = "RESTARTING"
        for task in planned["tasks"]:
            if include_tasks and (not only_failed or task["state"] == FAILED):
                task["state"] = "RESTARTING"
        await asyncio.to_thread(self.worker.restart, state.name, include_tasks, only_failed)
        return _json(planned, 202)

    async def _target(self, request: web.Request, target: str) -> web.Response:
        state = self._connector(request, UNKNOWN_CONNECTOR)
        await asyncio.to_thread(self.worker.set_target, state.name, target)
        return web.Response(status=204 if target == STOPPED else 202)  # Kafka answers a stop with no content

    async def pause(self, request: web.Request) -> web.Response:
        return await self._target(request, PAUSED)

    async def resume(self, request: web.Request) -> web.Response:
        return await self._target(request, RUNNING)

    async def stop(self, request: web.Request) -> web.Response:
        return await self._target(request, STOPPED)

    async def offsets(self, request: web.Request) -> web.Response:
        state = self._connector(request)
        if state.kind == "source":
            entries = self.worker.offsets.connector_offsets(state.name)
            return _json({"offsets": [{"partition": p, "offset": o} for p, o in entries]})
        offsets = await asyncio.to_thread(self.worker.sink_offsets, state.name)
        return _json({"offsets": [{"partition": {"kafka_topic": t, "kafka_partition": p}, "offset": {"kafka_offset": o}}
                                  for (t, p), o in sorted(offsets.items())]})

    async def plugins(self, request: web.Request) -> web.Response:
        out: list[dict[str, Any]] = [{"class": p.class_name, "type": p.type, "version": p.version}
                                     for p in self.worker.plugins.connector_plugins()]
        if request.query.get("connectorsOnly", "true").lower() == "false":
            from odradek.connect.plugins import CONVERTERS

            out += [{"class": name, "type": "converter"} for name in sorted(CONVERTERS)]
        return _json(out)

    async def validate(self, request: web.Request) -> web.Response:
        plugin = request.match_info["plugin"]
        body = await self._body(request)
        if not isinstance(body, dict):
            raise RestError(400, "Connector config is required")
        config = {str(k): str(v) for k, v in body.items()}
        if config.get("connector.class") and self.worker.plugins.connector_name(config["connector.class"]) != \
                self.worker.plugins.connector_name(plugin):
            raise RestError(400, "Included connector type " + config["connector.class"] +
                            f" does not match request type {plugin}")
        config.setdefault("connector.class", plugin)
        full, values = await asyncio.to_thread(self.worker.validate, config)
        return _json({"name": full, "error_count": sum(len(v.errors) for v in values), "groups": _groups(),
                      "configs": [_config_info(v) for v in values]})

    async def loggers(self, request: web.Request) -> web.Response:
        root = logging.getLogger()
        out = {"root": {"level": logging.getLevelName(root.level)}}
        for name, logger in sorted(logging.Logger.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET and name.startswith("odradek"):
                out[name] = {"level": logging.getLevelName(logger.level)}
        return _json(out)


def _groups() -> list[str]:
    return ["Common", "Transforms", "Predicates", "Error Handling"]


def _config_info(value: ConfigValue) -> dict[str, Any]:
    shown = value.value
    if isinstance(shown, list):
        shown = ",".join(map(str, shown))
    elif shown is not None:
        shown = str(shown).lower() if isinstance(shown, bool) else str(shown)
    return {"definition": {"name": value.name}, "value": {"name": value.name, "value": shown,
                                                          "recommended_values": value.recommended_values,
                                                          "errors": value.errors, "visible": value.visible}}
