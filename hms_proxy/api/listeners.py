"""``/listeners``: Thrift ports bound to a ref, opened and closed while the server runs (the
server's ``Listeners``, :mod:`hms_proxy.app.listeners`). Only ``hms-proxy serve --http-port``
has them; ``hms-proxy api`` serves no Thrift and answers 404."""
from __future__ import annotations

from hms_proxy.api.auth import READ
from hms_proxy.api.errors import ApiError, bad_request, not_found


class TooManyListeners(Exception):
    """Raised by the server's listeners (:mod:`hms_proxy.app.listeners`) past their limit or
    once the server stops; answered 409."""


def _listeners(app):
    if app.listeners is None:
        raise not_found("this server has no Thrift listeners to open (hms-proxy api, or a "
                        "server of several processes): use hms-proxy serve --http-port")
    return app.listeners


def listener_json(app, listener) -> dict:
    return {"port": listener.port, "ref": listener.ref, "read_only": listener.read_only,
            "uri": f"thrift://{app.thrift_host}:{listener.port}"}


def list_listeners(app, req):
    found = _listeners(app).list()
    shown = [x for x in found if app.policy.allowed(req.caller, x.ref)]
    return 200, {"listeners": [listener_json(app, x) for x in shown]}


def open_listener(app, req):
    listeners = _listeners(app)
    body = req.fields({"ref": (str, True)})
    ref = body["ref"].strip()
    app.policy.check(req.caller, ref, READ, "open_listener", ref)
    try:
        listener = listeners.open(ref)
    except OSError as exc:
        raise ApiError(409, "NoPort", f"no port to listen on: {exc.strerror or exc}") from None
    except TooManyListeners as exc:
        raise ApiError(409, "TooManyListeners", str(exc)) from None
    return 201, listener_json(app, listener)


def _known(listeners, req):
    raw = req.segment("port")
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise bad_request(f"'{raw}' is not a port number")
    port = int(raw)
    known = {x.port: x for x in listeners.list()}
    if port not in known:
        raise not_found(f"no listener opened through the API on port {port}")
    return port, known[port]


def move_listener(app, req):
    listeners = _listeners(app)
    port, known = _known(listeners, req)
    body = req.fields({"ref": (str, True)})
    ref = body["ref"].strip()
    app.policy.check(req.caller, known.ref, READ, "move_listener", known.ref)
    app.policy.check(req.caller, ref, READ, "move_listener", ref)
    moved = listeners.move(port, ref)
    if moved is None:
        raise not_found(f"no listener opened through the API on port {port}")
    return 200, listener_json(app, moved)


def close_listener(app, req):
    listeners = _listeners(app)
    port, known = _known(listeners, req)
    app.policy.check(req.caller, known.ref, READ, "close_listener", known.ref)
    closed = listeners.close(port)
    if closed is None:
        raise not_found(f"no listener opened through the API on port {port}")
    return 200, {"closed": listener_json(app, closed)}
