"""Partitions: add, get, list, filter, alter, rename, drop; partition names and values.

Partitions are keyed by their Hive-escaped name under their table, so every listing is one
ordered range scan in HMS's order (by partition name), answered with the stored bytes as they
are (:class:`~hms_proxy.thrift.replies.Raw`) unless a filter needs the values.
"""
from __future__ import annotations

import bisect
import copy
from contextlib import contextmanager

from hms_proxy.hms import filters, javafmt, listing, names, privileges, served_props, warehouse
from hms_proxy.hms.family import DDL_TIME, Family, lower, now
from hms_proxy.hms.names import part_name
from hms_proxy.hms.tables import (
    fast_stats,
    is_external,
    is_translated,
    is_view,
    mark_columns_accurate,
    normalize_sd,
    purges_external_data,
    update_stats_fast,
)
from hms_proxy.thrift import dialect, errors, limits
from hms_proxy.thrift.routing import DEFAULT_CATALOG
from hms_proxy.thrift.replies import Raw, RawStream
from kvmodel import catalog as keys
from kvmodel import codec
from kvmodel.store.contract import prefix_end
from stats import layout


def _sent_sd(sd):
    """A copy of the client's storage descriptor deep enough to survive its normalisation in
    place (which replaces the descriptor's fields and changes its serde and skew info)."""
    sent = copy.copy(sd)
    sent.serdeInfo = copy.copy(sd.serdeInfo)
    sent.skewedInfo = copy.copy(sd.skewedInfo)
    return sent


def limit(items, max_parts):
    if max_parts is None or max_parts < 0:
        return items
    return items[:max_parts]


class PartitionCalls(Family):
    # --- add ----------------------------------------------------------------------------
    def _prepare(self, cat, table, part, env_context=None, reply=False, made=None):
        """The partition as HMS stores it: names lower-case, a location, times and stats;
        returns (name, partition), or with ``reply`` (name, partition, answer): the answer is
        the client's partition as HMS sends it back, only the location, times and parameters
        filled in (an unset skewedInfo stays unset, names keep their case)."""
        hive4 = dialect.hive4()
        bare_view = part.sd is None and hive4 and is_view(table)  # 4.x stores it so
        if part.sd is None and not bare_view:
            raise errors.MetaError(NPE_NO_SD)
        name = part_name(table, part.values)
        p = copy.copy(part)
        p.dbName, p.tableName = table.dbName, table.tableName
        p.values = list(part.values)
        sent_sd = _sent_sd(part.sd) if reply and not bare_view else None
        no_cols = part.sd is not None and part.sd.cols is None
        p.sd = None if bare_view else normalize_sd(part.sd, self.t, copy_first=False)
        if no_cols and hive4:  # the 4.x keeps a partition without columns so
            p.sd.cols = None
        made_dir = False
        if not is_view(table):
            if not p.sd.location:
                p.sd.location = warehouse.join(table.sd.location, name)
            # made: the directories an add_partitions made together (warehouse.mkdirs_many)
            made_dir = made[p.sd.location] if made and p.sd.location in made else \
                warehouse.mkdirs(p.sd.location)
        p.parameters = dict(part.parameters or {})
        if not is_view(table):
            update_stats_fast(p.parameters, p.sd.location, made_dir, env_context)
        p.createTime = now()
        p.lastAccessTime = part.lastAccessTime or 0
        if not p.parameters.get(DDL_TIME):
            p.parameters[DDL_TIME] = str(p.createTime)
        p.privileges = None
        privileges.copy_to_new_partition(  # PARTITION_LEVEL_PRIVILEGE tables
            cat, table, name, p.values)
        if not reply:
            return name, p
        answer = copy.copy(part)
        answer.sd = sent_sd
        if sent_sd is not None:
            sent_sd.location = p.sd.location
        answer.createTime, answer.parameters = p.createTime, p.parameters
        return name, p, javafmt.as_java_writes(answer)

    @contextmanager
    def _looking_ahead(self, ctx, db, tbl, parts):
        """On a store whose files are remote (lakeFS), what adding ``parts`` asks of it under
        the branch's lock is asked first, outside the lock, where concurrent writers of the
        branch ask it at once: whether their keys are in the head commit (the answers are
        cached by commit) and whether their directories exist (kept for the transaction by
        :func:`warehouse.known_directories`). Nothing is decided here: the transaction reads
        the table again, and a location that is not the one looked at is asked there."""
        if not warehouse.any_remote():  # local files: nothing to ask ahead, no read to pay
            yield
            return
        locations = []
        try:
            with self.reading(ctx) as cat:
                table = cat.table(lower(db or ""), lower(tbl or ""))
                if table is not None and not is_view(table) and table.sd is not None and \
                        warehouse.is_remote(table.sd.location):
                    names = [part_name(table, part.values) for part in parts]
                    cat.view.get_many([keys.part_key(table.dbName, table.tableName, name)
                                       for name in names])
                    locations = [
                        warehouse.qualify(part.sd.location) if part.sd and part.sd.location
                        else warehouse.join(table.sd.location, name)
                        for name, part in zip(names, parts)]
        except Exception:  # noqa: BLE001 - bad input or a table gone: the transaction answers it
            locations = []
        with warehouse.known_directories(locations):
            yield

    def _table_for_add(self, cat, db, tbl):
        table = cat.table(lower(db), lower(tbl))
        if table is None:
            if dialect.hive4():
                raise errors.InvalidObject(f"Unable to add partitions because "
                                           f"{keys.full_name(lower(db))}.{lower(tbl)} does not exist")
            raise errors.InvalidObject(
                "Unable to add partition because table or database do not exist")
        return table

    def add_partition(self, ctx, new_part):
        return self.add_partition_with_environment_context(ctx, new_part, None)

    def add_partition_with_environment_context(self, ctx, new_part, environment_context,
                                               appended=False):
        if new_part is None:
            raise errors.MetaError("Partition cannot be null.")
        with self._looking_ahead(ctx, new_part.dbName, new_part.tableName, [new_part]), \
                self.writing(ctx) as cat:
            table = self._table_for_add(cat, new_part.dbName, new_part.tableName)
            described = _describe(new_part)  # the client's partition, as HMS prints it
            name, part, answer = self._prepare(cat, table, new_part, environment_context,
                                               reply=True)
            key = keys.part_key(table.dbName, table.tableName, name)
            if cat.raw(key) is not None:
                sep = "" if appended else " "  # HMS words the two paths differently
                raise errors.AlreadyExists(f"Partition already exists:{sep}{described}")
            cat.put(key, part)
            return answer

    def add_partitions(self, ctx, new_parts):
        if not new_parts:
            return 0
        db, tbl = new_parts[0].dbName, new_parts[0].tableName
        return len(self._add_many(ctx, db, tbl, new_parts, if_not_exists=False))

    def add_partitions_req(self, ctx, request):
        need = request.needResult is None or request.needResult
        added = self._add_many(ctx, request.dbName, request.tblName, request.parts or [],
                               bool(request.ifNotExists), reply=need)
        result = self.t.AddPartitionsResult()
        if need:
            result.partitions = added
        return result

    def _add_many(self, ctx, db, tbl, parts, if_not_exists, reply=False):
        """Add partitions all or nothing; returns those added (as HMS answers them with
        ``reply``, else only counted)."""
        added: list = []
        if not parts:
            return added
        with self._looking_ahead(ctx, db, tbl, parts), self.writing(ctx) as cat:
            table = self._table_for_add(cat, db, tbl)
            seen: set[str] = set()
            named: list[tuple[str, object]] = []
            for part in parts:
                if lower(part.dbName) != table.dbName or lower(part.tableName) != table.tableName:
                    raise errors.MetaError(
                        f"Partition does not belong to target table {table.dbName}.{table.tableName}: {_describe(part)}")
                name = part_name(table, part.values)
                if name in seen:
                    raise errors.MetaError(
                        f"java.io.IOException: Duplicate partitions in the list: {_describe(part)}")
                seen.add(name)
                named.append((name, part))
            existing = cat.view.get_many(
                [keys.part_key(table.dbName, table.tableName, n) for n, _ in named])
            staged = []
            for (name, part), found in zip(named, existing):
                if found is not None:
                    if if_not_exists:
                        continue
                    raise errors.AlreadyExists(f"Partition already exists: {_describe(part)}")
                staged.append((name, part))
            if dialect.hive4():
                check_added_4x(table, [part for _, part in staged], same_names=True)
            rows = []
            made = None
            if len(staged) > 1 and not is_view(table):
                made = warehouse.mkdirs_many([
                    warehouse.qualify(part.sd.location) if part.sd and part.sd.location
                    else warehouse.join(table.sd.location, name) for name, part in staged])
            for name, part in staged:
                _, prepared, *answer = self._prepare(cat, table, part, reply=reply, made=made)
                rows.append((keys.part_key(table.dbName, table.tableName, name),
                             codec.encode(prepared)))
                added.append(answer[0] if reply else name)
            cat.view.put_many(rows)
        return added

    def append_partition(self, ctx, db_name, tbl_name, part_vals):
        return self.append_partition_with_environment_context(ctx, db_name, tbl_name, part_vals, None)

    def append_partition_with_environment_context(self, ctx, db_name, tbl_name, part_vals,
                                                  environment_context):
        with self.reading(ctx) as cat:
            table = self._table_for_add(cat, db_name, tbl_name)
        if (is_view(table) and dialect.hive4()) or \
                (not is_view(table) and not (table.sd and table.sd.location)):
            # a view (4.x), or a table altered to have no location: HMS takes it for a view
            raise errors.MetaError("Cannot append a partition to a view")
        part = self.t.Partition(dbName=table.dbName, tableName=table.tableName,
                                values=list(part_vals or []), sd=codec.clone(table.sd))
        part.sd.location = None
        if table.sd and table.sd.location and not is_view(table):
            part.sd.location = warehouse.join(table.sd.location, part_name(table, part.values))
        added = self.add_partition_with_environment_context(ctx, part, environment_context,
                                                            appended=True)
        # HMS answers with the database and table names as the caller spelled them
        added.dbName, added.tableName = db_name, tbl_name
        return added

    def append_partition_by_name(self, ctx, db_name, tbl_name, part_name_):
        return self.append_partition_by_name_with_environment_context(
            ctx, db_name, tbl_name, part_name_, None)

    def append_partition_by_name_with_environment_context(self, ctx, db_name, tbl_name,
                                                          part_name_, environment_context):
        try:
            vals = self._vals_from_name(ctx, db_name, tbl_name, part_name_)
        except errors.NoSuchObject as exc:  # HMS: InvalidObjectException on this path
            raise errors.InvalidObject(exc.message) from None
        return self.append_partition_with_environment_context(
            ctx, db_name, tbl_name, vals, environment_context)

    # --- single reads -------------------------------------------------------------------
    def get_partition(self, ctx, db_name, tbl_name, part_vals):
        db, tbl = lower(db_name), lower(tbl_name)
        with self.reading(ctx) as cat:
            table = self.require_table(cat, db, tbl)
            data = cat.raw(keys.part_key(db, tbl, part_name(table, part_vals)))
        if data is None:
            raise errors.NoSuchObject(f"partition values={_java_list(part_vals)}")
        return Raw(data)

    def get_partition_with_auth(self, ctx, db_name, tbl_name, part_vals, user_name, group_names):
        if dialect.hive4():
            check_names(db_name, tbl_name)
        found = self.get_partition(ctx, db_name, tbl_name, part_vals)
        return self._with_auth(ctx, db_name, tbl_name, [found], user_name, group_names)[0]

    def _with_auth(self, ctx, db_name, tbl_name, found, user_name, group_names):
        with self.reading(ctx) as cat:
            return privileges.with_auth(cat, self.t, lower(db_name), lower(tbl_name), found,
                                        user_name, group_names)

    def get_partition_by_name(self, ctx, db_name, tbl_name, part_name_):
        vals = self._vals_from_name(ctx, db_name, tbl_name, part_name_)
        return self.get_partition(ctx, db_name, tbl_name, vals)

    def _vals_from_name(self, ctx, db_name, tbl_name, name):
        db, tbl = lower(db_name), lower(tbl_name)
        hive4 = dialect.hive4()
        if hive4 and (db_name is None or tbl_name is None):  # the 4.x reads the table first
            raise errors.MetaError(names.NPE_IDENTIFIER)
        with self.reading(ctx) as cat:
            table = self.require_table(cat, db, tbl)
        if hive4 and not name:  # Warehouse.makeSpecFromName
            raise errors.MetaError(f"Partition name is invalid. {_java_str(name)}")
        spec = names.part_name_to_spec(name or "")
        vals = []
        for key in table.partitionKeys or []:
            if key.name not in spec:
                raise errors.NoSuchObject(f"incomplete partition name - missing {key.name}")
            vals.append(spec[key.name])
        return vals

    # --- listings -----------------------------------------------------------------------
    def _listing(self, ctx, db_name, tbl_name, missing=errors.NoSuchObject):
        """(table, ((name, bytes), ...)) for the table's partitions, in name order."""
        db, tbl = lower(db_name), lower(tbl_name)

        def compute(cat):
            table = cat.table(db, tbl)
            return None if table is None else (table, cat.partition_list(db, tbl))

        found = self.cached(ctx, ("listing", db, tbl), compute,
                            weigh=lambda value: 4096 + _weigh_items(value[1]))
        if found is None:
            raise missing(f"{db}.{tbl} table not found")
        return found

    def get_partitions(self, ctx, db_name, tbl_name, max_parts):
        # a list, or for a large table a stream written to the client as it is read
        _, found = listing.partitions(self, ctx, lower(db_name), lower(tbl_name), max_parts)
        return self._within_limit(tbl_name, max_parts, found)

    def _within_limit(self, tbl_name, max_parts, found):
        """``found``, unless it breaks ``hive.metastore.limit.partition.request`` (a stream
        refused is closed)."""
        try:
            limits.check_partition_request(self.env.conf, tbl_name, max_parts,
                                           lambda: len(found))
        except BaseException:
            if isinstance(found, RawStream):
                found.close()
            raise
        return found

    def get_partitions_with_auth(self, ctx, db_name, tbl_name, max_parts, user_name, group_names):
        db, tbl = lower(db_name), lower(tbl_name)
        try:
            table, found = listing.partitions(self, ctx, db, tbl, max_parts)
        except errors.NoSuchObject:
            if limits.partition_request_limit(self.env.conf) > -1:
                # HMS counts the partitions first (get_num_partitions_by_filter), which fails
                raise errors.NoSuchObject(f"Specified database/table does not exist : {db}.{tbl}")
            return []  # HMS's getPartitionsWithAuth lists nothing here
        found = self._within_limit(tbl_name, max_parts, found)
        if isinstance(found, RawStream):
            if (table.parameters or {}).get(privileges.PART_LEVEL, "").upper() != "TRUE":
                return found  # stored as they are: no privileges to add
            found = found.materialise()
        return self._with_auth(ctx, db_name, tbl_name, found, user_name, group_names)

    def get_partition_names(self, ctx, db_name, tbl_name, max_parts):
        # HMS 2.3 fails here with an unchecked exception when the table is missing.
        return listing.partitions(self, ctx, lower(db_name), lower(tbl_name), max_parts,
                                  missing=errors.InternalError, names_only=True)[1]

    def _partial(self, ctx, db_name, tbl_name, part_vals, max_parts, whole=False):
        """The partitions whose first values are ``part_vals`` (an empty one matching any).
        ``whole``: no values at all match every partition (Hive 4's partition listings by
        values; its name listing and HMS 2.3/3.1 refuse them)."""
        table, items = self._listing(ctx, db_name, tbl_name)
        nkeys = len(table.partitionKeys or [])
        part_vals = list(part_vals or [])
        if len(part_vals) > nkeys:  # 3.1 and 4.x print the values, 2.3 counts them
            given = _java_list(part_vals) if dialect.since(dialect.HIVE31) else len(part_vals)
            raise errors.MetaError(
                f"Incorrect number of partition values. numPartKeys={nkeys}, part_val={given}")
        if not part_vals and not (whole and dialect.hive4()):
            raise errors.MetaError("Invalid partition key & values; keys [], values []")
        wanted = [(i, v) for i, v in enumerate(part_vals) if v]
        out = []
        for name, data in items:
            if wanted:
                vals = names.part_name_to_vals(name)
                if any(vals[i] != v for i, v in wanted):
                    continue
            out.append((name, data))
        return limit(out, max_parts)

    def get_partitions_ps(self, ctx, db_name, tbl_name, part_vals, max_parts):
        return [Raw(d) for _, d in self._partial(ctx, db_name, tbl_name, part_vals, max_parts,
                                                 whole=True)]

    def get_partitions_ps_with_auth(self, ctx, db_name, tbl_name, part_vals, max_parts,
                                    user_name, group_names):
        found = self.get_partitions_ps(ctx, db_name, tbl_name, part_vals, max_parts)
        if user_name is None or group_names is None:  # HMS sets privileges only with both
            return found
        return self._with_auth(ctx, db_name, tbl_name, found, user_name, group_names)

    def get_partition_names_ps(self, ctx, db_name, tbl_name, part_vals, max_parts):
        return [n for n, _ in self._partial(ctx, db_name, tbl_name, part_vals, max_parts)]

    def get_partitions_by_names(self, ctx, db_name, tbl_name, names_):
        db, tbl = lower(db_name), lower(tbl_name)
        hive4 = dialect.hive4()
        if hive4:
            check_names(db_name, tbl_name)
            if names_ is None:
                raise errors.MetaError(
                    'java.lang.NullPointerException: Cannot invoke "java.util.List.size()" '
                    'because the return value of "org.apache.hadoop.hive.metastore.client.'
                    'builder.GetPartitionsArgs.getPartNames()" is null')
        with self.reading(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                if hive4:  # (2.3 and 3.1 list nothing)
                    raise errors.InvalidObject(f"{db}.{tbl} table not found")
                return []
            wanted = sorted({self._canonical_name(table, n) for n in names_ or []} - {None})
            found = cat.view.get_many([keys.part_key(db, tbl, n) for n in wanted])
        return [Raw(d) for d in found if d is not None]

    @staticmethod
    def _canonical_name(table, name):
        spec = names.part_name_to_spec(name or "")
        try:
            return part_name(table, [spec[k.name] for k in table.partitionKeys or []])
        except (KeyError, errors.HMSError):
            return None

    def _filtered(self, ctx, db_name, tbl_name, filter_text):
        table, items = self._listing(ctx, db_name, tbl_name)
        if not filter_text:
            return items
        key_types = {k.name: k.type for k in table.partitionKeys or []}
        expr = filters.parse_filter(filter_text)
        predicate = expr.compile(key_types)
        key_names = list(key_types)
        db, tbl = table.dbName, table.tableName
        # (name, bytes, values) per partition, parsed once per branch state (from the view
        # the cache entry is keyed by, never from another read).
        parsed = self.cached(ctx, ("values", db, tbl), lambda cat: tuple(
            (n, d, dict(zip(key_names, self._stored_values(n, d))))
            for n, d in cat.partition_list(db, tbl)), weigh=_weigh_items)
        parsed = _narrow_to_leading_value(parsed, expr.root, table.partitionKeys or [])
        return [(n, d) for n, d, values in parsed if predicate(values)]

    def _stored_values(self, name, data):
        """A partition's values. The name spells them, except where an empty or null value
        became ``__HIVE_DEFAULT_PARTITION__``: then the stored struct is read."""
        if names.DEFAULT_PARTITION_NAME in name:
            return codec.decode(self.t.Partition, data).values
        return names.part_name_to_vals(name)

    def get_partitions_by_filter(self, ctx, db_name, tbl_name, filter, max_parts):
        found = self._filtered(ctx, db_name, tbl_name, filter)
        limits.check_partition_request(self.env.conf, tbl_name, max_parts, lambda: len(found))
        return [Raw(d) for _, d in limit(found, max_parts)]

    def get_num_partitions_by_filter(self, ctx, db_name, tbl_name, filter):
        if (db_name is None or tbl_name is None) and dialect.hive4():
            raise errors.MetaError("The DB and table name cannot be null.")
        try:
            return len(self._filtered(ctx, db_name, tbl_name, filter))
        except errors.NoSuchObject:
            if filter:  # HMS parses the filter before it looks for the table
                filters.parse_filter(filter)
            raise errors.NoSuchObject("Specified database/table does not exist : "  # GetHelper's
                                      f"{lower(db_name)}.{lower(tbl_name)}") from None

    def get_partition_values(self, ctx, request):
        """HMS 2.3's ObjectStore.listPartitionValues, quirks included. Without a filter: the
        requested keys cut out of each *escaped* partition name as its JDOQL substring
        expressions do (a key is located by regex match against the table's keys, first,
        last or intermediate), distinct rows sorted (Derby's DISTINCT), ``ascending`` and
        ``partitionOrder`` ignored. With a filter: every key's unescaped value of each
        partition passing it, by partition name in the requested direction."""
        if request is None:
            raise errors.InternalError("get_partition_values: no request")
        _check_values_request(request)
        if not request.partitionKeys:
            raise errors.InternalError("get_partition_values: no partition keys")
        db, tbl = lower(request.dbName), lower(request.tblName)
        if request.filter:
            return self._partition_values_by_filter(ctx, db, tbl, request)
        with self.reading(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise errors.MetaError(
                    "Error retrieving partition values: java.lang.NullPointerException: Cannot "
                    'invoke "org.apache.hadoop.hive.metastore.api.Table.getPartitionKeys()" '
                    'because the return value of "org.apache.hadoop.hive.metastore.ObjectStore'
                    '.getTable(String, String)" is null')
            part_names = [name for name, _ in cat.partition_list(db, tbl)]
        pkeys = [k.name for k in table.partitionKeys or []]
        extractors = [_value_extractor(k.name if k is not None else None, pkeys)
                      for k in request.partitionKeys]
        distinct = request.applyDistinct is None or request.applyDistinct
        rows = []
        for name in part_names:
            row = [extract(name) for extract, _ in extractors]
            if any(v is None for v in row):
                raise errors.MetaError(
                    "Error retrieving partition values: javax.jdo.JDOException: Exception "
                    "thrown when executing query : SELECT " + ("DISTINCT " if distinct else "")
                    + ",".join(sql for _, sql in extractors) + _SQL_FROM.replace(
                        "?\n", f"? FETCH NEXT {request.maxParts} ROWS ONLY \n"
                        if request.maxParts is not None and request.maxParts > 0 else "?\n", 1))
            rows.append(row)
        if distinct:
            rows = [list(r) for r in sorted(set(tuple(r) for r in rows))]
        if request.maxParts is not None and request.maxParts > 0:
            rows = rows[:request.maxParts]
        return self.t.PartitionValuesResponse(
            partitionValues=[self.t.PartitionValuesRow(row=r) for r in rows])

    def _partition_values_by_filter(self, ctx, db, tbl, request):
        ascending = request.ascending is None or request.ascending
        max_parts = -1 if request.maxParts is None else request.maxParts
        with self.reading(ctx) as cat:
            table = cat.table(db, tbl)
        if table is None:
            return self.t.PartitionValuesResponse(partitionValues=[])
        key_types = {k.name: k.type for k in table.partitionKeys or []}
        key_list = list(key_types.items())
        try:
            expr = filters.parse_filter(request.filter)
            try:  # HMS first asks JDO for the names, which takes string keys only
                for leaf in filters.leaves(expr.root):
                    filters.jdo_check(leaf, key_list)
            except filters.FilterError:
                # then all partitions by the filter (direct SQL), limited to a Java short
                short = (max_parts + 0x8000) % 0x10000 - 0x8000
                items = self._filtered(ctx, db, tbl, request.filter)
                part_names = [n for n, _ in limit(items, short)]
                if not ascending:
                    part_names.sort(reverse=True)
            else:
                pred = filters.build_predicate(expr.root, lambda leaf: filters.jdo_leaf(leaf, key_list))
                names_ = list(key_types)
                _, items = self._listing(ctx, db, tbl)
                part_names = [n for n, d in items
                              if pred(dict(zip(names_, self._stored_values(n, d))))]
                if not ascending:
                    part_names.reverse()
                part_names = limit(part_names, max_parts)
        except (filters.FilterError, errors.HMSError) as exc:
            raise errors.MetaError(
                f"Error retrieving partition values: MetaException(message:{exc.message})") from None
        rows = [names.part_name_to_vals(n) for n in part_names]
        return self.t.PartitionValuesResponse(
            partitionValues=[self.t.PartitionValuesRow(row=r) for r in rows])

    # --- alter / rename -----------------------------------------------------------------
    def alter_partition(self, ctx, db_name, tbl_name, new_part):
        return self._alter_partitions(ctx, db_name, tbl_name, [new_part], None)

    def alter_partition_with_environment_context(self, ctx, db_name, tbl_name, new_part,
                                                 environment_context):
        return self._alter_partitions(ctx, db_name, tbl_name, [new_part], environment_context)

    def alter_partitions(self, ctx, db_name, tbl_name, new_parts):
        return self._alter_partitions(ctx, db_name, tbl_name, new_parts, None, bulk=True)

    def alter_partitions_with_environment_context(self, ctx, db_name, tbl_name, new_parts,
                                                  environment_context):
        return self._alter_partitions(ctx, db_name, tbl_name, new_parts, environment_context,
                                      bulk=True)

    def _alter_partitions(self, ctx, db_name, tbl_name, new_parts, env_context, bulk=False):
        db, tbl = lower(db_name), lower(tbl_name)
        props = (getattr(env_context, "properties", None) or {})
        with self.writing(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise errors.InvalidOperation(f"alter is not possible: table {db}.{tbl} doesn't exist")
            for new_part in new_parts or []:
                name = part_name(table, new_part.values)
                key = keys.part_key(db, tbl, name)
                old_data = cat.raw(key)
                if old_data is None:
                    raise errors.InvalidOperation(
                        "Alter partition operation failed: NoSuchObjectException(message:"
                        f"partition values={_java_list(new_part.values)})" if bulk
                        else "alter is not possible")
                if dialect.hive4():  # its ObjectStore.alterPartitions
                    _check_same_table(new_part, db, tbl, f"Invalid DB name : {new_part.dbName}",
                                      f"Invalid table name : {db}")  # (sic: the database)
                old = codec.decode(self.t.Partition, old_data)
                part = copy.copy(new_part)
                part.dbName, part.tableName = db, tbl
                part.sd = normalize_sd(new_part.sd, self.t)
                part.parameters = dict(new_part.parameters or {})
                # HMS stores the times the client sent (ObjectStore.alterPartitionNoTxn): a
                # client that rebuilds partitions from its own model (Trino) sends 0
                part.createTime = new_part.createTime or 0
                part.lastAccessTime = new_part.lastAccessTime or 0
                part.privileges = None
                if self.env.stats_properties:  # what we served is not written back
                    served_props.strip_served(self.env, cat, table, old, part)
                if props.get("DO_NOT_UPDATE_STATS", "").lower() != "true" and not is_view(table):
                    update_stats_fast(part.parameters, part.sd.location, False, env_context,
                                      force=_needs_stats(old.parameters, part.parameters, props))
                if not part.parameters.get(DDL_TIME) or part.parameters.get(DDL_TIME) == "0":
                    part.parameters[DDL_TIME] = str(now())
                cat.put(key, part)

    def rename_partition(self, ctx, db_name, tbl_name, part_vals, new_part):
        if not part_vals:
            return self._alter_partitions(ctx, db_name, tbl_name, [new_part], None)
        db, tbl = lower(db_name), lower(tbl_name)
        move = None
        with self.writing(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise errors.InvalidOperation(
                    "Unable to rename partition because table or database do not exist")
            old_name = part_name(table, part_vals)
            old_data = cat.raw(keys.part_key(db, tbl, old_name))
            if old_data is None:
                raise errors.InvalidOperation(
                    "Unable to rename partition because old partition does not exist")
            new_name = part_name(table, new_part.values)
            if cat.raw(keys.part_key(db, tbl, new_name)) is not None:
                raise errors.InvalidOperation(
                    f"Partition already exists:{db}.{tbl}.{_java_list(new_part.values)}")
            hive4, hive3 = dialect.hive4(), dialect.since(dialect.HIVE31)
            if hive4:  # its ObjectStore.alterPartition fails on another table
                failed = "The transaction for alter partition did not commit successfully."
                _check_same_table(new_part, db, tbl, failed, failed)
            old = codec.decode(self.t.Partition, old_data)
            part = copy.copy(new_part)
            part.dbName, part.tableName = db, tbl
            part.sd = normalize_sd(new_part.sd or old.sd, self.t)
            part.parameters = dict(new_part.parameters or {})
            if hive4:  # the 4.x stores the times the client sent (2.3 keeps the old ones)
                part.createTime = new_part.createTime or 0
                part.lastAccessTime = new_part.lastAccessTime or 0
            else:
                part.createTime = old.createTime
                part.lastAccessTime = old.lastAccessTime or 0
            part.privileges = None
            # Hive 4 moves the data of a table it translated to external as a managed one's
            moves_data = not is_external(table) or (hive4 and is_translated(table))
            if not moves_data:
                part.sd.location = old.sd.location
            elif table.sd and table.sd.location:
                dest = warehouse.join(table.sd.location, new_name)
                if old.sd.location != dest:
                    move = (old.sd.location, dest)
                part.sd.location = dest
            if _require_cal_stats(old.parameters, part.parameters) and (hive3 or moves_data):
                # Hive 4 counts the files once they are in place, HMS 2.3 and 3.1 before moving
                # them (a new directory reads as empty), 2.3 only those of a managed table:
                # each as its own metastore does
                update_stats_fast(part.parameters, old.sd.location if hive4 else
                                  part.sd.location, False, None, force=True)
            if not part.parameters.get(DDL_TIME):
                part.parameters[DDL_TIME] = str(now())
            old_stats = keys.part_colstats_prefix(db, tbl, old_name)
            # Hive 3.1 and 4 carry the partition's column statistics over (and mark them
            # accurate on the renamed partition, as writing them does); HMS 2.3 drops them as
            # no longer valid
            carried = []
            for col, value in list(cat.view.scan_prefix(old_stats)) if hive3 else ():
                stats = codec.decode(self.t.ColumnStatistics, value)
                stats.statsDesc.partName = new_name
                cat.put(keys.part_colstats_prefix(db, tbl, new_name) + col[len(old_stats):], stats)
                carried.extend(obj.colName for obj in stats.statsObj or [])
            cat.delete_prefix(old_stats)
            if carried:
                mark_columns_accurate(part.parameters, carried)
            cat.delete(keys.part_key(db, tbl, old_name))
            cat.put(keys.part_key(db, tbl, new_name), part)
            pointer = cat.raw(layout.pointer_key(db, tbl, old_name))
            if pointer is not None:  # computed statistics describe the same data: they follow
                cat.delete(layout.pointer_key(db, tbl, old_name))
                cat.view.put(layout.pointer_key(db, tbl, new_name), pointer)
            privileges.move_partition_privileges(  # grants follow the renamed partition
                cat, db, tbl, old_name, new_name,
                                                 part.values)
        if move and warehouse.exists(move[0]):
            warehouse.rename(*move)

    # --- drop ---------------------------------------------------------------------------
    def drop_partition(self, ctx, db_name, tbl_name, part_vals, deleteData):
        return self.drop_partition_with_environment_context(
            ctx, db_name, tbl_name, part_vals, deleteData, None)

    def drop_partition_with_environment_context(self, ctx, db_name, tbl_name, part_vals,
                                                deleteData, environment_context):
        db, tbl = lower(db_name), lower(tbl_name)
        hive4 = dialect.hive4()
        if not part_vals and (hive4 or part_vals is None):
            # each generation's words for no values (an empty list of 2.3 and 3.1 fails below)
            raise errors.MetaError(
                "Partition name is invalid. null" if hive4 else
                "The partition values cannot be null." if dialect.since(dialect.HIVE31) else
                'java.lang.NullPointerException: Cannot invoke "java.util.List.size()" because '
                '"vals" is null')
        with self.writing(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:  # HMS looks the partition up first
                raise errors.NoSuchObject(
                    f"Unable to get partition because {keys.full_name(db)}.{tbl} does not "
                    "exist" if hive4 else f"partition values={_java_list(part_vals)}")
            name = part_name(table, part_vals)
            dropped = self._drop(cat, table, [name])
            if not dropped:
                raise errors.NoSuchObject(f"partition values={_java_list(part_vals)}")
        self.env.cascades.run("partitions_dropped", self.env, table, dropped)
        self._delete_data(table, dropped, deleteData)
        return True

    def drop_partition_by_name(self, ctx, db_name, tbl_name, part_name_, deleteData):
        vals = self._vals_from_name(ctx, db_name, tbl_name, part_name_)
        return self.drop_partition(ctx, db_name, tbl_name, vals, deleteData)

    def drop_partition_by_name_with_environment_context(self, ctx, db_name, tbl_name, part_name_,
                                                        deleteData, environment_context):
        return self.drop_partition_by_name(ctx, db_name, tbl_name, part_name_, deleteData)

    def drop_partitions_req(self, ctx, req):
        db, tbl = lower(req.dbName), lower(req.tblName)
        spec = req.parts
        if spec is None or (spec.names is None and spec.exprs is None):
            raise errors.MetaError("Partition spec is not set")
        if spec.names is None:
            raise errors.MetaError(
                "Dropping partitions by serialized expression is not supported by this "
                "metastore; drop them by name")
        with self.writing(ctx) as cat:
            table = self.require_table(cat, db, tbl)
            wanted = [self._canonical_name(table, n) for n in spec.names]
            dropped = self._drop(cat, table, [n for n in wanted if n is not None])
            if_exists = True if req.ifExists is None else req.ifExists
            if len(dropped) < len(spec.names) and not if_exists:
                # HMS's AcidEventListener cleans the partitions found all the same
                self.env.cascades.run("partitions_dropped", self.env, table, dropped)
                raise errors.NoSuchObject("Some partitions to drop are missing")
        self.env.cascades.run("partitions_dropped", self.env, table, dropped)
        self._delete_data(table, dropped, req.deleteData)
        result = self.t.DropPartitionsResult()
        if req.needResult is None or req.needResult:
            result.partitions = [Raw(d) for d in dropped]
        return result

    def _drop(self, cat, table, part_names):
        """Delete partitions and their column statistics; returns the bytes of those found."""
        db, tbl = table.dbName, table.tableName
        dropped = []
        for name in part_names:
            key = keys.part_key(db, tbl, name)
            data = cat.raw(key)
            if data is None:
                continue
            dropped.append(data)
            cat.delete(key)
            cat.delete_prefix(keys.part_colstats_prefix(db, tbl, name))
            cat.delete(layout.pointer_key(db, tbl, name))  # computed statistics (stats/)
            privileges.drop_partition_privileges(cat, db, tbl, name)
        return dropped

    def _delete_data(self, table, dropped, delete_data):
        if not delete_data or is_view(table) or (is_external(table) and
                                                  not purges_external_data(table)):
            return
        levels = len(table.partitionKeys or []) - 1
        for data in dropped:
            part = codec.decode(self.t.Partition, data)
            params = part.parameters or {}
            if str(params.get("is_archived", "")).lower() == "true":
                # HMS deletes an archived partition's original directory, not its archive's
                warehouse.delete(params.get("original_location"))
                continue
            if part.sd and part.sd.location:
                warehouse.delete(part.sd.location)
                warehouse.delete_empty_parents(part.sd.location, levels)

    # --- names --------------------------------------------------------------------------
    def partition_name_to_vals(self, ctx, part_name_):
        return names.part_name_to_vals(part_name_)

    def partition_name_to_spec(self, ctx, part_name_):
        return names.part_name_to_spec(part_name_)


def _leading_equality(node, key: str):
    """The string a filter requires the first partition key to equal (an ``=`` leaf on it,
    alone or ANDed with anything), or None."""
    if isinstance(node, filters.Leaf):
        if node.op == "=" and node.key.lower() == key and isinstance(node.value, str):
            return node.value
        return None
    if isinstance(node, filters.Node) and node.op == "AND":
        found = _leading_equality(node.lhs, key)
        return found if found is not None else _leading_equality(node.rhs, key)
    return None


def _narrow_to_leading_value(items, root, partition_keys):
    """A superset of the partitions a filter can select, found by bisection when it pins
    the first (string) key: names are sorted and start with ``key=<escaped value>``. HMS
    compares strings with SQL's blank padding, so every value ``v`` followed by spaces is
    kept; the predicate decides exactly."""
    if not partition_keys or partition_keys[0].type.lower() != "string":
        return items
    first = partition_keys[0].name
    value = _leading_equality(root, first)
    if value is None or not value.rstrip(" "):
        return items
    prefix = f"{first}={names.escape_path_name(value.rstrip(' '))}"
    lo = bisect.bisect_left(items, prefix, key=lambda item: item[0])
    hi = bisect.bisect_left(items, prefix_end(prefix), key=lambda item: item[0])
    return items[lo:hi]


def _weigh_items(items) -> int:
    """Roughly the bytes a cached partition listing holds (names, values, Python objects)."""
    return sum(200 + len(item[0]) + len(item[1]) for item in items)


def _require_cal_stats(old_params, new_params) -> bool:
    """HMS's ``requireCalStats`` for a partition renamed (no environment context): the new
    partition lacks a quick statistic, or has other values than the old one."""
    old_params, new_params = old_params or {}, new_params or {}
    keys_ = fast_stats()
    if not all(k in new_params for k in keys_):
        return True
    return any(old_params.get(k) != new_params.get(k) for k in keys_)


def _needs_stats(old_params, params, env_props) -> bool:
    """HMS's ``requireCalStats`` for an altered partition: the engine says it computed them,
    a quick statistic is missing, or they are not the old partition's."""
    if env_props.get("STATS_GENERATED") in ("TASK", "USER"):
        return True
    return _require_cal_stats(old_params, params)


NPE_NO_SD = ('java.lang.NullPointerException: Cannot invoke "org.apache.hadoop.hive.metastore.'
             'api.StorageDescriptor.setLocation(String)" because the return value of '
             '"org.apache.hadoop.hive.metastore.api.Partition.getSd()" is null')


def path_error(location: str | None) -> str | None:
    """What Hadoop's ``new Path(location)`` fails with (as the 4.x's MetaException words it)
    for a location whose path is relative: ``x:y/z`` (a scheme and a relative path), or a
    path without a scheme that is not absolute (which the 4.x qualifies as ``file:./path``
    first); None for a location it takes."""
    if not location:
        return None
    colon, slash = location.find(":"), location.find("/")
    if colon != -1 and (slash == -1 or colon < slash):
        rest = location[colon + 1:]
        if not rest or rest.startswith("/"):
            return None
        shown = location
    elif location.startswith("/"):
        return None
    else:
        shown = "file:./" + location
    return ("java.lang.IllegalArgumentException: java.net.URISyntaxException: "
            f"Relative path in absolute URI: {shown}")


def check_added_4x(table, parts, same_names=False) -> None:
    """The stock 4.x's checks of partitions to add, after its validatePartition: its
    createPartitionFolders (a view's partition has no location, another's location must be
    a Hadoop path), then its ObjectStore (``same_names``: add_partitions_req's partitions
    name the table as the first one does, case included; a serde; named columns)."""
    view = is_view(table)
    for part in parts:
        if view:
            if part.sd is not None and part.sd.location:
                raise errors.MetaError(
                    "java.io.IOException: Cannot specify location for a view partition")
        elif part.sd is None:
            raise errors.MetaError(NPE_NO_SD)
        else:
            error = path_error(part.sd.location)
            if error:
                raise errors.MetaError(error)
    first = parts[0] if parts else None
    for part in parts:
        if same_names and (part.dbName != first.dbName or part.tableName != first.tableName):
            shown = copy.copy(part)  # as its createPartitionFolders has made it
            shown.sd = copy.copy(part.sd)
            if shown.sd is not None and not view:
                shown.sd.location = warehouse.qualify(part.sd.location) if part.sd.location \
                    else warehouse.join(table.sd.location, part_name(table, part.values))
            shown.createTime = now()
            shown.parameters = {DDL_TIME: str(shown.createTime), **(part.parameters or {})}
            shown.catName = shown.catName or DEFAULT_CATALOG
            text = _describe(shown)  # (2.3's fields and catName: the 4.x prints its writeId)
            text = f"{text[:-1]}, writeId:{-1 if part.writeId is None else part.writeId})"
            raise errors.MetaError(f"Partition does not belong to target table "
                                   f"{table.dbName}.{table.tableName}: {text}")
        sd = part.sd
        if sd is None:
            continue
        if sd.serdeInfo is None:
            raise errors.MetaError("Invalid SerDeInfo object")
        if any(col.name is None for col in sd.cols or []):
            raise errors.MetaError(
                'java.lang.NullPointerException: Cannot invoke "String.toLowerCase()" because '
                'the return value of "org.apache.hadoop.hive.metastore.api.FieldSchema.'
                'getName()" is null')


def _check_same_table(part, db: str, tbl: str, other_db: str, other_table: str) -> None:
    """A partition altered by a 4.x client names the table of the call (in any case)."""
    for field, expected, message in (("DbName", db, other_db), ("TableName", tbl, other_table)):
        value = getattr(part, field[0].lower() + field[1:])
        if value is None:
            raise errors.MetaError(
                'java.lang.NullPointerException: Cannot invoke "String.equals(Object)" because '
                'the return value of "org.apache.hadoop.hive.metastore.api.Partition.'
                f'get{field}()" is null')
        if lower(value) != expected:
            raise errors.MetaError(message)


def check_names(db_name, tbl_name, wrapped=False) -> None:
    """The stock 4.x's FilterUtils.checkDbAndTableFilters, which its partition reads call
    first: a null name fails as a NullPointerException (a MetaException with its text), a
    blank one as NoSuchObjectException (``wrapped``: in a MetaException's text)."""
    for what, value in (("dbName", db_name), ("tblName", tbl_name)):
        if value is None:
            raise errors.MetaError(f"java.lang.NullPointerException: {what} is null")
        if not value.strip():
            message = f"{what} is not valid"
            if wrapped:
                raise errors.MetaError(f"NoSuchObjectException(message:{message})")
            raise errors.NoSuchObject(message)


def _java_str(value) -> str:
    return "null" if value is None else str(value)


def _java_list(values) -> str:
    """A list as Java's ``List.toString`` prints it, for HMS-worded messages."""
    return "[" + ", ".join("null" if v is None else str(v) for v in values or []) + "]"


def _describe(part) -> str:
    return javafmt.to_string(part)


def _java_find(text: str, sub: str, start: int = 0) -> int:
    return text.find(sub, max(0, start))


def _substr(text: str, begin: int, end: int | None = None) -> str | None:
    """Derby's SUBSTR as JDOQL's substring() becomes: from ``begin`` to the end (never
    fails: nothing past the end), or to ``end`` (None, i.e. fails, for a negative length)."""
    if end is None:
        return text[begin:]
    if end < begin:
        return None
    return text[begin:end]


_SQL_FROM = (' FROM PARTITIONS A0 LEFT OUTER JOIN TBLS B0 ON A0.TBL_ID = B0.TBL_ID LEFT OUTER '
             'JOIN DBS C0 ON B0.DB_ID = C0.DB_ID WHERE C0."NAME" = ? AND B0.TBL_NAME = ?\n'
             'NestedThrowables:\njava.sql.SQLDataException: The second or third argument of the '
             'SUBSTR function is out of range.')


def _substr_sql(needle: str, skip: int, end: str | None) -> str:
    """The SQL DataNucleus makes of ``substring(indexOf(needle) + skip[, end])`` on Derby."""
    begin = f"((LOCATE('{needle.replace(chr(39), chr(39) * 2)}',A0.PART_NAME) - 1) + {skip})"
    if end is None:
        return f"SUBSTR(A0.PART_NAME,({begin} + 1))"
    return f"SUBSTR(A0.PART_NAME,({begin} + 1),({end} - ({begin})))"


def _value_extractor(key: str | None, pkeys: list[str]):
    """ObjectStore.extractPartitionKey: (the function cutting ``key``'s value out of an
    escaped partition name as HMS 2.3's JDOQL substring does on Derby -- None where Derby's
    SUBSTR fails --, the SQL of that column for the error message)."""
    import re as _re

    if key is None:
        raise errors.MetaError('Error retrieving partition values: java.lang.NullPointer'
                               'Exception: Cannot invoke "String.isEmpty()" because '
                               '"this.pattern" is null')
    if not pkeys:
        raise errors.MetaError("Error retrieving partition values: "
                               "java.lang.IndexOutOfBoundsException: Index 0 out of bounds for "
                               "length 0")
    try:
        pattern = _re.compile(key)
    except _re.error as exc:
        raise errors.MetaError("Error retrieving partition values: "
                               f"java.util.regex.PatternSyntaxException: {exc}") from None
    if '"' in key or "\\" in key:  # breaks (or escapes inside) the JDOQL string literal
        raise errors.MetaError("Error retrieving partition values: javax.jdo.JDOUserException: "
                               f"the partition key {key} cannot be quoted in JDOQL")

    def matches(name):  # String.matches(regex)
        return pattern.fullmatch(name) is not None

    head = key + "="
    part_key = "/" + key + "="
    if len(pkeys) == 1 and matches(pkeys[0]):
        return (lambda n: _substr(n, _java_find(n, head) + len(head)),
                _substr_sql(head, len(head), None))
    if matches(pkeys[0]):
        return (lambda n: _substr(n, _java_find(n, head) + len(head), _java_find(n, "/")),
                _substr_sql(head, len(head), "(LOCATE('/',A0.PART_NAME) - 1)"))
    if matches(pkeys[-1]):
        return (lambda n: _substr(n, _java_find(n, part_key) + len(part_key)),
                _substr_sql(part_key, len(part_key), None))

    def intermediate(n):
        at = _java_find(n, part_key)
        return _substr(n, at + len(part_key), _java_find(n, "/", at + 1))
    quoted = part_key.replace("'", "''")
    return intermediate, _substr_sql(
        part_key, len(part_key),
        f"(LOCATE('/',A0.PART_NAME,(((LOCATE('{quoted}',A0.PART_NAME) - 1) + 1) + 1)) - 1)")


def _check_values_request(request) -> None:
    """PartitionValuesRequest.validate(), run as HMS reads the request: PROTOCOL_ERROR."""
    from thrift.Thrift import TApplicationException

    def text(value):
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return "[" + ", ".join(map(text, value)) + "]"
        if hasattr(value, "thrift_spec"):  # a FieldSchema
            return (f"FieldSchema(name:{text(value.name)}, type:{text(value.type)}, "
                    f"comment:{text(value.comment)})")
        return str(value)

    for name in ("dbName", "tblName", "partitionKeys"):
        if getattr(request, name) is None:
            parts = [f"{f}:{text(getattr(request, f))}" for f in ("dbName", "tblName", "partitionKeys")]
            parts += [f"{f}:{text(getattr(request, f))}"
                      for f in ("applyDistinct", "filter", "partitionOrder", "ascending", "maxParts")
                      if getattr(request, f) is not None]
            raise TApplicationException(
                TApplicationException.PROTOCOL_ERROR,
                f"Required field '{name}' is unset! Struct:PartitionValuesRequest({', '.join(parts)})")
