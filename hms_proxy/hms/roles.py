"""Roles and role grants, as HMS 2.3's HMSHandler and ObjectStore answer them.

Stored with the catalog, so they are versioned, branched and merged like tables::

    role/<name>                                     Role (kvmodel.catalog.role_key)
    grant/role/<role>/<principal type>/<principal>  RolePrincipalGrant

``<role>`` and ``<principal>`` are kept as given (HMS compares role and principal names
case-sensitively) with ``%`` and ``/`` percent-escaped, so a name cannot cut into the key
structure; ``<principal type>`` is ``USER``, ``GROUP`` or ``ROLE``.

HMS creates the roles ``admin`` and ``public`` at startup (``createDefaultRoles``); here they
exist implicitly (never stored), with the server's start time as creation time. Like HMS:
``public`` cannot be created, granted, revoked or dropped, every USER is implicitly a member of
it (``list_roles`` and ``get_role_grants_for_principal`` of any user answer it), ``admin`` cannot
be dropped, and the failures HMS lets escape as unchecked Java exceptions (a role that exists
already or is missing, a duplicate grant) are internal errors.
"""
from __future__ import annotations

from hms_proxy.hms import privileges
from hms_proxy.hms.family import Family, now
from hms_proxy.hms.privileges import ADMIN, BUILT_IN, PUBLIC
from hms_proxy.thrift import errors
from kvmodel import catalog as keys
from kvmodel import codec


def _type_name(t, principal_type) -> str:
    name = t.PrincipalType._VALUES_TO_NAMES.get(principal_type)
    if name is None:  # HMS: principalType.toString() on null
        raise errors.InternalError(f"principal type {principal_type!r}")
    return name


class RoleCalls(Family):
    # --- lookups ------------------------------------------------------------------------
    def _role(self, cat, name):
        if name in BUILT_IN:
            return self.t.Role(roleName=name, createTime=int(self.env.started), ownerName=name)
        return cat.role(name)

    def _require_role(self, cat, name):
        role = self._role(cat, name) if name is not None else None
        if role is None:  # ObjectStore.getRole: NoSuchObjectException, rethrown unchecked
            raise errors.InternalError(f"Role {name} does not exist")
        return role

    def _grants(self, cat):
        """Every stored RolePrincipalGrant, in key order."""
        for _, data in cat.view.scan_prefix(keys.ROLE_GRANT_PREFIX):
            yield codec.decode(self.t.RolePrincipalGrant, data)

    def _grants_of_principal(self, cat, name, type_name):
        ptype = self.t.PrincipalType._NAMES_TO_VALUES[type_name]
        return [g for g in self._grants(cat)
                if g.principalName == name and g.principalType == ptype]

    def _public_grant(self, name):
        return self.t.RolePrincipalGrant(
            roleName=PUBLIC, principalName=name, principalType=self.t.PrincipalType.USER,
            grantOption=False, grantTime=0, grantorName=None, grantorPrincipalType=None)

    def _is_parent(self, cat, new_role, cur_role, seen=None) -> bool:
        """HMSHandler.isNewRoleAParent: is ``new_role`` ``cur_role`` or one of its ancestors?"""
        if new_role == cur_role:
            return True
        seen = seen if seen is not None else set()
        if cur_role in seen:
            return False
        seen.add(cur_role)
        return any(self._is_parent(cat, new_role, g.roleName, seen)
                   for g in self._grants_of_principal(cat, cur_role, "ROLE"))

    # --- roles ----------------------------------------------------------------------------
    def create_role(self, ctx, role):
        name = getattr(role, "roleName", None)
        if name == PUBLIC:
            raise errors.MetaError(f"{PUBLIC} role implictly exists. It can't be created.")
        if name is None:
            raise errors.InternalError("role name is null")
        with self.writing(ctx) as cat:
            if self._role(cat, name) is not None:  # InvalidObjectException, not declared
                raise errors.InternalError(f"Role {name} already exists.")
            cat.put(keys.role_key(name),
                    self.t.Role(roleName=name, createTime=now(), ownerName=role.ownerName))
        return True

    def drop_role(self, ctx, role_name):
        if role_name in BUILT_IN:
            raise errors.MetaError(f"{PUBLIC},{ADMIN} roles can't be dropped.")
        if role_name is None:
            return True
        with self.writing(ctx) as cat:
            if cat.role(role_name) is None:
                return True  # ObjectStore.removeRole does nothing and succeeds
            cat.delete_prefix(keys.role_grant_prefix(role_name))
            privileges.drop_principal_privileges(  # ObjectStore.removeRole drops its grants
                cat, "ROLE", role_name)
            for grant in self._grants_of_principal(cat, role_name, "ROLE"):
                cat.delete(keys.role_grant_key(grant.roleName, "ROLE", role_name))
            cat.delete(keys.role_key(role_name))
        return True

    def get_role_names(self, ctx):
        with self.reading(ctx) as cat:
            stored = [name for name, _ in cat.roles()]
        return sorted(set(stored) | set(BUILT_IN))

    def list_roles(self, ctx, principal_name, principal_type):
        type_name = _type_name(self.t, principal_type)
        out = []
        with self.reading(ctx) as cat:
            for grant in self._grants_of_principal(cat, principal_name, type_name):
                role = self._role(cat, grant.roleName)
                if role is not None:
                    out.append(role)
        if type_name == "USER":
            out.append(self.t.Role(roleName=PUBLIC, createTime=0, ownerName=PUBLIC))
        return out

    # --- grants ---------------------------------------------------------------------------
    def grant_role(self, ctx, role_name, principal_name, principal_type, grantor, grantorType,
                   grant_option):
        if role_name == PUBLIC:
            raise errors.MetaError(f"No user can be added to {PUBLIC}. Since all users implictly"
                                   f" belong to {PUBLIC} role.")
        with self.writing(ctx) as cat:
            role = self._require_role(cat, role_name)
            type_name = _type_name(self.t, principal_type)
            if type_name == "ROLE" and self._is_parent(cat, principal_name, role_name):
                raise errors.MetaError(
                    f"Cannot grant role {principal_name} to {role_name} as {role_name} already "
                    f"belongs to the role {principal_name}. (no cycles allowed)")
            key = keys.role_grant_key(role.roleName, type_name, principal_name)
            if cat.raw(key) is not None:  # InvalidObjectException, not declared
                raise errors.InternalError(
                    f"Principal {principal_name} already has the role {role_name}")
            if type_name == "ROLE" and self._role(cat, principal_name) is None:
                raise errors.InternalError(f"role {principal_name} does not exist.")
            if grantorType not in self.t.PrincipalType._VALUES_TO_NAMES:
                raise errors.InternalError("grantorType.toString() on null")
            cat.put(key, self.t.RolePrincipalGrant(
                roleName=role.roleName, principalName=principal_name,
                principalType=principal_type, grantOption=bool(grant_option), grantTime=now(),
                grantorName=grantor, grantorPrincipalType=grantorType))
        return True

    def revoke_role(self, ctx, role_name, principal_name, principal_type):
        return self._revoke(ctx, role_name, principal_name, principal_type, False)

    def _revoke(self, ctx, role_name, principal_name, principal_type, grant_option):
        if role_name == PUBLIC:
            raise errors.MetaError(f"{PUBLIC} role can't be revoked.")
        with self.writing(ctx) as cat:
            role = self._require_role(cat, role_name)
            key = keys.role_grant_key(role.roleName, _type_name(self.t, principal_type), principal_name)
            data = cat.raw(key)
            if not grant_option:
                if data is not None:
                    cat.delete(key)
                return True  # HMS deletes nothing and succeeds for a non-member
            if data is None:  # HMS: roleMember.getGrantOption() on null
                raise errors.InternalError(f"{principal_name} is not a member of {role_name}")
            grant = codec.decode(self.t.RolePrincipalGrant, data)
            if not grant.grantOption:
                raise errors.MetaError(f"User {principal_name} does not have grant option "
                                       f"with role {role_name}")
            grant.grantOption = False
            cat.put(key, grant)
        return True

    def grant_revoke_role(self, ctx, request):
        kind = self.t.GrantRevokeType
        grant_option = bool(request.grantOption) if request.grantOption is not None else False
        if request.requestType == kind.GRANT:
            ok = self.grant_role(ctx, request.roleName, request.principalName,
                                 request.principalType, request.grantor, request.grantorType,
                                 grant_option)
        elif request.requestType == kind.REVOKE:
            ok = self._revoke(ctx, request.roleName, request.principalName,
                              request.principalType, grant_option)
        elif request.requestType is None:  # HMS: a switch on a null enum
            raise errors.InternalError("request type is null")
        else:
            raise errors.MetaError(f"Unknown request type {request.requestType}")
        return self.t.GrantRevokeRoleResponse(success=ok)

    def get_principals_in_role(self, ctx, request):
        name = request.roleName
        with self.reading(ctx) as cat:
            found = [] if name is None else [
                codec.decode(self.t.RolePrincipalGrant, data)
                for _, data in cat.view.scan_prefix(keys.role_grant_prefix(name))]
        return self.t.GetPrincipalsInRoleResponse(principalGrants=found)

    def get_role_grants_for_principal(self, ctx, request):
        name = request.principal_name
        type_name = _type_name(self.t, request.principal_type)
        with self.reading(ctx) as cat:
            found = self._grants_of_principal(cat, name, type_name)
        if type_name == "USER":
            found.append(self._public_grant(name))
        return self.t.GetRoleGrantsForPrincipalResponse(principalGrants=found)
