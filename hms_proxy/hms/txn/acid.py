"""HMS 2.3's TransactionalValidationListener: the checks every create_table* and alter_table*
makes on the ``transactional`` and ``transactional_properties`` table parameters.

HMS runs it as its first pre-event listener. On create it comes after the name and column
checks and before the database / table-exists checks (and before anything the backing database
refuses: name lengths, duplicate columns); on alter after the lookup of the table being altered
and before the alter handler's own checks (new name, columns, partition keys, rename).

Create: the key is matched case-insensitively (Java's ``equalsIgnoreCase``) and every spelling
removed; 'false' (any case) just goes; 'true' (any case) needs a bucketed table (bucketCols) with
ACID input and output formats and a type other than EXTERNAL_TABLE (the type as sent: the
EXTERNAL parameter does not count), and is stored as ``transactional=true`` with its
``transactional_properties`` lower-cased and checked ('default' or 'legacy'); any other value is
refused. Alter: the key is renamed to ``transactional`` keeping its value; 'true' gets the same
bucketing / format / external checks; any other value (or none) must equal the table's current
one, ignoring case; a ``transactional_properties`` may be given (and is checked and lower-cased)
only when the table was not transactional, and must otherwise equal (ignoring case) the one the
table has.

When several spellings of a key are sent, the listener takes the value of the last one in the
iteration order of Java's HashSet/HashMap; ``_java_order`` reproduces that order.

HMS tells ACID formats by loading the classes (``Class.forName``) and asking whether they
implement ``AcidInputFormat`` / ``AcidOutputFormat``. Here: the formats that do on the stock
HMS's class path (ORC's and the two interfaces) and a list of the other input/output format
classes found there; any other class name counts as missing ("Invalid input/output format"),
where HMS would find any class of its class path (e.g. ``java.lang.String``) and say the table
is not bucketed / not ACID instead.
"""
from __future__ import annotations

from hms_proxy.hms import javafmt
from hms_proxy.thrift import dialect, errors

TRANSACTIONAL = "transactional"
TRANSACTIONAL_PROPERTIES = "transactional_properties"
DDL_TIME = "transient_lastDdlTime"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
PROPERTY_VALUES = ("default", "legacy")

NOT_ACID = "The table must be bucketed and stored using an ACID compliant format (such as ORC)"
NOT_ACID_3 = "The table must be stored using an ACID compliant format (such as ORC): "
INSERT_ONLY = "insert_only"
PROPERTY_VALUES_3 = ("default", INSERT_ONLY)
BAD_FORMAT = "Invalid input/output format for table"
BAD_VALUE = "'transactional' property of TBLPROPERTIES may only have value 'true'"
CANNOT_UNSET = "TBLPROPERTIES with 'transactional'='true' cannot be unset"
PROPERTIES_FIXED = ("TBLPROPERTIES with 'transactional_properties' cannot be altered after the "
                    "table is created")
# What HMS answers when a field it dereferences is null (Java 17's helpful NullPointerException
# message, passed on as a MetaException).
NPE_TYPE = ('java.lang.NullPointerException: Cannot invoke "String.equals(Object)" because the '
            'return value of "org.apache.hadoop.hive.metastore.api.Table.getTableType()" is null')
NPE_FORMAT = "java.lang.NullPointerException"
NPE_SD = ('java.lang.NullPointerException: Cannot invoke "org.apache.hadoop.hive.metastore.api.'
          'StorageDescriptor.getBucketColsSize()" because "sd" is null')

ACID_INPUT_FORMATS = frozenset({"org.apache.hadoop.hive.ql.io.AcidInputFormat",
                                "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"})
ACID_OUTPUT_FORMATS = frozenset({"org.apache.hadoop.hive.ql.io.AcidOutputFormat",
                                 "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"})
# The classes named *InputFormat / *OutputFormat in the stock HMS 2.3.10's class path
# (PySpark's jars), by package.
_FORMAT_CLASSES = (
    ("org.apache.avro.mapred", """
        AvroAsTextInputFormat AvroInputFormat AvroMultipleOutputs$InternalFileOutputFormat
        AvroOutputFormat AvroTextOutputFormat AvroUtf8InputFormat DelegatingInputFormat
        SequenceFileInputFormat
    """),
    ("org.apache.avro.mapred.tether", """
        TetherInputFormat TetherOutputFormat
    """),
    ("org.apache.avro.mapreduce", """
        AvroKeyInputFormat AvroKeyOutputFormat AvroKeyValueInputFormat AvroKeyValueOutputFormat
        AvroSequenceFileInputFormat AvroSequenceFileOutputFormat
        CombineAvroKeyValueFileInputFormat
    """),
    ("org.apache.hadoop.hive.llap", """
        LlapOutputFormat
    """),
    ("org.apache.hadoop.hive.ql.exec.persistence", """
        PTFRowContainer$PTFHiveSequenceFileOutputFormat PTFRowContainer$PTFSequenceFileInputFormat
    """),
    ("org.apache.hadoop.hive.ql.index", """
        HiveIndexedInputFormat
    """),
    ("org.apache.hadoop.hive.ql.index.compact", """
        HiveCompactIndexInputFormat
    """),
    ("org.apache.hadoop.hive.ql.io", """
        AcidInputFormat AcidOutputFormat BatchToRowInputFormat BucketizedHiveInputFormat
        CombineHiveInputFormat CombineHiveInputFormat$CombinePathInputFormat
        ContentSummaryInputFormat DelegateSymlinkTextInputFormat FlatFileInputFormat
        HiveBinaryOutputFormat HiveIgnoreKeyTextOutputFormat HiveInputFormat
        HiveNullValueSequenceFileOutputFormat HiveOutputFormat HivePassThroughOutputFormat
        HiveSequenceFileOutputFormat IgnoreKeyTextOutputFormat NullRowsInputFormat
        OneNullRowInputFormat RCFileInputFormat RCFileOutputFormat ReworkMapredInputFormat
        StreamingOutputFormat SymbolicInputFormat SymlinkTextInputFormat ZeroRowsInputFormat
    """),
    ("org.apache.hadoop.hive.ql.io.avro", """
        AvroContainerInputFormat AvroContainerOutputFormat
    """),
    ("org.apache.hadoop.hive.ql.io.merge", """
        MergeFileInputFormat MergeFileOutputFormat
    """),
    ("org.apache.hadoop.hive.ql.io.orc", """
        OrcFileStripeMergeInputFormat OrcInputFormat OrcNewInputFormat OrcNewOutputFormat
        OrcOutputFormat VectorizedOrcInputFormat
    """),
    ("org.apache.hadoop.hive.ql.io.parquet", """
        MapredParquetInputFormat MapredParquetOutputFormat VectorizedParquetInputFormat
    """),
    ("org.apache.hadoop.hive.ql.io.rcfile.merge", """
        RCFileBlockMergeInputFormat
    """),
    ("org.apache.hadoop.hive.ql.txn.compactor", """
        CompactorMR$CompactorInputFormat
    """),
    ("org.apache.hadoop.mapred", """
        FileInputFormat FileOutputFormat FixedLengthInputFormat InputFormat
        KeyValueTextInputFormat MapFileOutputFormat MultiFileInputFormat OutputFormat
        SequenceFileAsBinaryInputFormat SequenceFileAsBinaryOutputFormat
        SequenceFileAsTextInputFormat SequenceFileInputFormat SequenceFileOutputFormat
        TextInputFormat TextOutputFormat
    """),
    ("org.apache.hadoop.mapred.join", """
        ComposableInputFormat CompositeInputFormat
    """),
    ("org.apache.hadoop.mapred.lib", """
        CombineFileInputFormat CombineSequenceFileInputFormat CombineTextInputFormat
        DelegatingInputFormat FilterOutputFormat LazyOutputFormat MultipleOutputFormat
        MultipleOutputs$InternalFileOutputFormat MultipleSequenceFileOutputFormat
        MultipleTextOutputFormat NLineInputFormat NullOutputFormat
    """),
    ("org.apache.hadoop.mapred.lib.db", """
        DBInputFormat DBOutputFormat
    """),
    ("org.apache.hadoop.mapred.pipes", """
        PipesNonJavaInputFormat
    """),
    ("org.apache.hadoop.mapreduce", """
        InputFormat OutputFormat
    """),
    ("org.apache.hadoop.mapreduce.lib.db", """
        DBInputFormat DBOutputFormat DataDrivenDBInputFormat OracleDataDrivenDBInputFormat
    """),
    ("org.apache.hadoop.mapreduce.lib.input", """
        CombineFileInputFormat CombineSequenceFileInputFormat CombineTextInputFormat
        DelegatingInputFormat FileInputFormat FixedLengthInputFormat KeyValueTextInputFormat
        NLineInputFormat SequenceFileAsBinaryInputFormat SequenceFileAsTextInputFormat
        SequenceFileInputFormat TextInputFormat
    """),
    ("org.apache.hadoop.mapreduce.lib.join", """
        ComposableInputFormat CompositeInputFormat
    """),
    ("org.apache.hadoop.mapreduce.lib.output", """
        FileOutputFormat FilterOutputFormat LazyOutputFormat MapFileOutputFormat NullOutputFormat
        SequenceFileAsBinaryOutputFormat SequenceFileOutputFormat TextOutputFormat
    """),
    ("org.apache.hive.beeline", """
        AbstractOutputFormat DeprecatedSeparatedValuesOutputFormat OutputFormat
        SeparatedValuesOutputFormat TableOutputFormat VerticalOutputFormat
        XMLAttributeOutputFormat XMLElementOutputFormat
    """),
    ("org.apache.orc.mapred", """
        OrcInputFormat OrcOutputFormat
    """),
    ("org.apache.orc.mapreduce", """
        OrcInputFormat OrcOutputFormat
    """),
    ("org.apache.parquet.hadoop", """
        ParquetInputFormat ParquetOutputFormat
    """),
    ("org.apache.parquet.hadoop.example", """
        ExampleInputFormat ExampleOutputFormat
    """),
    ("org.apache.parquet.hadoop.mapred", """
        DeprecatedParquetInputFormat DeprecatedParquetOutputFormat
    """),
    ("org.apache.spark.input", """
        FixedLengthBinaryInputFormat StreamFileInputFormat StreamInputFormat
        WholeTextFileInputFormat
    """),
    ("org.apache.spark.sql.avro", """
        SparkAvroKeyOutputFormat
    """),
    ("org.apache.spark.sql.execution.datasources.xml", """
        XmlInputFormat
    """),
)
KNOWN_FORMAT_CLASSES = frozenset(f"{pkg}.{name}" for pkg, names in _FORMAT_CLASSES
                                 for name in names.split())


# --- Java semantics ---------------------------------------------------------------------------
def _table_size_for(n: int) -> int:
    cap = 1
    while cap < n:
        cap <<= 1
    return cap


def _java_order(keys, cap: int) -> list:
    """The iteration order of a java.util.HashMap of capacity ``cap`` filled with ``keys`` in
    this order: by bucket (the spread hash's low bits), then by insertion within a bucket."""
    return sorted(keys, key=lambda k: javafmt.hashmap_bucket(k, cap))


def _hashset_order(map_keys: list, map_cap: int) -> list:
    """``new HashSet<>(map.keySet())`` of a HashMap of capacity ``map_cap``."""
    in_map = _java_order(map_keys, map_cap)
    return _java_order(in_map, _table_size_for(max(int(len(in_map) / 0.75) + 1, 16)))


def _char_upper(c: str) -> str:
    u = c.upper()
    return u if len(u) == 1 else c


def _char_lower(c: str) -> str:
    u = c.lower()  # only U+0130 lower-cases to two characters: its simple mapping is the first
    return u[0] if u else c


def equals_ignore_case(a: str | None, b: str | None) -> bool:
    """String.equalsIgnoreCase: same length, each pair of characters equal after upper-casing
    or after lower-casing the upper-cased ones."""
    if a is None or b is None or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        ux, uy = _char_upper(x), _char_upper(y)
        if ux != uy and _char_lower(ux) != _char_lower(uy):
            return False
    return True


def _jstr(value) -> str:
    return "null" if value is None else str(value)


# --- the checks -------------------------------------------------------------------------------
def _conforms_to_acid(tbl) -> bool:
    sd = tbl.sd
    if sd is None:
        raise errors.MetaError(NPE_SD)
    if not sd.bucketCols:
        return False
    if sd.inputFormat is None or sd.outputFormat is None:
        raise errors.MetaError(NPE_FORMAT)  # Class.forName(null)
    for name in (sd.inputFormat, sd.outputFormat):
        if name not in KNOWN_FORMAT_CLASSES:
            raise errors.MetaError(BAD_FORMAT)
    return sd.inputFormat in ACID_INPUT_FORMATS and sd.outputFormat in ACID_OUTPUT_FORMATS


def _conforms_to_acid_3(tbl) -> bool:
    """Hive 3+'s check: ACID formats, bucketed or not; an unknown class is not ACID (HMS
    logs that it could not verify it)."""
    sd = tbl.sd
    if sd is None:
        raise errors.MetaError(NPE_SD)
    return sd.inputFormat in ACID_INPUT_FORMATS and sd.outputFormat in ACID_OUTPUT_FORMATS


def _properties_of(params: dict) -> str | None:
    for key, value in params.items():
        if equals_ignore_case(TRANSACTIONAL_PROPERTIES, key):
            return value
    return None


def _check_acid_table(tbl) -> None:
    if dialect.since(dialect.HIVE31):
        # Hive 3+: an insert-only table may have any format; a full ACID one needs ACID
        # formats but no bucketing. (The stock 3.1.3 and 4.0.1 standalone metastores know no
        # ACID format, hive-exec not being on their class path, and so refuse every full ACID
        # table; a Hive installation's metastore accepts ORC, as this does.)
        props = _properties_of(tbl.parameters or {})
        if not _conforms_to_acid_3(tbl) and not equals_ignore_case(INSERT_ONLY, props):
            raise errors.MetaError(NOT_ACID_3 + f"{_jstr(tbl.dbName)}.{_jstr(tbl.tableName)}")
    elif not _conforms_to_acid(tbl):
        raise errors.MetaError(NOT_ACID)
    if tbl.tableType is None:
        raise errors.MetaError(NPE_TYPE)
    if tbl.tableType == EXTERNAL_TABLE:
        raise errors.MetaError(f"{_jstr(tbl.dbName)}.{_jstr(tbl.tableName)} cannot be declared "
                               "transactional because it's an external table")


def _initialize_properties(params: dict, map_order: list) -> None:
    """The first spelling of transactional_properties (in HashMap order) is checked and stored
    lower-cased under its own name."""
    for key in map_order:
        if key in params and equals_ignore_case(TRANSACTIONAL_PROPERTIES, key):
            value = params.pop(key).lower()
            if value not in (PROPERTY_VALUES_3 if dialect.since(dialect.HIVE31)
                             else PROPERTY_VALUES):
                raise errors.MetaError("Invalid transactional properties specified for the table "
                                       f"with the error unknown value {value} for "
                                       "transactional_properties")
            params[TRANSACTIONAL_PROPERTIES] = value
            return


def check_create(tbl) -> None:
    """The listener on create_table*: may refuse ``tbl``; normalises ``tbl.parameters`` in place."""
    params = tbl.parameters
    if not params:
        return
    if not isinstance(params, dict):
        return
    keys = list(params)
    map_cap = _table_size_for(2 * len(keys))
    found, value = False, None
    for key in _hashset_order(keys, map_cap):
        if equals_ignore_case(TRANSACTIONAL, key):
            found, value = True, params.pop(key)
    if not found or equals_ignore_case("false", value):
        return
    if not equals_ignore_case("true", value):
        raise errors.MetaError(BAD_VALUE)
    _check_acid_table(tbl)
    params[TRANSACTIONAL] = "true"
    _initialize_properties(params, _java_order(list(params), map_cap))


def check_alter(old, new_tbl) -> None:
    """The listener on alter_table*: ``old`` is the stored table, ``new_tbl`` the request (its
    parameters normalised in place). HMS has added transient_lastDdlTime to the parameters
    when missing before the listener runs, so they are never empty here."""
    params = new_tbl.parameters if isinstance(new_tbl.parameters, dict) else {}
    keys = list(params)
    if not keys:
        map_cap = 16  # a new HashMap for the DDL time
    else:
        map_cap = _table_size_for(2 * len(keys))
        if DDL_TIME not in params and len(keys) + 1 > int(map_cap * 0.75):
            map_cap *= 2
    if DDL_TIME not in params:
        keys.append(DDL_TIME)
    found, value = False, None
    props_found, props_value = False, None
    for key in _hashset_order(keys, map_cap):
        if equals_ignore_case(TRANSACTIONAL, key) and key in params:
            found, value = True, params.pop(key)
        if equals_ignore_case(TRANSACTIONAL_PROPERTIES, key) and key in params:
            props_found, props_value = True, params[key]
    if found:
        params[TRANSACTIONAL] = value
    valid = False
    if equals_ignore_case("true", value):
        _check_acid_table(new_tbl)
        valid = True
    old_params = old.parameters or {}
    old_value = old_props = None
    for key in _java_order(list(old_params), _table_size_for(max(2 * len(old_params), 16))):
        if equals_ignore_case(TRANSACTIONAL, key):
            old_value = old_params[key]
        if equals_ignore_case(TRANSACTIONAL_PROPERTIES, key):
            old_props = old_params[key]
    if value is None if old_value is None else equals_ignore_case(old_value, value):
        valid = True
    if not valid:
        raise errors.MetaError(CANNOT_UNSET)
    if props_found:
        if old_value is None:
            order = [k for k in _java_order(keys, map_cap) if k != TRANSACTIONAL]
            _initialize_properties(params, order)
        elif old_props is None or not equals_ignore_case(old_props, props_value):
            raise errors.MetaError(PROPERTIES_FIXED)
    new_tbl.parameters = params
