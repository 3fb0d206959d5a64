"""Partition specs and partition exchange (add_partitions_pspec, get_partitions_pspec,
get_part_specs_by_filter, exchange_partition, exchange_partitions), as HMS 2.3 answers them.

Partitions are the ones of :mod:`hms_proxy.hms.partitions` (same keys, same preparation when added);
this module only translates between them and HMS's two PartitionSpec shapes:

* ``partitionList``: whole partitions;
* ``sharedSDPartitionSpec``: one storage descriptor for all, each partition a
  ``PartitionWithoutSD`` whose location is the shared one plus ``relativePath``.

What HMS 2.3 does and we copy, quirks included:

* ``add_partitions_pspec`` takes the target table from the first spec and requires every
  partition to name exactly that database and table (case-sensitively). A shared-SD partition is
  stored as HMS's ``PartitionSpecWithSharedSDProxy`` rebuilds it when it writes: the shared
  location and the relative path concatenated as they are (``null`` for a missing one), the
  create and access times given, and its parameters as given; only an empty parameter map is
  filled in (``HiveStringUtils.intern`` copies non-empty maps, so HMS's additions are lost).
* ``get_partitions_pspec`` / ``get_part_specs_by_filter`` answer one ``partitionList`` spec
  unless the table has ``hive.hcatalog.partition.spec.grouping.enabled=true``: then partitions
  under the table's location are grouped by (input format, output format, serde, columns) into
  shared-SD specs, listed in the order of HMS's ``HashMap`` (reproduced below), followed by one
  list spec of the partitions outside the table's location. ``max_parts`` is cast to a Java
  short (65536 means 0, 32768 means all).
* ``exchange_partition(s)`` move the partitions matching a (partial) spec from the source table
  to the destination table, and the source directory of the spec's leading values to the
  destination; ``exchange_partition`` answers an empty Partition.
"""
from __future__ import annotations

import copy

from hms_proxy.hms import javafmt, names, privileges, warehouse
from hms_proxy.hms.family import DDL_TIME, Family, lower, now
from hms_proxy.hms.names import part_name
from hms_proxy.hms.partitions import NPE_NO_SD, PartitionCalls, check_added_4x, limit
from hms_proxy.hms.tables import is_view, normalize_sd, update_stats_fast
from hms_proxy.thrift import dialect, errors, limits
from hms_proxy.thrift.routing import DEFAULT_CATALOG
from kvmodel import catalog as keys
from kvmodel import codec

GROUPING = "hive.hcatalog.partition.spec.grouping.enabled"


def java_short(value) -> int:
    """``(short) value``: HMS narrows max_parts to a short before listing."""
    value = int(value or 0)
    return ((value + 0x8000) & 0xFFFF) - 0x8000


def java_hashmap_order(keys_in_insertion_order: list[str]) -> list[int]:
    """Indexes of distinct string keys in the order a ``java.util.HashMap`` (default capacity
    and load factor) iterates them after inserting them in this order."""
    cap = 16
    bins: dict[int, list[int]] = {}

    def index(i: int) -> int:
        return javafmt.hashmap_bucket(keys_in_insertion_order[i], cap)

    def rehash():
        order = [i for b in sorted(bins) for i in bins[b]]
        bins.clear()
        for i in order:
            bins.setdefault(index(i), []).append(i)

    size = 0
    for i in range(len(keys_in_insertion_order)):
        bucket = bins.setdefault(index(i), [])
        bucket.append(i)
        size += 1
        if len(bucket) > 8 and cap < 64:  # treeifyBin resizes small tables instead
            cap *= 2
            rehash()
        if size > cap * 3 // 4:
            cap *= 2
            rehash()
    return [i for b in sorted(bins) for i in bins[b]]


def _java(value) -> str:
    return "null" if value is None else str(value)


def _sd_group_key(sd) -> str:
    """HMSHandler.StorageDescriptorKey: input and output format, serde library, columns."""
    serde = sd.serdeInfo
    lib = serde.serializationLib if serde is not None else None
    if serde is None:
        raise errors.InternalError("serde info is null")
    cols = "null" if sd.cols is None else \
        "[" + ", ".join(javafmt.to_string(c) for c in sd.cols) + "]"
    return "\t".join((_java(sd.inputFormat), _java(sd.outputFormat), _java(lib), cols))


def _catalog() -> str | None:
    """A spec's catalog as the stock 3.1.3/4.0.1 names it (another catalog's is put back by
    hms_proxy/thrift/routing.py); 2.3.10's specs have none."""
    return DEFAULT_CATALOG if dialect.since(dialect.HIVE31) else None


class PartitionSpecCalls(Family):
    def __init__(self, env):
        super().__init__(env)
        self._parts = PartitionCalls(env)

    # --- reads --------------------------------------------------------------------------
    def get_partitions_pspec(self, ctx, db_name, tbl_name, max_parts):
        if db_name is None and tbl_name is not None and dialect.hive4():
            raise errors.MetaError(names.NPE_IDENTIFIER)  # 4.x reads the table first
        if db_name is None or tbl_name is None:
            raise errors.InternalError("null name")  # HMS: toLowerCase() on null
        db, tbl = db_name.lower(), tbl_name.lower()
        table, items = self._parts._listing(ctx, db, tbl)
        # HMS lists through get_partitions(db, tbl, (short) max_parts), names lower-cased
        limits.check_partition_request(self.env.conf, tbl, java_short(max_parts),
                                       lambda: len(items))
        parts = [codec.decode(self.t.Partition, d) for _, d in limit(items, java_short(max_parts))]
        return self._specs(table, parts, db, tbl)

    def get_part_specs_by_filter(self, ctx, db_name, tbl_name, filter, max_parts):
        if db_name is None or tbl_name is None:  # ObjectStore normalizes the names
            raise errors.MetaError(names.NPE_IDENTIFIER)
        with self.reading(ctx) as cat:
            if cat.table(lower(db_name), lower(tbl_name)) is None:
                raise errors.NoSuchObject(f"{db_name}.{tbl_name} table not found")
        table, _ = self._parts._listing(ctx, db_name, tbl_name)
        items = self._parts._filtered(ctx, db_name, tbl_name, filter)
        # HMS lists through get_partitions_by_filter(db, tbl, filter, (short) max_parts)
        limits.check_partition_request(self.env.conf, tbl_name, java_short(max_parts),
                                       lambda: len(items))
        parts = [codec.decode(self.t.Partition, d) for _, d in limit(items, java_short(max_parts))]
        return self._specs(table, parts, db_name, tbl_name)

    def _specs(self, table, parts, db, tbl):
        root = table.sd.location if table.sd else None
        if (table.parameters or {}).get(GROUPING, "").lower() == "true":
            return self._grouped(table, parts)
        return [self.t.PartitionSpec(
            dbName=db, tableName=tbl, rootPath=root, catName=_catalog(),
            partitionList=self.t.PartitionListComposingSpec(partitions=parts))]

    def _grouped(self, table, parts):
        """HMSHandler.get_partitionspecs_grouped_by_storage_descriptor."""
        root = table.sd.location
        if root is None:
            raise errors.InternalError("table location is null")
        inside, outside = [], []
        for p in parts:
            location = p.sd.location if p.sd else None
            if location is None:
                raise errors.InternalError("partition location is null")
            (inside if location.startswith(root) else outside).append(p)
        group_keys: list[str] = []
        groups: dict[str, tuple] = {}
        for p in inside:
            key = _sd_group_key(p.sd)
            if key not in groups:
                group_keys.append(key)
                groups[key] = (p.sd, [])
            groups[key][1].append(self.t.PartitionWithoutSD(
                values=p.values, createTime=p.createTime or 0,
                lastAccessTime=p.lastAccessTime or 0,
                relativePath=p.sd.location[len(root):], parameters=p.parameters))
        specs = []
        for i in java_hashmap_order(group_keys):
            sd, members = groups[group_keys[i]]
            shared = codec.clone(sd)
            shared.location = root
            specs.append(self.t.PartitionSpec(
                dbName=table.dbName, tableName=table.tableName, rootPath=root, catName=_catalog(),
                sharedSDPartitionSpec=self.t.PartitionSpecWithSharedSD(
                    partitions=members, sd=shared)))
        if outside:
            specs.append(self.t.PartitionSpec(
                dbName=table.dbName, tableName=table.tableName, catName=_catalog(),
                partitionList=self.t.PartitionListComposingSpec(partitions=outside)))
        return specs

    # --- add ----------------------------------------------------------------------------
    def add_partitions_pspec(self, ctx, new_parts):
        if new_parts is None:
            raise errors.InternalError("partition specs are null")
        if not new_parts:
            return 0
        if any(s is None or (s.partitionList is None and s.sharedSDPartitionSpec is None)
               for s in new_parts):
            raise errors.InternalError("unsupported PartitionSpec")  # a null proxy in HMS
        db, tbl = new_parts[0].dbName, new_parts[0].tableName
        hive4 = dialect.hive4()
        if db is None or tbl is None:
            if hive4:  # the 4.x normalises the names first
                raise errors.MetaError(names.NPE_IDENTIFIER)
            raise errors.InternalError("null name")
        with self.writing(ctx) as cat:
            table = cat.table(lower(db), lower(tbl))
            if table is None:
                if hive4:
                    raise errors.InvalidObject(
                        f"Unable to add partitions because {keys.full_name(lower(db))}."
                        f"{lower(tbl)} does not exist")
                raise errors.InvalidObject(
                    f"Unable to add partitions because database or table {db}.{tbl} "
                    "does not exist")
            # HMS's first pass (the request thread): ownership and existence, in order
            entries = []
            for shared, part in self._iterate(new_parts):
                if hive4 and (part.dbName is None or part.tableName is None):
                    raise errors.MetaError(names.NPE_IDENTIFIER)  # the 4.x normalises them
                if part.tableName is None:
                    raise errors.InternalError("partition table name is null")
                # (the 4.x compares the names as it keys them, 2.3 as they are)
                if (lower(part.tableName), lower(part.dbName)) != (lower(tbl), lower(db)) \
                        if hive4 else (part.tableName != tbl or part.dbName != db):
                    if part.tableName == tbl and part.dbName is None:
                        raise errors.InternalError("partition database name is null")
                    raise errors.MetaError(
                        f"Partition does not belong to target table {db}.{tbl}: "
                        f"{javafmt.to_string(part)}")
                if hive4 and not part.values:
                    raise errors.MetaError("The partition values cannot be null or empty.")
                if part.values is None:
                    raise errors.InternalError("partition values are null")
                name = part_name(table, part.values)
                if cat.raw(keys.part_key(table.dbName, table.tableName, name)) is not None:
                    raise errors.AlreadyExists(
                        f"Partition already exists: {javafmt.to_string(part)}")
                entries.append((shared, name, part))
            # the second pass (HMS's worker threads): storage descriptors and duplicates
            seen: set[tuple] = set()
            for shared, name, part in entries:
                if part.sd is None and hive4 and is_view(table):
                    continue  # the 4.x adds a view's partition without one
                if part.sd is None:
                    raise errors.MetaError(NPE_NO_SD)
                values = tuple(part.values)
                if values in seen:
                    shown = copy.copy(part)
                    shown.sd = copy.copy(part.sd)
                    shown.sd.location = self._location(table, name, part.sd.location)
                    raise errors.MetaError("java.io.IOException: Duplicate partitions in the "
                                           f"list: {javafmt.to_string(shown)}")
                seen.add(values)
            if hive4:
                check_added_4x(table, [part for _, _, part in entries])
            rows = []
            for shared, name, part in entries:
                if shared:
                    stored = self._prepare_shared(table, name, part)
                    privileges.copy_to_new_partition(cat, table, name, stored.values)
                else:
                    _, stored = self._parts._prepare(cat, table, part)
                rows.append((keys.part_key(table.dbName, table.tableName, name),
                             codec.encode(stored)))
            cat.view.put_many(rows)
        return len(rows)

    def _iterate(self, specs):
        """(is shared-SD, Partition) as HMS's PartitionSpecProxy iterators produce them."""
        for spec in specs:
            if spec.partitionList is not None:
                if spec.partitionList.partitions is None:
                    raise errors.InternalError("partition list is null")
                for part in spec.partitionList.partitions:
                    yield False, part
                continue
            shared = spec.sharedSDPartitionSpec
            if shared.partitions is None:
                raise errors.InternalError("partitions are null")
            for pw in shared.partitions:
                if shared.sd is None:
                    raise errors.InternalError("shared storage descriptor is null")
                sd = codec.clone(shared.sd)
                sd.location = _java(sd.location) + _java(pw.relativePath)
                yield True, self.t.Partition(
                    values=pw.values, dbName=spec.dbName, tableName=spec.tableName,
                    createTime=pw.createTime or 0, lastAccessTime=pw.lastAccessTime or 0,
                    sd=sd, parameters=pw.parameters)

    @staticmethod
    def _location(table, name, given):
        if given:
            return warehouse.qualify(given)
        if table.sd and table.sd.location:
            return warehouse.join(table.sd.location, name)
        return None

    def _prepare_shared(self, table, name, part):
        """A shared-SD partition as HMS writes it: HMS prepares a copy (directory, times,
        parameters) and then stores a fresh one built from the request again."""
        location = part.sd.location  # raw: shared location + relative path
        made_dir = warehouse.mkdirs(self._location(table, name, location))
        stored = copy.copy(part)
        stored.dbName, stored.tableName = table.dbName, table.tableName
        stored.values = list(part.values)
        stored.sd = normalize_sd(part.sd, self.t)
        stored.sd.location = location
        params = part.parameters
        if params is None:
            stored.parameters = {}
        elif params:
            stored.parameters = dict(params)  # HMS worked on an interned copy
        else:  # HMS's additions land in the request's own (empty) map
            stored.parameters = {}
            update_stats_fast(stored.parameters, self._location(table, name, location),
                              made_dir, None)
            if not stored.parameters:
                stored.parameters[DDL_TIME] = str(now())
        stored.privileges = None
        return stored

    # --- exchange -----------------------------------------------------------------------
    def exchange_partition(self, ctx, partitionSpecs, source_db, source_table_name, dest_db,
                           dest_table_name):
        self.exchange_partitions(ctx, partitionSpecs, source_db, source_table_name, dest_db,
                                 dest_table_name)
        # HMS answers ``new Partition()``: a writeId left unset (our struct's default is -1)
        return self.t.Partition(createTime=0, lastAccessTime=0, writeId=None)

    def exchange_partitions(self, ctx, partitionSpecs, source_db, source_table_name, dest_db,
                            dest_table_name):
        move = None
        hive3 = dialect.since(dialect.HIVE31)
        if hive3:  # HMS 3.1/4.x check the names before anything (2.3 fails on them later)
            _check_exchange_names(partitionSpecs, source_db, source_table_name, dest_db,
                                  dest_table_name)
        with self.writing(ctx) as cat:
            dest = cat.table(lower(dest_db), lower(dest_table_name))
            source = cat.table(lower(source_db), lower(source_table_name))
            if hive3:
                _check_exchange_tables(dest, source, source_db, source_table_name, dest_db,
                                       dest_table_name)
            if source is None or partitionSpecs is None:
                raise errors.InternalError("source table or partition spec is null")
            src_keys = source.partitionKeys or []
            vals = [partitionSpecs.get(k.name) or "" for k in src_keys]
            present = [(k, v) for k, v in zip(src_keys, vals) if v]
            wanted = [(i, v) for i, v in enumerate(vals) if v]
            if not vals:
                raise errors.MetaError("Invalid partition key & values; keys [], values []")
            to_move = []
            for name, data in cat.partition_list(source.dbName, source.tableName):
                if wanted:
                    pvals = names.part_name_to_vals(name)
                    if any(pvals[i] != v for i, v in wanted):
                        continue
                to_move.append((name, data))
            if hive3 and not to_move:
                raise errors.MetaError(
                    "No partition is found with the values {" + ", ".join(
                        f"{k}={v}" for k, v in javafmt.thrift_map_order(partitionSpecs))
                    + f"}} for the table {source_table_name}")
            if dest is None:
                raise errors.InternalError("destination table is null")
            if not (_same_columns(source.sd.cols, dest.sd.cols)
                    and _same_columns(source.partitionKeys, dest.partitionKeys)):
                raise errors.MetaError("The tables have different schemas. "
                                       "Their partitions cannot be exchanged.")
            present_name = _make_part_name([k.name for k, _ in present], [v for _, v in present])
            source_path = warehouse.join(source.sd.location, present_name)
            dest_path = warehouse.join(dest.sd.location, present_name)
            moved, dropped = [], []
            for name, data in to_move:
                part = codec.decode(self.t.Partition, data)
                dest_name = part_name(dest, part.values)
                key = keys.part_key(dest.dbName, dest.tableName, dest_name)
                if cat.raw(key) is not None:  # nothing of the write applies (nor moves)
                    if hive3:
                        raise errors.MetaError(f"The partition {dest_name} already exists in "
                                               f"the table {dest_table_name}")
                    raise errors.MetaError(
                        'Insert of object "org.apache.hadoop.hive.metastore.model.MPartition" '
                        'using statement "INSERT INTO PARTITIONS (PART_ID,CREATE_TIME,'
                        'LAST_ACCESS_TIME,PART_NAME,SD_ID,TBL_ID) VALUES (?,?,?,?,?,?)" failed '
                        ": The statement was aborted because it would have caused a duplicate "
                        "key value in a unique or primary key constraint or unique index "
                        "identified by 'UNIQUEPARTITION' defined on 'PARTITIONS'.")
                part.dbName, part.tableName = dest.dbName, dest.tableName
                part.sd.location = warehouse.join(dest.sd.location, dest_name)
                cat.put(key, part)
                dropped += self._parts._drop(cat, source, [name])
                privileges.copy_to_new_partition(cat, dest, dest_name, part.values)
                answer = copy.copy(part)
                answer.dbName = dest_db
                moved.append(answer)
            _check_rename(source_path, dest_path)
            move = (source_path, dest_path)
        if move is not None:
            warehouse.rename(*move)
        # HMS fires a drop event for the source partitions
        self.env.cascades.run("partitions_dropped", self.env, source, dropped)
        return moved


def _check_exchange_names(spec, source_db, source_table, dest_db, dest_table) -> None:
    """What HMS 3.1/4.x check of an exchange first: no null name or spec."""
    if spec is None or None in (source_db, source_table, dest_db, dest_table):
        raise errors.MetaError("The DB and table name for the source and destination tables, "
                               "and the partition specs must not be null.")


def _check_exchange_tables(dest, source, source_db, source_table, dest_db, dest_table) -> None:
    """Then HMS 3.1/4.x look up the destination table and the source table, each named with
    the catalog when missing."""
    if dest is None:
        raise errors.MetaError(
            f"The destination table {keys.full_name(dest_db)}.{dest_table} not found")
    if source is None:
        raise errors.MetaError(
            f"The source table {keys.full_name(source_db)}.{source_table} not found")


def _same_columns(a, b) -> bool:
    """MetaStoreUtils.compareFieldColumns: same length, names and types (not comments)."""
    a, b = a or [], b or []
    return len(a) == len(b) and all(x.name == y.name and x.type == y.type for x, y in zip(a, b))


def _make_part_name(key_names, values) -> str:
    if not key_names or len(key_names) != len(values):
        raise errors.MetaError(
            "Invalid partition key & values; keys ["
            + "".join(f"{k}, " for k in key_names) + "], values ["
            + "".join(f"{v}, " for v in values) + "]")
    return names.make_part_name(key_names, values)


def _check_rename(source_path: str, dest_path: str) -> None:
    """What HMS's Warehouse.renameDir fails on, checked before anything is written; the
    destination's parent is created first, as HMS does before renaming."""
    src, dst = warehouse.local_path(source_path), warehouse.local_path(dest_path)
    if src is None or dst is None:
        return
    parent = dest_path.rsplit("/", 1)[0]
    if not warehouse.exists(parent) and not warehouse.mkdirs(parent):
        raise errors.MetaError(f"Unable to create path {parent}")
    if warehouse.exists(dest_path):
        raise errors.MetaError("Got exception: java.io.IOException Cannot rename the source "
                               "path. The destination path already exists.")
    if not warehouse.exists(source_path):
        raise errors.MetaError("Got exception: java.io.FileNotFoundException File "
                               f"{source_path} does not exist")
