"""A commit's requirements, checked against the table's current metadata with the wording of
Iceberg's own ``UpdateRequirement`` (clients and the REST compatibility kit match on it), and
the id clashes of a commit's new sort orders and partition specs resolved as Iceberg's metadata
builder does (a new one gets the next free id, an equal one is reused)."""
from __future__ import annotations


class RequirementFailed(Exception):
    pass


def check(requirement, base) -> None:
    """RequirementFailed with Iceberg's message when ``requirement`` does not hold for
    ``base`` (None: the table does not exist)."""
    kind = requirement.type
    if kind == "assert-create":
        if base is not None:
            raise RequirementFailed("Requirement failed: table already exists")
        return
    if base is None:
        raise RequirementFailed("Requirement failed: table does not exist")
    if kind == "assert-table-uuid":
        if str(requirement.uuid) != str(base.table_uuid):
            raise RequirementFailed(f"Requirement failed: UUID does not match: expected "
                                    f"{base.table_uuid} != {requirement.uuid}")
    elif kind == "assert-ref-snapshot-id":
        ref = base.refs.get(requirement.ref)
        expected = requirement.snapshot_id
        if ref is not None:
            what = "branch" if str(getattr(ref.snapshot_ref_type, "value",
                                           ref.snapshot_ref_type)) == "branch" else "tag"
            if expected is None:
                raise RequirementFailed(f"Requirement failed: {what} {requirement.ref} was "
                                        "created concurrently")
            if expected != ref.snapshot_id:
                raise RequirementFailed(f"Requirement failed: {what} {requirement.ref} has "
                                        f"changed: expected id {expected} != {ref.snapshot_id}")
        elif expected is not None:
            raise RequirementFailed(f"Requirement failed: branch or tag {requirement.ref} is "
                                    f"missing, expected {expected}")
    else:
        field, what = _IDS[kind]
        wanted = getattr(requirement, field)
        actual = getattr(base, _BASE[kind])
        if wanted != actual:
            raise RequirementFailed(f"Requirement failed: {what} changed: expected id "
                                    f"{wanted} != {actual}")


_IDS = {
    "assert-last-assigned-field-id": ("last_assigned_field_id", "last assigned field id"),
    "assert-current-schema-id": ("current_schema_id", "current schema"),
    "assert-last-assigned-partition-id": ("last_assigned_partition_id",
                                          "last assigned partition id"),
    "assert-default-spec-id": ("default_spec_id", "default partition spec"),
    "assert-default-sort-order-id": ("default_sort_order_id", "default sort order"),
}
_BASE = {
    "assert-last-assigned-field-id": "last_column_id",
    "assert-current-schema-id": "current_schema_id",
    "assert-last-assigned-partition-id": "last_partition_id",
    "assert-default-spec-id": "default_spec_id",
    "assert-default-sort-order-id": "default_sort_order_id",
}


def renumber(updates, base) -> list:
    """``updates`` with each added sort order and partition spec given an id of its own: an
    added one equal to one the table has is that one (the add is dropped), one whose id is
    taken by a different one gets the next free id; a later ``set-default-*`` naming the
    added one (by its id, or -1 for the last added) follows it."""
    orders = {o.order_id: o for o in (base.sort_orders if base is not None else [])}
    specs = {s.spec_id: s for s in (base.partition_specs if base is not None else [])}
    out, order_ids, spec_ids = [], {}, {}
    last_order = last_spec = None
    for update in updates:
        action = update.action
        if action == "add-sort-order":
            order = update.sort_order
            same = next((i for i, o in orders.items() if o.fields == order.fields), None)
            if same is not None:
                order_ids[order.order_id] = last_order = same
                continue
            new_id = order.order_id if order.order_id not in orders else max(orders) + 1
            order = order.model_copy(update={"order_id": new_id})
            orders[new_id] = order
            order_ids[update.sort_order.order_id] = last_order = new_id
            update = update.model_copy(update={"sort_order": order})
        elif action == "add-spec":
            spec = update.spec
            same = next((i for i, s in specs.items() if s.fields == spec.fields), None)
            if same is not None:
                spec_ids[spec.spec_id] = last_spec = same
                continue
            new_id = spec.spec_id if spec.spec_id not in specs else max(specs) + 1
            spec = spec.model_copy(update={"spec_id": new_id})
            specs[new_id] = spec
            spec_ids[update.spec.spec_id] = last_spec = new_id
            update = update.model_copy(update={"spec": spec})
        elif action == "set-default-sort-order":
            target = last_order if update.sort_order_id == -1 else \
                order_ids.get(update.sort_order_id, update.sort_order_id)
            if target is not None:
                update = update.model_copy(update={"sort_order_id": target})
        elif action == "set-default-spec":
            target = last_spec if update.spec_id == -1 else \
                spec_ids.get(update.spec_id, update.spec_id)
            if target is not None:
                update = update.model_copy(update={"spec_id": target})
        out.append(update)
    return out
