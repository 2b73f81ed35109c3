"""What every request passes before a page sees it, as aiohttp middlewares, in this order:

1. `check_host`: the Host header must name the console (auth.HostAllowlist), or the answer is 403 with one
   line, before anything else happens: a DNS-rebinding page never gets to log in or to act.
2. `require_login`: `?token=<access token>` on any GET starts a session (an HttpOnly, SameSite=Strict cookie)
   and redirects to the same URL without the token; otherwise a request needs a valid session cookie. Without
   one, pages answer 401 with the login form (which posts the token to /login), JSON and everything else
   401 with one line; only the login page and its stylesheet are public. Logins and failed logins are logged,
   the token never is.
3. `check_request`: a state-changing request (POST etc.) must come from the console's own pages (Origin,
   else Referer, is this server), is refused on a `--read-only` console, and must carry the session's CSRF
   token (form field `csrf_token` or header `X-CSRF-Token`); each refusal is 403 with one line, logged.

`add_security_headers` marks every answer not to be framed, sniffed or cached (static files may be).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import jinja2
from aiohttp import web

from odradek.console.auth import HostAllowlist, Sessions
from odradek.ratelog import LimitedLog

log = logging.getLogger("odradek.console")
# refusals a client can repeat at will (a wrong token, a foreign Host): a few per 10 s each, then counted
limited = LimitedLog(log)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
LOGIN_PATH = "/login"
PUBLIC_PATHS = frozenset({LOGIN_PATH, "/static/console.css"})
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
FRAGMENT_HEADER = "X-Console-Fragment"
SESSION = web.RequestKey("session", str)


@dataclass
class Gate:
    """Everything the middlewares check against."""

    sessions: Sessions
    hosts: HostAllowlist
    cookie_name: str
    read_only: bool = False
    login_template: jinja2.Template | None = None  # set by app.create_app


GATE = web.AppKey("gate", Gate)


def peer(request: web.Request) -> str:
    return request.remote or "unknown"


def shown(value: str | None, limit: int = 80) -> str:
    """An attacker-controlled value for a log line or an answer: quoted, one line, bounded."""
    return repr((value or "")[:limit])


def csrf_token(request: web.Request) -> str:
    """The CSRF token of the request's session ('' without one), for the templates."""
    sid = request.get(SESSION)
    return request.app[GATE].sessions.csrf_token(sid) if sid else ""


def forbidden(reason: str) -> web.Response:
    return web.Response(status=403, text=f"Forbidden: {reason}\n")


# --- 1. the Host header ------------------------------------------------------------------------


@web.middleware
async def check_host(request: web.Request, handler: Handler) -> web.StreamResponse:
    host = request.headers.get("Host")
    if not request.app[GATE].hosts.allows(host):
        limited.warning("Refused %s %s from %s for Host %s: not a name of this console (DNS rebinding?)",
                    request.method, request.path, peer(request), shown(host))
        return forbidden(f"Host {shown(host)} is not a name of this console (see --allowed-host)")
    return await handler(request)


# --- 2. the session ----------------------------------------------------------------------------


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this server, never another site."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def start_session(request: web.Request, location: str, how: str) -> web.HTTPSeeOther:
    gate = request.app[GATE]
    log.info("Login from %s (%s)", peer(request), how)
    answer = web.HTTPSeeOther(location)
    answer.set_cookie(gate.cookie_name, gate.sessions.issue(), httponly=True, samesite="Strict", path="/")
    return answer


def login_page(request: web.Request, *, status: int, error: str | None = None, target: str | None = None) -> web.Response:
    template = request.app[GATE].login_template
    assert template is not None
    html = template.render(error=error, next=safe_next(target if target is not None else request.path_qs))
    return web.Response(text=html, content_type="text/html", status=status)


def unauthorized(request: web.Request) -> web.Response:
    if request.path.startswith("/api/"):
        return web.json_response({"error": "log in first"}, status=401)
    if request.method in ("GET", "HEAD") and not request.path.startswith("/static/") \
            and FRAGMENT_HEADER not in request.headers:
        return login_page(request, status=401)
    return web.Response(status=401, text="Unauthorized: log in first (the URL the console printed, or /login)\n")


@web.middleware
async def require_login(request: web.Request, handler: Handler) -> web.StreamResponse:
    gate = request.app[GATE]
    if "token" in request.query and request.method in ("GET", "HEAD"):
        if gate.sessions.check_token(request.query["token"]):
            raise start_session(request, str(request.rel_url.without_query_params("token")), "token in the URL")
        limited.warning("Failed login from %s: wrong token in the URL", peer(request))
        return login_page(request, status=401, error="That token is not this console's.",
                          target=str(request.rel_url.without_query_params("token")))
    sid = gate.sessions.session_id(request.cookies.get(gate.cookie_name))
    if sid is not None:
        request[SESSION] = sid
    elif request.path not in PUBLIC_PATHS:
        return unauthorized(request)
    return await handler(request)


async def login_form(request: web.Request) -> web.StreamResponse:
    if request.get(SESSION):
        raise web.HTTPSeeOther(safe_next(request.query.get("next")))
    return login_page(request, status=200, target=request.query.get("next"))


async def login_submit(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    target = safe_next(str(form.get("next", "")))
    if request.app[GATE].sessions.check_token(str(form.get("token", "")).strip()):
        raise start_session(request, target, "login form")
    limited.warning("Failed login from %s: wrong token in the login form", peer(request))
    return login_page(request, status=401, error="That token is not this console's.", target=target)


# --- 3. state-changing requests ----------------------------------------------------------------


def same_origin(request: web.Request) -> bool:
    """Whether a state-changing request comes from this server's own pages."""
    if request.headers.get("Sec-Fetch-Site") not in (None, "same-origin"):
        return False
    source = request.headers.get("Origin") or request.headers.get("Referer")
    if not source or source == "null":
        return False
    parts = urlsplit(source)
    return parts.scheme == request.scheme and parts.netloc == request.host


@web.middleware
async def check_request(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method in SAFE_METHODS:
        return await handler(request)
    gate = request.app[GATE]
    if not same_origin(request):
        limited.warning("Refused %s %s from another origin (%s)", request.method, request.path,
                    shown(request.headers.get("Origin") or request.headers.get("Referer") or "no Origin or Referer"))
        return forbidden("cross-origin request refused")
    if request.path == LOGIN_PATH:
        return await handler(request)
    if gate.read_only:
        limited.warning("Refused %s %s: the console is read-only", request.method, request.path)
        return forbidden("the console is read-only")
    supplied = request.headers.get(CSRF_HEADER)
    if supplied is None:
        supplied = str((await request.post()).get(CSRF_FIELD, "")) or None
    if not gate.sessions.check_csrf(request.get(SESSION), supplied):
        limited.warning("Refused %s %s from %s: %s CSRF token", request.method, request.path, peer(request),
                    "no" if supplied is None else "a wrong")
        return forbidden("missing or wrong CSRF token (reload the page and try again)")
    return await handler(request)


# --- every answer ------------------------------------------------------------------------------


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    if not request.path.startswith("/static/"):
        response.headers.setdefault("Cache-Control", "no-store")


def install(app: web.Application, gate: Gate) -> None:
    """The gate's state, login routes and response headers on `app` (its middlewares are listed by the app)."""
    app[GATE] = gate
    app.router.add_get(LOGIN_PATH, login_form)
    app.router.add_post(LOGIN_PATH, login_submit)
    app.on_response_prepare.append(add_security_headers)


MIDDLEWARES = (check_host, require_login, check_request)
