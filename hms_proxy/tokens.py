"""Delegation tokens and master keys (get/renew/cancel_delegation_token, add/get/remove_token,
get_all_token_identifiers, add/update/remove_master_key, get_master_keys), as HMS 2.3 answers them.
"""
from __future__ import annotations

from hms_proxy.family import Family


class TokenCalls(Family):
    pass
