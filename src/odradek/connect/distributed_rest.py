"""The REST API of a distributed worker: reads answer from the config and status topics as this worker has read
them; writes (create, reconfigure, delete, pause, resume, stop, and the internal task-configs POST) are done by
the leader, so a follower forwards them to the leader's URL from its assignment, and answers 409 while a
rebalance leaves it without one."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

from odradek.connect.distributed import DistributedHerder
from odradek.connect.kafka_stores import STATUS_CONNECTOR_PREFIX, STATUS_TASK_PREFIX
from odradek.connect.request_signing import ALGORITHM_HEADER, SIGNATURE_HEADER, refusal
from odradek.connect.rest import (
    NO_TASK_STATUS,
    UNKNOWN_CONNECTOR,
    UNKNOWN_CONNECTOR_COLON,
    ConnectRest,
    RestError,
    _json,
    not_found_message,
)
from odradek.connect.rest_common import config_body, create_body, patched
from odradek.connect.worker import FAILED, PAUSED, RUNNING, STOPPED, UNASSIGNED, ConnectorState, TaskState

FORWARDED = "X-Odradek-Forwarded"  # on a request sent on by another worker
REBALANCING = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
TARGET_NAMES = {RUNNING: "STARTED", PAUSED: "PAUSED", STOPPED: "STOPPED"}


class DistributedRest(ConnectRest):
    def __init__(self, herder: DistributedHerder, cluster_id: str | None) -> None:
        super().__init__(herder.worker, cluster_id)
        self.herder = herder

    def app(self) -> web.Application:
        app = super().app()
        app.router.add_post("/connectors/{name}/tasks", self.put_task_configs)
        return app

    # ---- views of the topics ----------------------------------------------------------------------------

    def _view(self, name: str) -> ConnectorState | None:
        _offset, connectors, task_configs, targets = self.herder.configs.snapshot()
        config = connectors.get(name)
        if config is None:
            return None
        local = self.herder.local.get(name)
        kind = local.kind if local is not None else _kind(self.herder, config)
        state = ConnectorState(name, config, kind)
        state.target = {v: k for k, v in TARGET_NAMES.items()}.get(targets.get(name, "STARTED"), RUNNING)
        status = self.herder.statuses.get(f"{STATUS_CONNECTOR_PREFIX}{name}") or {}
        state.state, state.trace = str(status.get("state", UNASSIGNED)), status.get("trace")
        state.task_configs = task_configs.get(name, [])
        for i in range(len(state.task_configs)):
            task = self.herder.statuses.get(f"{STATUS_TASK_PREFIX}{name}-{i}") or {}
            state.tasks.append(TaskState(i, str(task.get("state", UNASSIGNED)), task.get("trace")))
        return state

    def _connector(self, request: web.Request, missing: str = "Connector {name} not found") -> ConnectorState:
        name = request.match_info["name"]
        state = self._view(name)
        if state is None:
            raise RestError(404, not_found_message(missing, request))
        return state

    def _status(self, state: ConnectorState) -> dict[str, Any]:
        body = super()._status(state)
        status = self.herder.statuses.get(f"{STATUS_CONNECTOR_PREFIX}{state.name}") or {}
        _from_status(body["connector"], status)
        for task in body["tasks"]:
            _from_status(task, self.herder.statuses.get(f"{STATUS_TASK_PREFIX}{state.name}-{task['id']}") or {})
        return body

    async def list_connectors(self, request: web.Request) -> web.Response:
        names = sorted(self.herder.configs.snapshot()[1])
        expand = request.query.getall("expand", [])
        if not expand:
            return _json(names)
        out: dict[str, Any] = {}
        for name in names:
            state = self._view(name)
            if state is None:
                continue
            out[name] = {**({"status": self._status(state)} if "status" in expand else {}),
                         **({"info": self._info(state)} if "info" in expand else {})}
        return _json(out)

    async def task_status(self, request: web.Request) -> web.Response:
        state = self._connector(request, NO_TASK_STATUS)
        task = state.tasks[self._task_id(request, state)]
        entry = self.herder.statuses.get(f"{STATUS_TASK_PREFIX}{state.name}-{task.id}") or {}
        body: dict[str, Any] = {"id": task.id, "state": task.state}
        if task.trace is not None:
            body["trace"] = task.trace
        _from_status(body, entry)
        return _json(body)

    # ---- writes: on the leader --------------------------------------------------------------------------

    async def _forwarded(self, request: web.Request) -> web.Response | None:
        """None on the leader; the leader's answer on a follower."""
        if self.herder.is_leader and self.herder.leader_url:
            return None
        leader = self.herder.leader_url
        # a request forwarded once that finds no leader here either: the leadership moved, try again later
        if not leader or request.headers.get(FORWARDED):
            raise RestError(409, REBALANCING)
        body = await request.read()
        signed = {h: request.headers[h] for h in (SIGNATURE_HEADER, ALGORITHM_HEADER) if h in request.headers}
        async with ClientSession(timeout=ClientTimeout(total=60)) as session, \
                session.request(request.method, leader.rstrip("/") + request.path_qs, data=body,
                                headers={"Content-Type": "application/json", FORWARDED: "1", **signed}) as resp:
            text = await resp.text()
            status = resp.status
        if status < 300:  # what the leader wrote is seen here too before the client hears of it
            await asyncio.to_thread(self.herder.configs.log.read_to_end)
        return web.Response(status=status, text=text, content_type="application/json")

    async def _settled(self, name: str) -> ConnectorState:
        await asyncio.to_thread(self.herder.configs.log.read_to_end)
        state = self._view(name)
        if state is None:
            raise RestError(409, REBALANCING)
        return state

    @staticmethod
    def _task_ids(state: ConnectorState | None) -> list[dict[str, Any]]:
        return [] if state is None else [{"connector": state.name, "task": t.id} for t in state.tasks]

    def _written_info(self, state: ConnectorState, tasks_before: list[dict[str, Any]]) -> dict[str, Any]:
        """A connector whose config was just written, as Kafka's herder answers: the new config with the tasks
        the config state held before the write (none for a new connector), however soon the leader writes new
        task configs (DistributedHerder.putConnectorConfig answers from its snapshot)."""
        return {**self._info(state), "tasks": tasks_before}

    async def create(self, request: web.Request) -> web.Response:
        forwarded = await self._forwarded(request)
        if forwarded is not None:
            return forwarded
        name, config, initial = create_body(await self._body(request))
        if self._view(name) is not None:
            raise RestError(409, f"Connector {name} already exists")
        await asyncio.to_thread(self.worker.check, name, config)
        await asyncio.to_thread(self.herder.configs.put_connector, name, config, TARGET_NAMES[initial])
        return _json(self._written_info(await self._settled(name), []), 201)

    async def put_config(self, request: web.Request) -> web.Response:
        forwarded = await self._forwarded(request)
        if forwarded is not None:
            return forwarded
        name = request.match_info["name"]
        config = config_body(name, await self._body(request))
        before = self._view(name)
        tasks_before = self._task_ids(before)
        await asyncio.to_thread(self.worker.check, name, config)
        await asyncio.to_thread(self.herder.configs.put_connector, name, config, "STARTED" if before is None else None)
        return _json(self._written_info(await self._settled(name), tasks_before), 201 if before is None else 200)

    async def patch_config(self, request: web.Request) -> web.Response:
        forwarded = await self._forwarded(request)
        if forwarded is not None:
            return forwarded
        state = self._connector(request)
        tasks_before = self._task_ids(state)
        config = patched(state.config, await self._body(request))
        await asyncio.to_thread(self.worker.check, state.name, config)
        await asyncio.to_thread(self.herder.configs.put_connector, state.name, config, None)
        return _json(self._written_info(await self._settled(state.name), tasks_before))

    async def delete(self, request: web.Request) -> web.Response:
        forwarded = await self._forwarded(request)
        if forwarded is not None:
            return forwarded
        state = self._connector(request)
        await asyncio.to_thread(self.herder.configs.delete_connector, state.name)
        await asyncio.to_thread(self.herder.configs.log.read_to_end)  # a GET after the answer finds it gone
        return web.Response(status=204)

    async def _target(self, request: web.Request, target: str) -> web.Response:
        forwarded = await self._forwarded(request)
        if forwarded is not None:
            return forwarded
        state = self._connector(request, UNKNOWN_CONNECTOR)
        await asyncio.to_thread(self.herder.configs.put_target, state.name, TARGET_NAMES[target])
        return web.Response(status=204 if target == STOPPED else 202)  # Kafka answers a stop with no content

    async def restart(self, request: web.Request) -> web.Response:
        """Kafka writes the request to the config topic (through the leader); the holders restart."""
        forwarded = await self._forwarded(request)
        if forwarded is not None:
            return forwarded
        state = self._connector(request, UNKNOWN_CONNECTOR_COLON)
        include_tasks = request.query.get("includeTasks", "false").lower() == "true"
        only_failed = request.query.get("onlyFailed", "false").lower() == "true"
        await asyncio.to_thread(self.herder.configs.put_restart, state.name, include_tasks, only_failed)
        if not include_tasks and not only_failed:
            return web.Response(status=204)
        planned = self._status(state)
        if not only_failed or state.state == FAILED:
            planned["connector"]["state"] = "RESTARTING"
        for task in planned["tasks"]:
            if include_tasks and (not only_failed or task["state"] == FAILED):
                task["state"] = "RESTARTING"
        return _json(planned, 202)

    async def restart_task(self, request: web.Request) -> web.Response:
        """Done by the worker that runs the task (as its status names it), forwarded there otherwise."""
        state = self._connector(request, UNKNOWN_CONNECTOR_COLON)
        task_id = self._task_id(request, state, "Unknown task: {name}-{task}")
        if await asyncio.to_thread(self.herder.restart_task, state.name, task_id):
            return web.Response(status=204)
        owner = (self.herder.statuses.get(f"{STATUS_TASK_PREFIX}{state.name}-{task_id}") or {}).get("worker_id")
        if not owner or owner == self.herder.worker_id or request.headers.get(FORWARDED):
            raise RestError(409, REBALANCING)
        async with ClientSession(timeout=ClientTimeout(total=60)) as session, \
                session.post(f"http://{owner}{request.path}", headers={FORWARDED: "1"}) as resp:
            return web.Response(status=resp.status, text=await resp.text(), content_type="application/json")

    async def put_task_configs(self, request: web.Request) -> web.Response:
        """The internal endpoint by which a connector's owner has the leader write its task configs; under the
        `sessioned` protocol every worker checks its signature first (KIP-507), as Kafka's do."""
        if self.herder.signs_requests:
            algorithms = [a.strip() for a in
                          str(self.herder.config.props["inter.worker.verification.algorithms"]).split(",")]
            problem = refusal(request.headers, await request.read(), self.herder.configs.session_key, algorithms)
            if problem is not None:
                raise RestError(*problem)
        forwarded = await self._forwarded(request)
        if forwarded is not None:
            return forwarded
        name = request.match_info["name"]
        body = await self._body(request)
        if not isinstance(body, list) or not all(isinstance(c, dict) for c in body):
            raise RestError(400, "Task configs must be a list of objects")
        if self._view(name) is None:
            raise RestError(404, f"Connector {name} not found")
        configs = [{str(k): str(v) for k, v in c.items()} for c in body]
        await asyncio.to_thread(self.herder.store_task_configs, name, configs)
        return web.Response(status=204)


def _kind(herder: DistributedHerder, config: dict[str, str]) -> str:
    from odradek.connect.api import SinkConnector

    try:
        return "sink" if issubclass(herder.plugins.connector_class(config.get("connector.class", "")),
                                    SinkConnector) else "source"
    except Exception:
        return "source"


def _from_status(body: dict[str, Any], status: Mapping[str, Any]) -> None:
    """The worker and version of a connector's or task's status as the status topic has them (written by the
    worker that runs it, a Java one's too)."""
    body["worker_id"] = status.get("worker_id")
    body.pop("version", None)
    if status.get("version"):
        body["version"] = status["version"]
