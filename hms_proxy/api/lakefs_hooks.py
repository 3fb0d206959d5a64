"""lakeFS's hooks over HTTP: ``POST /lakefs/hooks`` is the webhook of the lakeFS action
:mod:`kvmodel.lakefs_actions` installs (``hms-proxy lakefs-hooks install``). lakeFS posts its
event (prepare-commit, pre-merge); a 2xx answer lets lakeFS go on, any other aborts its
commit or merge and shows the answer in the action's run.

The hook asks for no credentials (lakeFS's webhooks carry none unless configured): what it
does is a fold (the catalog reads the same before and after) or a check that writes nothing.
"""
from __future__ import annotations

from hms_proxy.api.errors import ApiError, bad_request
from hms_proxy.api.request import Request
from kvmodel import lakefs_actions


def hook(app, req: Request):
    event = req.body
    if not isinstance(event, dict):
        raise bad_request("the request body must be lakeFS's event, a JSON object")
    if not isinstance(event.get("event_type"), str):
        raise bad_request("lakeFS's event has no event_type")
    if not hasattr(app.store, "fold_for_commit"):
        raise ApiError(400, "NotLakeFS", "this server's store is not a lakeFS repository: "
                                         "lakeFS's hooks have nothing to do here")
    try:
        return 200, lakefs_actions.on_event(app.store, event)
    except lakefs_actions.HookRefusal as exc:
        raise ApiError(409, "HookRefused", str(exc), detail={"messages": exc.problems}) from None
