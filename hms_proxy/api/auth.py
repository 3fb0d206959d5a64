"""Who calls the HTTP API, and whether the access rules let them.

The same rules, secrets, audit log and read-only switch as the Thrift side
(:mod:`hms_proxy.security.access`, :mod:`hms_proxy.security.audit`), with HTTP's ways of saying who one is:

* ``Authorization: Basic`` (user and password): a user listed in ``--auth-secrets`` is
  believed only with its secret as the password (else 401), exactly as ``set_ugi`` with
  ``secret:<its secret>`` among its groups;
* ``X-HMS-User: NAME``: a claimed user, like ``set_ugi`` without a secret (trusted mode, for
  servers without ``--auth-secrets``; a user listed there is refused without its secret);
* ``Authorization: Negotiate`` (``serve --http-kerberos-principal``): Kerberos SPNEGO
  (:mod:`hms_proxy.security.spnego`), the principal mapped by auth_to_local; a token that
  cannot be accepted is refused with 403, as Hadoop refuses it. With SPNEGO on, a claimed
  user (the header, Basic without a listed user's secret) is not believed: anonymous, as
  set_ugi changes nothing over Kerberos;
* neither: anonymous (only ``"*"`` entries of the rules match it).

A claimed user (Basic with an unlisted user, or the header) counts as ``ugi``; the rules'
``"trust_set_ugi": false`` makes it anonymous. Refusals name the rule, as over Thrift; an
anonymous caller refused by the rules gets 401 with a Basic challenge (so that a browser asks
for a name; ``Negotiate`` first with SPNEGO on), anyone else 403.
"""
from __future__ import annotations

import base64
import binascii
import logging
from dataclasses import dataclass, field

from hms_proxy.api.errors import ApiError
from hms_proxy.security import access
from hms_proxy.security.access import READ, WRITE  # noqa: F401 - re-exported for the operations

log = logging.getLogger("hms_proxy.api")
USER_HEADER = "X-HMS-User"
CHALLENGE = 'Basic realm="hms-proxy", charset="UTF-8"'


@dataclass
class Caller:
    """One request's caller, shaped like a Thrift call's context for the audit log."""

    identity: str | None = None
    auth: str = "none"          # kerberos, secret, ugi or none
    user: str | None = None     # the name claimed, believed or not
    peer: str = ""
    listener: str = ""
    call: str = ""              # "<operation> <object>", for the audit log
    reply_headers: dict = field(default_factory=dict)  # SPNEGO's last token, for the answer

    def to_json(self) -> dict:
        return {"identity": self.identity, "auth": self.auth}


class Policy:
    """Access rules, secrets, audit log and read-only switch of one HTTP listener."""

    def __init__(self, rules: access.Rules | None = None, secrets: access.Secrets | None = None,
                 audit=None, read_only: bool = False, listener: str = "", spnego=None):
        self.rules = rules
        self.secrets = secrets
        self.audit = audit
        self.read_only = read_only
        self.listener = listener
        self.spnego = spnego  # hms_proxy.security.spnego.Spnego, or None
        if spnego is None:
            self.challenge = CHALLENGE
        else:
            from hms_proxy.security.spnego import challenge
            self.challenge = challenge(CHALLENGE if secrets is not None else None)

    # --- who --------------------------------------------------------------------------------
    def identify(self, headers, peer: str) -> Caller:
        """The caller of a request (``headers``: a case-insensitive mapping). Raises 401 for a
        malformed Authorization header or a listed user without its secret."""
        caller = Caller(peer=peer, listener=self.listener)
        password = None
        header = headers.get("Authorization")
        if header:
            scheme, _, value = header.strip().partition(" ")
            if scheme.lower() == "negotiate" and self.spnego is not None:
                return self._negotiate(caller, value)
            if scheme.lower() != "basic":
                taken = "Negotiate or Basic" if self.spnego is not None else "HTTP Basic"
                raise self._unauthorized(caller, f"only {taken} authentication is taken "
                                                 f"(or the {USER_HEADER} header)")
            try:
                text = base64.b64decode(value.strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                raise self._unauthorized(caller, "malformed Basic credentials") from None
            user, sep, password = text.partition(":")
            if not sep or not user:
                raise self._unauthorized(caller, "malformed Basic credentials (user:password)")
        else:
            user = (headers.get(USER_HEADER) or "").strip() or None
        if user is None:
            return caller
        caller.user = user
        if self.secrets is not None and user in self.secrets:
            if password is None or not self.secrets.check(user, [password]):
                what = "a wrong secret" if password else "no secret"
                reason = f"access denied: user '{user}' presented {what} (--auth-secrets)"
                if self.audit is not None:
                    caller.call = f"authenticate user {user}"
                    self.audit.record(caller, "authenticate", "", "denied", reason,
                                      obj=f"user {user}")
                raise ApiError(401, "AuthenticationFailed", reason,
                               headers={"WWW-Authenticate": self.challenge})
            caller.identity, caller.auth = user, "secret"
            return caller
        if self.spnego is not None or (self.rules is not None and not self.rules.trust_set_ugi):
            return caller  # claimed identities are not believed: anonymous
        caller.identity, caller.auth = user, "ugi"
        return caller

    def _negotiate(self, caller: Caller, value: str) -> Caller:
        """The caller of a Negotiate token; a token not accepted is 403 (Hadoop's answer),
        recorded in the audit log."""
        from hms_proxy.security.spnego import Refused

        try:
            accepted = self.spnego.accept(value)
        except Refused as exc:
            reason = f"Kerberos authentication failed: {exc}"
            log.info("SPNEGO from %s refused: %s", caller.peer, exc)
            if self.audit is not None:
                caller.call = "authenticate"
                self.audit.record(caller, "authenticate", "", "denied", reason, obj="")
            raise ApiError(403, "AuthenticationFailed", reason) from None
        caller.identity = caller.user = accepted.user
        caller.auth = "kerberos"
        caller.reply_headers = accepted.reply_headers()
        return caller

    def _unauthorized(self, caller: Caller, message: str) -> ApiError:
        return ApiError(401, "AuthenticationFailed", message,
                        headers={"WWW-Authenticate": self.challenge})

    # --- what ---------------------------------------------------------------------------------
    def refusal(self, caller: Caller, ref: str, kind: str, operation: str) -> str | None:
        """Why ``caller`` may not do ``kind`` (READ/WRITE) on ``ref``; None when allowed."""
        if kind == WRITE and self.read_only:
            return f"listener {self.listener or 'this listener'} is read-only ({operation} writes)"
        if self.rules is None:
            return None
        groups = self.rules.groups_of(caller.identity)
        return self.rules.decide(caller.identity, groups, ref, kind)

    def allowed(self, caller: Caller, ref: str, kind: str = READ) -> bool:
        return self.refusal(caller, ref, kind, "list") is None

    def check(self, caller: Caller, ref: str, kind: str, operation: str, obj: str = "") -> None:
        """Raise 403 (401 for an anonymous caller refused by the rules) unless allowed; a
        refusal goes to the audit log."""
        reason = self.refusal(caller, ref, kind, operation)
        if reason is None:
            return
        message = f"access denied: {reason}"
        if self.audit is not None:
            caller.call = f"{operation} {obj}".strip()
            self.audit.record(caller, operation, ref, "denied", message, obj=obj or None)
        if caller.identity is None and self.rules is not None and not (
                kind == WRITE and self.read_only):
            raise ApiError(401, "AccessDenied", message,
                           headers={"WWW-Authenticate": self.challenge})
        raise ApiError(403, "AccessDenied", message)

    def write(self, caller: Caller, ref: str, operation: str, obj: str, run):
        """Run a write (``run()``), recording it in the audit log (ok or error)."""
        if self.audit is None:
            return run()
        caller.call = f"{operation} {obj}".strip()
        try:
            value = run()
        except BaseException as exc:
            self.audit.record(caller, operation, ref, "error",
                              f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                              obj=obj)
            raise
        self.audit.record(caller, operation, ref, "ok", obj=obj)
        return value
