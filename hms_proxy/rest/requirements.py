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


class _Ids:
    """One kind of numbered object of a table (sort orders, partition specs) as renumbered:
    ``add``: the action adding one, ``field``: the update's field holding it, ``key``: its
    id's name; ``default``: the action choosing one and ``pick``: its id's field."""

    def __init__(self, existing, add, field, key, default, pick):
        self.known = {getattr(o, key): o for o in existing}
        self.add, self.field, self.key, self.default, self.pick = add, field, key, default, pick
        self.ids: dict = {}
        self.last = None

    def added(self, update):
        """The update with its object's id made its own; None when it adds an equal one."""
        item = getattr(update, self.field)
        given = getattr(item, self.key)
        same = next((i for i, o in self.known.items() if o.fields == item.fields), None)
        if same is not None:
            self.ids[given] = self.last = same
            return None
        new_id = given if given not in self.known else max(self.known) + 1
        item = item.model_copy(update={self.key: new_id})
        self.known[new_id] = item
        self.ids[given] = self.last = new_id
        return update.model_copy(update={self.field: item})

    def chosen(self, update):
        """A default choice following the renumbered ids (-1: the last added)."""
        given = getattr(update, self.pick)
        target = self.last if given == -1 else self.ids.get(given, given)
        return update if target is None else update.model_copy(update={self.pick: target})


def renumber(updates, base) -> list:
    """``updates`` with each added sort order and partition spec given an id of its own: an
    added one equal to one the table has is that one (the add is dropped), one whose id is
    taken by a different one gets the next free id; a later ``set-default-*`` naming the
    added one (by its id, or -1 for the last added) follows it."""
    kinds = [_Ids(base.sort_orders if base is not None else [], "add-sort-order", "sort_order",
                  "order_id", "set-default-sort-order", "sort_order_id"),
             _Ids(base.partition_specs if base is not None else [], "add-spec", "spec",
                  "spec_id", "set-default-spec", "spec_id")]
    out = []
    for update in updates:
        for kind in kinds:
            if update.action == kind.add:
                update = kind.added(update)
                break
            if update.action == kind.default:
                update = kind.chosen(update)
                break
        if update is not None:
            out.append(update)
    return out
