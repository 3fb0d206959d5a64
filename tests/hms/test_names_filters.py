"""Unit tests for hms_proxy.hms.names and hms_proxy.hms.filters.

The expectations below are recorded facts about the stock Hive Metastore 2.3.10
(PySpark 4.3.0's jars, embedded Derby): partition names, partition_name_to_vals/spec,
get_partitions_by_filter / get_num_partitions_by_filter (both always agreed),
get_databases / get_tables patterns were recorded from a running HMS 2.3.10;
PARSE_CASES were recorded by running hive-metastore-2.3.10's own
PartFilterExprUtil.getFilterParser (FilterParser/FilterLexer) on each text; the
escaping set from hive-common-2.3.10's FileUtils.escapePathName over all 65536 chars.
The live comparison with the oracle is the conformance suite's job.

Oracle tables: odb.t1 (ds string, hr int), odb.t2 (v string),
odb.t3 (d date, b bigint, vc varchar(10)), odb.t4 (hr int, with a value "abc").
"""

from __future__ import annotations

import datetime

import pytest

from hms_proxy.hms.filters import FilterError, Leaf, parse_filter, sql_compare
from hms_proxy.hms.names import (
    DEFAULT_PARTITION_NAME,
    ESCAPED_CHARS,
    PartitionNameError,
    compile_name_pattern,
    escape_path_name,
    make_part_name,
    part_name_to_spec,
    part_name_to_vals,
    unescape_path_name,
    validate_column_type,
    validate_name,
    validate_tbl_columns,
)

KEY_TYPES = {
    "t1": {"ds": "string", "hr": "int"},
    "t2": {"v": "string"},
    "t3": {"d": "date", "b": "bigint", "vc": "varchar(10)"},
    "t4": {"hr": "int"},
}

PARTITIONS = {
    't1': [
        (' ', '1'),
        ('#h', '1'),
        ('{x}', '1'),
        ('10', '1'),
        ('2020-01-01', '1'),
        ('2020-01-01', '10'),
        ('2020-01-01', '2'),
        ('2020-01-02', '1'),
        ('50%', '1'),
        ('9', '1'),
        ('A', '1'),
        ('__HIVE_DEFAULT_PARTITION__', '1'),
        ('a b', '1'),
        ('a%c', '1'),
        ('a*', '1'),
        ('a/b', '1'),
        ('a.c', '1'),
        ('a', '1'),
        ('a', '10'),
        ('a', '2'),
        ('a_c', '1'),
        ('ab.', '1'),
        ('ab', '1'),
        ('back\\slash', '1'),
        ('colon:x', '1'),
        ("it's", '1'),
        ('new\nline', '1'),
        ('q"q', '1'),
        ('tab\tx', '1'),
        ('x=y', '1'),
        ('z', '-3'),
        ('z', '007'),
        ('z', '__HIVE_DEFAULT_PARTITION__'),
        ('é', '1'),
    ],
    't2': [
        ('\x01',),
        ('[x]',),
        ('^',),
        ('\x7f',),
        ('50%',),
        ('',),
        ('a b',),
        ('a/b',),
        ('a:b',),
        ('a.c',),
        ('a_c',),
        ('abc',),
        ('x=y',),
        ('~!@$&()+,;',),
        ('é',),
        ('ü€😀',),
    ],
    't3': [
        ('2020-01-01', '5', 'v1'),
        ('2021-06-30', '-7', 'v2'),
    ],
    't4': [
        ('1',),
        ('20',),
        ('abc',),
    ],
}
PARTITION_NAMES = {
    't1': [
        'ds= /hr=1',
        'ds=%23h/hr=1',
        'ds=%7Bx}/hr=1',
        'ds=10/hr=1',
        'ds=2020-01-01/hr=1',
        'ds=2020-01-01/hr=10',
        'ds=2020-01-01/hr=2',
        'ds=2020-01-02/hr=1',
        'ds=50%25/hr=1',
        'ds=9/hr=1',
        'ds=A/hr=1',
        'ds=__HIVE_DEFAULT_PARTITION__/hr=1',
        'ds=a b/hr=1',
        'ds=a%25c/hr=1',
        'ds=a%2A/hr=1',
        'ds=a%2Fb/hr=1',
        'ds=a.c/hr=1',
        'ds=a/hr=1',
        'ds=a/hr=10',
        'ds=a/hr=2',
        'ds=a_c/hr=1',
        'ds=ab./hr=1',
        'ds=ab/hr=1',
        'ds=back%5Cslash/hr=1',
        'ds=colon%3Ax/hr=1',
        'ds=it%27s/hr=1',
        'ds=new%0Aline/hr=1',
        'ds=q%22q/hr=1',
        'ds=tab%09x/hr=1',
        'ds=x%3Dy/hr=1',
        'ds=z/hr=-3',
        'ds=z/hr=007',
        'ds=z/hr=__HIVE_DEFAULT_PARTITION__',
        'ds=é/hr=1',
    ],
    't2': [
        'v=%01',
        'v=%5Bx%5D',
        'v=%5E',
        'v=%7F',
        'v=50%25',
        'v=__HIVE_DEFAULT_PARTITION__',
        'v=a b',
        'v=a%2Fb',
        'v=a%3Ab',
        'v=a.c',
        'v=a_c',
        'v=abc',
        'v=x%3Dy',
        'v=~!@$&()+,;',
        'v=é',
        'v=ü€😀',
    ],
}
FILTER_CASES = [
    ('t1', '', ('ALL_BUT', [])),
    ('t1', "ds='a'", ('ONLY', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', 'ds="a"', ('ONLY', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "DS='a'", ('ONLY', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds='A'", ('ONLY', [('A', '1')])),
    ('t1', "ds<>'a'", ('ALL_BUT', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds!='a'", ('ALL_BUT', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds>'a'", ('ALL_BUT', [(' ', '1'), ('#h', '1'), ('10', '1'), ('2020-01-01', '1'), ('2020-01-01', '10'), ('2020-01-01', '2'), ('2020-01-02', '1'), ('50%', '1'), ('9', '1'), ('A', '1'), ('__HIVE_DEFAULT_PARTITION__', '1'), ('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds>='a'", ('ALL_BUT', [(' ', '1'), ('#h', '1'), ('10', '1'), ('2020-01-01', '1'), ('2020-01-01', '10'), ('2020-01-01', '2'), ('2020-01-02', '1'), ('50%', '1'), ('9', '1'), ('A', '1'), ('__HIVE_DEFAULT_PARTITION__', '1')])),
    ('t1', "ds<'2020-01-02'", ('ONLY', [(' ', '1'), ('#h', '1'), ('10', '1'), ('2020-01-01', '1'), ('2020-01-01', '10'), ('2020-01-01', '2')])),
    ('t1', "'a'<ds", ('ALL_BUT', [(' ', '1'), ('#h', '1'), ('10', '1'), ('2020-01-01', '1'), ('2020-01-01', '10'), ('2020-01-01', '2'), ('2020-01-02', '1'), ('50%', '1'), ('9', '1'), ('A', '1'), ('__HIVE_DEFAULT_PARTITION__', '1'), ('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds='a/b'", ('ONLY', [('a/b', '1')])),
    ('t1', "ds='x=y'", ('ONLY', [('x=y', '1')])),
    ('t1', "ds='50%'", ('ONLY', [('50%', '1')])),
    ('t1', "ds='é'", ('ONLY', [('é', '1')])),
    ('t1', "ds=''", ('ONLY', [(' ', '1')])),
    ('t1', "ds='__HIVE_DEFAULT_PARTITION__'", ('ONLY', [('__HIVE_DEFAULT_PARTITION__', '1')])),
    ('t1', "ds=' '", ('ONLY', [(' ', '1')])),
    ('t1', "ds like 'a'", ('ONLY', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds like 'a.*'", ('ONLY', [('a', '1'), ('a', '10'), ('a', '2'), ('a b', '1'), ('a%c', '1'), ('a*', '1'), ('a.c', '1'), ('a/b', '1'), ('a_c', '1'), ('ab', '1'), ('ab.', '1')])),
    ('t1', "ds like 'a%'", ('ONLY', [])),
    ('t1', "ds like 'a_'", ('ONLY', [])),
    ('t1', "ds like 'a.'", ('ONLY', [('a*', '1'), ('ab', '1')])),
    ('t1', "ds like '.*'", ('ALL_BUT', [])),
    ('t1', "ds like 'A.*'", ('ONLY', [('A', '1')])),
    ('t1', "ds like '(?i)a.*'", ('ONLY', [('A', '1'), ('a', '1'), ('a', '10'), ('a', '2'), ('a b', '1'), ('a%c', '1'), ('a*', '1'), ('a.c', '1'), ('a/b', '1'), ('a_c', '1'), ('ab', '1'), ('ab.', '1')])),
    ('t1', "ds like 'a*'", ('ONLY', [('a*', '1')])),
    ('t1', "ds like '.*c'", ('ONLY', [('a%c', '1'), ('a.c', '1'), ('a_c', '1')])),
    ('t1', "ds like '[ab].*'", ('ONLY', [])),
    ('t1', "ds like 'a|ab'", ('ONLY', [])),
    ('t1', "ds like 'a\\\\.c'", ('ONLY', [])),
    ('t1', "ds like '.*%.*'", ('ONLY', [('50%', '1'), ('a%c', '1')])),
    ('t1', "ds like '.*_.*'", ('ONLY', [('__HIVE_DEFAULT_PARTITION__', '1'), ('a_c', '1')])),
    ('t1', "ds like '2020-01-0[12]'", ('ONLY', [])),
    ('t1', "ds like 'ab?'", ('ONLY', [])),
    ('t1', "ds like '.+'", ('ONLY', [])),
    ('t1', "ds like '.'", ('ONLY', [(' ', '1'), ('9', '1'), ('A', '1'), ('a', '1'), ('a', '10'), ('a', '2'), ('z', '-3'), ('z', '007'), ('z', '__HIVE_DEFAULT_PARTITION__'), ('é', '1')])),
    ('t1', "ds like '^a$'", ('ONLY', [])),
    ('t1', "'a' like ds", ('ERR', 'Value should be on the RHS for LIKE operator : Key <ds>')),
    ('t1', 'hr=1', ('ALL_BUT', [('2020-01-01', '10'), ('2020-01-01', '2'), ('a', '10'), ('a', '2'), ('z', '-3'), ('z', '007'), ('z', '__HIVE_DEFAULT_PARTITION__')])),
    ('t1', 'hr=10', ('ONLY', [('2020-01-01', '10'), ('a', '10')])),
    ('t1', 'hr>2', ('ONLY', [('2020-01-01', '10'), ('a', '10'), ('z', '007')])),
    ('t1', 'hr<=2', ('ALL_BUT', [('2020-01-01', '10'), ('a', '10'), ('z', '007'), ('z', '__HIVE_DEFAULT_PARTITION__')])),
    ('t1', 'hr<>1', ('ONLY', [('2020-01-01', '10'), ('2020-01-01', '2'), ('a', '10'), ('a', '2'), ('z', '-3'), ('z', '007')])),
    ('t1', 'hr=-3', ('ONLY', [('z', '-3')])),
    ('t1', 'hr=7', ('ONLY', [('z', '007')])),
    ('t1', "hr='1'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t1', "hr like '1'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t1', 'ds=1', ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t1', 'ds=10', ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t1', 'ds=2020-01-01', ('ONLY', [('2020-01-01', '1'), ('2020-01-01', '10'), ('2020-01-01', '2')])),
    ('t1', 'ds>2020-01-01', ('ALL_BUT', [(' ', '1'), ('#h', '1'), ('10', '1'), ('2020-01-01', '1'), ('2020-01-01', '10'), ('2020-01-01', '2')])),
    ('t1', 'hr between 2 and 10', ('ONLY', [('2020-01-01', '10'), ('2020-01-01', '2'), ('a', '10'), ('a', '2'), ('z', '007')])),
    ('t1', 'hr not between 2 and 10', ('ALL_BUT', [('2020-01-01', '10'), ('2020-01-01', '2'), ('a', '10'), ('a', '2'), ('z', '007'), ('z', '__HIVE_DEFAULT_PARTITION__')])),
    ('t1', "ds between 'a' and 'ab'", ('ONLY', [('a', '1'), ('a', '10'), ('a', '2'), ('a b', '1'), ('a%c', '1'), ('a*', '1'), ('a.c', '1'), ('a/b', '1'), ('a_c', '1'), ('ab', '1')])),
    ('t1', "(ds) in ('a','ab')", ('ONLY', [('a', '1'), ('a', '10'), ('a', '2'), ('ab', '1')])),
    ('t1', '(hr) in (1,2)', ('ALL_BUT', [('2020-01-01', '10'), ('a', '10'), ('z', '-3'), ('z', '007'), ('z', '__HIVE_DEFAULT_PARTITION__')])),
    ('t1', '(hr) not in (1,2)', ('ONLY', [('2020-01-01', '10'), ('a', '10'), ('z', '-3'), ('z', '007')])),
    ('t1', "(struct(ds,hr)) in (const struct('a',1), const struct('z',7))", ('ONLY', [('a', '1'), ('z', '007')])),
    ('t1', "(ds) not in ('a')", ('ALL_BUT', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds='a' and hr=1", ('ONLY', [('a', '1')])),
    ('t1', "ds='a' or hr=2", ('ONLY', [('2020-01-01', '2'), ('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds='a' and hr=1 or ds='ab'", ('ONLY', [('a', '1'), ('ab', '1')])),
    ('t1', "ds='a' and ds like 'a.*'", ('ONLY', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "DS='a' and ds like 'a.*'", ('ONLY', [])),
    ('t1', "ds='' and ds like '.*'", ('ERR', 'Partition spec is incorrect. {ds=}')),
    ('t1', "ds='x=y' and ds like '.*'", ('ONLY', [('x=y', '1')])),
    ('t1', "foo='a'", ('ERR', 'Specified key <foo> is not a partitioning key for the table')),
    ('t1', "ds='a' and foo=1", ('ERR', 'Specified key <foo> is not a partitioning key for the table')),
    ('t1', "c='x'", ('ERR', 'Specified key <c> is not a partitioning key for the table')),
    ('t1', "ds='a' garbage", ('ONLY', [('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', 'ds=', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ('t1', "ds='a", ('ERR', "Error parsing partition filter; lexer error: line 1:5 mismatched character '<EOF>' expecting '''; exception NoViableAltException(-1@[])")),
    ('t1', 'ds==1', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(9@[])')),
    ('t1', "ds@'a'", ('ERR', "Error parsing partition filter; lexer error: line 1:2 no viable alternative at character '@'; exception NoViableAltException(28@[])")),
    ('t1', ' ', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ('t1', 'ds=2020-13-01', ('ERR', 'Error parsing partition filter; lexer error: line 1:13 rule DateLiteral failed predicate: { ExtractDate(getText()) != null }?; exception NoViableAltException(-1@[])')),
    ('t1', 'hr=99999999999999999999', ('ERR', 'java.lang.NumberFormatException: For input string: "99999999999999999999"')),
    ('t1', "ds='a' and hr='1'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t1', "hr>'1'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t1', "hr=1 and ds like 'a'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t1', 'Hr=1', ('ALL_BUT', [('2020-01-01', '10'), ('2020-01-01', '2'), ('a', '10'), ('a', '2'), ('z', '-3'), ('z', '007'), ('z', '__HIVE_DEFAULT_PARTITION__')])),
    ('t1', 'hr=01', ('ALL_BUT', [('2020-01-01', '10'), ('2020-01-01', '2'), ('a', '10'), ('a', '2'), ('z', '-3'), ('z', '007'), ('z', '__HIVE_DEFAULT_PARTITION__')])),
    ('t2', "v='a/b'", ('ONLY', [('a/b',)])),
    ('t2', "v=''", ('ONLY', [('',)])),
    ('t2', "v='__HIVE_DEFAULT_PARTITION__'", ('ONLY', [])),
    ('t2', "v like '.*'", ('ALL_BUT', [])),
    ('t2', "v like ''", ('ONLY', [('',)])),
    ('t2', "v=''  and v like '.*'", ('ERR', 'Partition spec is incorrect. {v=}')),
    ('t2', "v<'a'", ('ONLY', [('',), ('\x01',), ('50%',), ('[x]',), ('^',)])),
    ('t2', "v>'é'", ('ONLY', [('ü€😀',)])),
    ('t2', "v like 'a.c'", ('ONLY', [('a.c',), ('a_c',), ('abc',)])),
    ('t2', "v like 'a\\\\.c'", ('ONLY', [])),
    ('t2', "v like '.*[.].*'", ('ONLY', [('[x]',)])),
    ('t2', "v='~!@$&()+,;'", ('ONLY', [('~!@$&()+,;',)])),
    ('t2', "v like '~.*'", ('ONLY', [('~!@$&()+,;',)])),
    ('t2', "v>'ü'", ('ONLY', [('ü€😀',)])),
    ('t3', 'd=2020-01-01', ('ONLY', [('2020-01-01', '5', 'v1')])),
    ('t3', "d='2020-01-01'", ('ONLY', [('2020-01-01', '5', 'v1')])),
    ('t3', "d>'2020-06-01'", ('ONLY', [('2021-06-30', '-7', 'v2')])),
    ('t3', "d='x'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t3', 'b=5', ('ONLY', [('2020-01-01', '5', 'v1')])),
    ('t3', 'b>-10', ('ALL_BUT', [])),
    ('t3', "b='5'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t3', "vc='v1'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t3', "vc like 'v.*'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t3', "d like '2020.*'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t3', 'd=5', ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t3', 'b between -7 and 0', ('ONLY', [('2021-06-30', '-7', 'v2')])),
    ('t3', "b=5 and vc='v1'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t3', 'd=2020-01-01 and b=5', ('ONLY', [('2020-01-01', '5', 'v1')])),
    ('t3', "b=5 or d like 'x'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t4', 'hr=1', ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t4', 'hr>0', ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t4', "hr='abc'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t4', "hr like 'a.*'", ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t4', 'hr<>1', ('ERR', 'Filtering is supported only on partition keys of type string')),
    ('t1', "ds like 'back\\\\slash'", ('ONLY', [])),
    ('t1', "ds like 'back\\\\\\\\slash'", ('ONLY', [])),
    ('t1', "ds like 'a\\\\.c'", ('ONLY', [])),
    ('t1', "ds like 'a\\\\%c'", ('ONLY', [])),
    ('t1', "ds like '50\\\\'", ('ONLY', [])),
    ('t1', "ds like '(?i)A'", ('ONLY', [('A', '1'), ('a', '1'), ('a', '10'), ('a', '2')])),
    ('t1', "ds like '(?I)A'", ('ONLY', [])),
    ('t1', "ds like 'a_c'", ('ONLY', [('a_c', '1')])),
    ('t1', "ds like 'ab'", ('ONLY', [('ab', '1')])),
    ('t1', "ds like 'ab '", ('ONLY', [])),
    ('t1', "ds = 'ab '", ('ONLY', [('ab', '1')])),
    ('t1', "ds < 'a\t'", ('ONLY', [(' ', '1'), ('#h', '1'), ('10', '1'), ('2020-01-01', '1'), ('2020-01-01', '10'), ('2020-01-01', '2'), ('2020-01-02', '1'), ('50%', '1'), ('9', '1'), ('A', '1'), ('__HIVE_DEFAULT_PARTITION__', '1')])),
    ('t1', "ds like 'a%c'", ('ONLY', [('a%c', '1')])),
]
NAME_TO_VALS_CASES = [
    ('a=1/b=2', ['1', '2'], [('a', '1'), ('b', '2')]),
    ('a=1', ['1'], [('a', '1')]),
    ('', [], []),
    ('a', [], []),
    ('a=', [], []),
    ('=1', [], []),
    ('a=1/b', ['1'], [('a', '1')]),
    ('a=1//b=2', ['1', '2'], [('a', '1'), ('b', '2')]),
    ('a=1=2', ['2'], [('a=1', '2')]),
    ('a%3D=1%2F', ['1/'], [('a=', '1/')]),
    ('/a=1', ['1'], [('a', '1')]),
    ('a=1/', ['1'], [('a', '1')]),
    ('A=1', ['1'], [('A', '1')]),
    ('ds=a%2Fb/hr=1', ['a/b', '1'], [('ds', 'a/b'), ('hr', '1')]),
    ('ds=%C3%A9', ['Ã©'], [('ds', 'Ã©')]),
    ('ds=é', ['é'], [('ds', 'é')]),
    ('k=v%', ['v%'], [('k', 'v%')]),
    ('k=%zz', ['%zz'], [('k', '%zz')]),
    ('a=1:2', None, None),
    ('a:b=1', None, None),
    ('x/a=1', ['1'], [('a', '1')]),
    ('a=1/./b=2', ['1', '2'], [('a', '1'), ('b', '2')]),
    ('a=1/../b=2', ['2'], [('b', '2')]),
    ('a=1/b=2/a=3', ['3', '2'], [('a', '3'), ('b', '2')]),
    ('k=a b', ['a b'], [('k', 'a b')]),
    (' k = v ', [' v '], [(' k ', ' v ')]),
    ('k=v\n', ['v\n'], [('k', 'v\n')]),
    ('/', [], []),
    ('//', [], []),
    ('=', [], []),
    ('==', [], []),
    ('a==b', ['b'], [('a=', 'b')]),
    ('k=__HIVE_DEFAULT_PARTITION__', ['__HIVE_DEFAULT_PARTITION__'], [('k', '__HIVE_DEFAULT_PARTITION__')]),
    ('k=%25', ['%'], [('k', '%')]),
    ('c:/a=1', ['1'], [('a', '1')]),
    ('hdfs://h/a=1', ['1'], [('a', '1')]),
    ('a=1?x', ['1?x'], [('a', '1?x')]),
    ('a=1#f', ['1#f'], [('a', '1#f')]),
    ('a=%2', ['%2'], [('a', '%2')]),
    ('k=v/k2=v2/', ['v', 'v2'], [('k', 'v'), ('k2', 'v2')]),
]
PATTERN_CASES = [
    ('db', '*', ['default', 'odb', 'other_db', 'xdb1']),
    ('db', '', []),
    ('db', 'abc', []),
    ('db', 'ABC', []),
    ('db', 'a*', []),
    ('db', 'A*', []),
    ('db', 'ab?', []),
    ('db', 'a.c', []),
    ('db', 'a.*', []),
    ('db', 'a_c', []),
    ('db', 'abc|x1', []),
    ('db', 'abc | x1', []),
    ('db', '*_*', ['other_db']),
    ('db', 't[12]', []),
    ('db', 't.', []),
    ('db', 'x1|', []),
    ('db', '|', 'Method/Identifier expected at character 3 in "( )"'),
    ('db', '(abc)', []),
    ('db', 't+', []),
    ('db', '^abc$', []),
    ('db', 'abc*|*bar', []),
    ('db', 'a%', []),
    ('db', 'o*', ['odb', 'other_db']),
    ('db', '*db*', ['odb', 'other_db', 'xdb1']),
    ('db', '.*db.*', ['xdb1']),
    ('db', 'xdb1', ['xdb1']),
    ('db', 'ot*er_db', ['other_db']),
    ('db', 't1 ', []),
    ('db', 'a\\.c', []),
    ('db', '[', []),
    ('db', 'a{2}', []),
    ('tbl', '*', ['a_c', 'abc', 'abd', 'abx', 'foo_bar', 'n0', 'n1', 'n10', 'n11', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8', 'n9', 't1', 't2', 't3', 't4', 'x1']),
    ('tbl', '', []),
    ('tbl', 'abc', ['abc']),
    ('tbl', 'ABC', ['abc']),
    ('tbl', 'a*', ['a_c', 'abc', 'abd', 'abx']),
    ('tbl', 'A*', ['a_c', 'abc', 'abd', 'abx']),
    ('tbl', 'ab?', []),
    ('tbl', 'a.c', ['a_c', 'abc']),
    ('tbl', 'a.*', ['a_c', 'abc', 'abd', 'abx']),
    ('tbl', 'a_c', ['a_c']),
    ('tbl', 'abc|x1', ['abc', 'x1']),
    ('tbl', 'abc | x1', []),
    ('tbl', '*_*', ['a_c', 'foo_bar']),
    ('tbl', 't[12]', []),
    ('tbl', 't.', ['t1', 't2', 't3', 't4']),
    ('tbl', 'x1|', ['x1']),
    ('tbl', '|', 'Method/Identifier expected at character 35 in "(database.name == :param1 ) &&  ( )"'),
    ('tbl', '(abc)', []),
    ('tbl', 't+', []),
    ('tbl', '^abc$', []),
    ('tbl', 'abc*|*bar', ['abc', 'foo_bar']),
    ('tbl', 'a%', []),
    ('tbl', 'o*', []),
    ('tbl', '*db*', []),
    ('tbl', '.*db.*', []),
    ('tbl', 'xdb1', []),
    ('tbl', 'ot*er_db', []),
    ('tbl', 't1 ', ['t1']),
    ('tbl', 'a\\.c', []),
    ('tbl', '[', []),
    ('tbl', 'a{2}', []),
]
PARSE_CASES = [
    ("ds='a'", '(ds EQUALS S:a)'),
    ('ds = "a"', '(ds EQUALS S:a)'),
    ("DS LIKE 'a.*'", '(DS LIKE S:a.*)'),
    ("ds like 'x'", '(ds LIKE S:x)'),
    ("'a' < ds", '(ds LESSTHAN S:a REV)'),
    ("ds='a\\'b'", "(ds EQUALS S:a\\'b)"),
    ('ds="a\\"b"', '(ds EQUALS S:a\\"b)'),
    ("ds='a\\\\b'", '(ds EQUALS S:a\\\\b)'),
    ('hr=5', '(hr EQUALS L:5)'),
    ('hr = -5', '(hr EQUALS L:-5)'),
    ('5 = hr', '(hr EQUALS L:5 REV)'),
    ('hr>=05', '(hr GREATERTHANOREQUALTO L:5)'),
    ('ds=2020-01-01', '(ds EQUALS D:2020-01-01)'),
    ('ds=date 2020-01-01', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(13@[])')),
    ('ds=DATE 2020-01-01', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(13@[])')),
    ('ds=2020-13-01', ('ERR', 'Error parsing partition filter; lexer error: line 1:13 rule DateLiteral failed predicate: { ExtractDate(getText()) != null }?; exception NoViableAltException(-1@[])')),
    ("ds='2020-01-01'", '(ds EQUALS S:2020-01-01)'),
    ("ds between 'a' and 'b'", '[(ds GREATERTHANOREQUALTO S:a) AND (ds LESSTHANOREQUALTO S:b)]'),
    ('ds not between 1 and 2', '[(ds LESSTHAN L:1) OR (ds GREATERTHAN L:2)]'),
    ("hr BETWEEN 1 AND 'x'", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(28!=14)')),
    ("(ds) in ('a','b')", '[(ds EQUALS S:a) OR (ds EQUALS S:b)]'),
    ('(ds) not in (1,2)', '[(ds NOTEQUALS2 L:1) AND (ds NOTEQUALS2 L:2)]'),
    ("ds in ('a')", ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(12@[])')),
    ("(struct(ds,hr)) in (const struct('a',1), const struct('b',2))", '[[(ds EQUALS S:a) AND (hr EQUALS L:1)] OR [(ds EQUALS S:b) AND (hr EQUALS L:2)]]'),
    ("(struct(ds,hr)) not in (const struct('a',1))", '[(ds NOTEQUALS2 S:a) OR (hr NOTEQUALS2 L:1)]'),
    ("ds='a' and hr=1 or ds='b'", '[[(ds EQUALS S:a) AND (hr EQUALS L:1)] OR (ds EQUALS S:b)]'),
    ("ds='a' or hr=1 and ds='b'", '[(ds EQUALS S:a) OR [(hr EQUALS L:1) AND (ds EQUALS S:b)]]'),
    ("(ds='a' or hr=1) and ds='b'", '[[(ds EQUALS S:a) OR (hr EQUALS L:1)] AND (ds EQUALS S:b)]'),
    ("ds='a' garbage", '(ds EQUALS S:a)'),
    ("ds='a')", '(ds EQUALS S:a)'),
    ("ds='a' and", ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ('ds=', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ('ds', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ('=', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(9@[])')),
    (' ', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ("ds=='a'", ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(9@[])')),
    ("ds!='a'", '(ds NOTEQUALS2 S:a)'),
    ("ds<>'a'", '(ds NOTEQUALS S:a)'),
    ("ds@'a'", ('ERR', "Error parsing partition filter; lexer error: line 1:2 no viable alternative at character '@'; exception NoViableAltException(28@[])")),
    ("ds='a", ('ERR', "Error parsing partition filter; lexer error: line 1:5 mismatched character '<EOF>' expecting '''; exception NoViableAltException(-1@[])")),
    ('ds=a', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(13@[])')),
    ("_ds='a'", ('ERR', "Error parsing partition filter : line 1:0 no viable alternative at character '_'")),
    ("1ds='a'", '(1ds EQUALS S:a)'),
    ("ds_1='a'", '(ds_1 EQUALS S:a)'),
    ("ds.x='a'", ('ERR', "Error parsing partition filter; lexer error: line 1:2 no viable alternative at character '.'; exception NoViableAltException(13@[])")),
    ("not ds='a'", ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(19@[])')),
    ("ds='a' AND NOT hr=1", ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(19@[])')),
    ("ds = 'é'", '(ds EQUALS S:é)'),
    ("ds='a' ds='b'", '(ds EQUALS S:a)'),
    ("((ds='a'))", '(ds EQUALS S:a)'),
    ("ds=''", '(ds EQUALS S:)'),
    ('ds=""', '(ds EQUALS S:)'),
    ("ds='''", ('ERR', "Error parsing partition filter : line 1:6 mismatched character '<EOF>' expecting '''")),
    ('hr=99999999999999999999', ('ERR', 'java.lang.NumberFormatException: For input string: "99999999999999999999"')),
    ('ds=-2020-01-01', '(ds EQUALS L:-2020)'),
    ('ds=2020-1-01', ('ERR', "Error parsing partition filter : line 1:9 mismatched character '-' expecting set null")),
    ('ds=20200101', '(ds EQUALS L:20200101)'),
    ("ds<'2020-01-01'", '(ds LESSTHAN S:2020-01-01)'),
    ('ds like 5', '(ds LIKE L:5)'),
    ('5 like ds', '(ds LIKE L:5 REV)'),
    ("(ds='a'", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(-1!=27)')),
    ("(ds) in ('a'", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(-1!=27)')),
    ('hr between 1 and', ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(-1!=14)')),
    ("(ds='a' x)", '(ds EQUALS S:a)'),
    ("ds='a' and (hr=1", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(-1!=27)')),
    ("(ds) in 'a')", '(ds EQUALS S:a)'),
    ("(ds) in ('a',)", '[(ds EQUALS S:a) OR (ds EQUALS S:<missing StringLiteral>)]'),
    ("(ds) ('a')", '(ds EQUALS S:a)'),
    ("ds between 'a' 'b'", '[(ds GREATERTHANOREQUALTO S:a) AND (ds LESSTHANOREQUALTO S:b)]'),
    ("ds between 'a' and and 'b'", '[(ds GREATERTHANOREQUALTO S:a) AND (ds LESSTHANOREQUALTO S:b)]'),
    ("ds='a' @", ('ERR', "Error parsing partition filter : line 1:7 no viable alternative at character '@'")),
    ("ds='a' x @", '(ds EQUALS S:a)'),
    ("ds=2020-1-'a'", ('ERR', "Error parsing partition filter; lexer error: line 1:9 mismatched character '-' expecting set null; exception NoViableAltException(13@[])")),
    ('ds!x', ('ERR', "Error parsing partition filter; lexer error: line 1:3 mismatched character 'X' expecting '='; exception NoViableAltException(-1@[])")),
    ("ds='a' and -x", ('ERR', "Error parsing partition filter; lexer error: line 1:12 required (...)+ loop did not match anything at character 'X'; exception NoViableAltException(-1@[])")),
    ("ds = 'a\\", ('ERR', "Error parsing partition filter; lexer error: line 1:8 mismatched character '<EOF>' expecting '''; exception NoViableAltException(-1@[])")),
    ("(struct(ds,hr)) in (const struct('a',1)", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(-1!=27)')),
    ("(struct(ds hr)) in (const struct('a',1))", ('ERR', 'java.lang.IndexOutOfBoundsException: Index 1 out of bounds for length 1')),
    ("'a' ds", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedSetException(13!=null)')),
    ("'a' = =", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(9!=13)')),
    ('ds in', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(12@[])')),
    ('(ds', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ('((', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ('()', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(27@[])')),
    ('(,', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(5@[])')),
    ("ds='a' or", ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ("ds='a' and ds", ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ("ds='a' and 'b'", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedSetException(-1!=null)')),
    ('(ds)', ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(-1!=12)')),
    ('(ds) not', ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(-1!=12)')),
    ('(ds) not in', ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(-1!=24)')),
    ('(ds) in (', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ("'a'='b'", ('ERR', 'Error parsing partition filter; lexer error: null; exception MismatchedTokenException(28!=13)')),
    ('ds=ds', ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(13@[])')),
    ("ds='a' ORx", '(ds EQUALS S:a)'),
    ("ds='a' OR ds='b' AND", ('ERR', 'Error parsing partition filter; lexer error: null; exception NoViableAltException(-1@[])')),
    ("ds like 'a' and hr = 5", '[(ds LIKE S:a) AND (hr EQUALS L:5)]'),
    ("Ds='x' Or DS<>'y' aNd hr>=3", '[(Ds EQUALS S:x) OR [(DS NOTEQUALS S:y) AND (hr GREATERTHANOREQUALTO L:3)]]'),
    ("ds=''b''", '(ds EQUALS S:)'),
    ("ds='a'\nand\n@", ('ERR', "Error parsing partition filter; lexer error: line 3:0 no viable alternative at character '@'; exception NoViableAltException(-1@[])")),
    ('ds\n!x', ('ERR', "Error parsing partition filter; lexer error: line 2:1 mismatched character 'X' expecting '='; exception NoViableAltException(-1@[])")),
    ('2020-', ('ERR', "Error parsing partition filter; lexer error: line 1:5 mismatched character '<EOF>' expecting set null; exception NoViableAltException(-1@[])")),
    ('-', ('ERR', "Error parsing partition filter; lexer error: line 1:1 required (...)+ loop did not match anything at character '<EOF>'; exception NoViableAltException(-1@[])")),
    ("ds='a' and hr=2020-01-01x", '[(ds EQUALS S:a) AND (hr EQUALS D:2020-01-01)]'),
    ('(hr between 1 and)', ('ERR', 'java.lang.NumberFormatException: For input string: "<missing IntegralLiteral>"')),
    ('(ds) in (2020-01-01, 2021-02-30)', ('ERR', 'Error parsing partition filter; lexer error: line 1:31 rule DateLiteral failed predicate: { ExtractDate(getText()) != null }?; exception MismatchedTokenException(-1!=6)')),
]


# --- escaping -------------------------------------------------------------------------

def test_escaped_char_set_is_hive_2_3():
    expected = {chr(c) for c in range(0x20)} | set("\"#%'*/:=?\\\x7f{[]^")
    assert ESCAPED_CHARS == expected
    for c in range(0x10000):
        ch = chr(c)
        assert (escape_path_name(ch) != ch) == (ch in expected)


@pytest.mark.parametrize("raw, escaped", [
    ("é/a%b", "é%2Fa%25b"), ("a b", "a b"), ("x=y", "x%3Dy"), ("\n", "%0A"), ("\x7f", "%7F"),
    ("{x}", "%7Bx}"), ("[x]", "%5Bx%5D"), ("~!@$&()+,;", "~!@$&()+,;"), ("ü€😀", "ü€😀"),
])
def test_escape_path_name(raw, escaped):
    assert escape_path_name(raw) == escaped
    assert unescape_path_name(escaped) == raw


def test_escape_default():
    assert escape_path_name(None) == DEFAULT_PARTITION_NAME
    assert escape_path_name("") == DEFAULT_PARTITION_NAME
    assert escape_path_name("", "DEF") == "DEF"
    assert escape_path_name(None, "DEF") == "DEF"


@pytest.mark.parametrize("escaped, raw", [
    ("%2F", "/"), ("%2f", "/"), ("%zz", "%zz"), ("%2", "%2"), ("a%", "a%"), ("%41%4", "A%4"),
    ("%%41", "%A"), ("%C3%A9", "Ã©"), ("%7f", "\x7f"),
])
def test_unescape_path_name(escaped, raw):
    assert unescape_path_name(escaped) == raw


def test_make_part_name_lowercases_and_escapes_keys():
    assert make_part_name(["DS", "a/b"], ["x/y", ""]) == "ds=x%2Fy/a%2Fb=__HIVE_DEFAULT_PARTITION__"


@pytest.mark.parametrize("table", ["t1", "t2"])
def test_partition_names_match_hms(table):
    keys = list(KEY_TYPES[table])
    assert sorted(make_part_name(keys, list(p)) for p in PARTITIONS[table]) == sorted(PARTITION_NAMES[table])


@pytest.mark.parametrize("name, vals, spec", NAME_TO_VALS_CASES)
def test_partition_name_to_vals_and_spec(name, vals, spec):
    if vals is None:  # HMS: TApplicationException "Internal error processing partition_name_to_vals"
        with pytest.raises(PartitionNameError):
            part_name_to_vals(name)
        with pytest.raises(PartitionNameError):
            part_name_to_spec(name)
        return
    assert part_name_to_vals(name) == vals
    assert list(part_name_to_spec(name).items()) == spec


# --- validation -------------------------------------------------------------------------

@pytest.mark.parametrize("name, ok", [
    ("a", True), ("A", True), ("_x", True), ("1x", True), ("a b", False), ("é", False),
    ("a-b", False), ("", False), ("a.c", False), (None, False),
])
def test_validate_name(name, ok):
    assert validate_name(name) is ok


@pytest.mark.parametrize("type_name, error", [
    ("int", None), ("INT", "type: INT"), ("string", None), ("array<int>", None),
    ("map<string,int>", None), ("struct<a:int>", None), ("varchar(10)", None), ("decimal(10,2)", None),
    ("foo", "type: foo"), ("foo<int>", "type: foo<int>"), ("<int>", "type: <int>"), ("int foo", None),
    ("éclair", "type: éclair"), ("_x", "type: _x"), ("tinyint ", None), ("uniontype<int>", None),
    ("interval_day_time", None), ("<derived from deserializer>", None), (" int", "type:  int"),
    ("1int", "type: 1int"),
])
def test_validate_column_type(type_name, error):
    assert validate_column_type(type_name) == error


def test_validate_tbl_columns():
    assert validate_tbl_columns([("a", "int"), ("b,c", "string")]) is None  # names are never checked
    assert validate_tbl_columns([("a", "int"), ("b", "Int")]) == "type: Int"


# --- patterns ---------------------------------------------------------------------------

DATABASES = ["default", "odb", "other_db", "xdb1"]  # "Xdb1" was created; HMS lower-cases it


@pytest.mark.parametrize("kind, pattern, expected", PATTERN_CASES)
def test_name_patterns(kind, pattern, expected):
    universe = DATABASES if kind == "db" else next(e for k, p, e in PATTERN_CASES if k == "tbl" and p == "*")
    if isinstance(expected, str):  # a MetaException message: the pattern was only "|"
        with pytest.raises(ValueError):
            compile_name_pattern(pattern)
        return
    match = compile_name_pattern(pattern)
    assert [n for n in universe if match(n)] == expected


# --- filter parsing ---------------------------------------------------------------------

_OP_NAMES = {"=": "EQUALS", "<>": "NOTEQUALS", "!=": "NOTEQUALS2", "<": "LESSTHAN", "<=": "LESSTHANOREQUALTO",
             ">": "GREATERTHAN", ">=": "GREATERTHANOREQUALTO", "LIKE": "LIKE"}


def _dump(node) -> str:
    """The tree in the format of the Java probe that recorded PARSE_CASES."""
    if isinstance(node, Leaf):
        v = node.value
        shown = ("null" if v is None else f"S:{v}" if isinstance(v, str)
                 else f"L:{v}" if isinstance(v, int) else f"D:{v.isoformat()}")
        return f"({node.key} {_OP_NAMES[node.op]} {shown}{' REV' if node.reverse else ''})"
    return f"[{_dump(node.lhs)} {node.op} {_dump(node.rhs)}]"


@pytest.mark.parametrize("text, expected", PARSE_CASES)
def test_parse_filter_like_hive(text, expected):
    if isinstance(expected, tuple):
        with pytest.raises(FilterError) as info:
            parse_filter(text)
        assert info.value.message == expected[1]
    else:
        assert _dump(parse_filter(text).root) == expected


def test_empty_filter_is_everything():
    assert parse_filter("").evaluate({"ds": "x"}, {"ds": "string"})
    assert parse_filter(None).evaluate({"ds": "x"}, {"ds": "string"})


# --- filter evaluation ------------------------------------------------------------------

@pytest.mark.parametrize("table, text, expected", FILTER_CASES)
def test_filter_matches_hms(table, text, expected):
    key_types = KEY_TYPES[table]
    everything = sorted(PARTITIONS[table])

    def run():
        expr = parse_filter(text)
        return sorted(p for p in everything if expr.evaluate(dict(zip(key_types, p)), key_types))
    if expected[0] == "ERR":
        with pytest.raises(FilterError) as info:
            run()
        assert info.value.message == expected[1]
        return
    want = sorted(expected[1]) if expected[0] == "ONLY" else [p for p in everything if p not in expected[1]]
    assert run() == want


# One partition with value v and one with "3" in a table (k int): Derby's CAST(.. AS DECIMAL(21,0)).
@pytest.mark.parametrize("value, text, expected", [
    (" 1", "k=1", [" 1"]), ("1 ", "k=1", ["1 "]), ("1.5", "k=1", ["1.5"]), ("+2", "k=2", ["+2"]),
    ("1e1", "k>0", ["1e1", "3"]), ("1e1", "k=2", []), ("٣", "k>0", ["3", "٣"]), ("٣", "k=1", []),
    ("1.", "k=1", ["1."]), (".5", "k>0", ["3"]), ("-0", "k>0", ["3"]),
    ("", "k=1", "ERR"), ("0x1", "k=1", "ERR"), ("9" * 23, "k=1", "ERR"),
])
def test_integral_cast(value, text, expected):
    expr = parse_filter(text)
    try:
        got = sorted(v for v in [value, "3"] if expr.evaluate({"k": v}, {"k": "int"}))
    except FilterError as e:
        assert e.message == "Filtering is supported only on partition keys of type string"
        got = "ERR"
    assert got == expected


def test_sql_compare_pads_with_spaces():
    assert sql_compare("a", "a ") == 0
    assert sql_compare("a", "a\t") > 0
    assert sql_compare("ab", "a") > 0


def test_date_literal_value():
    assert parse_filter("d=2020-01-01").root.value == datetime.date(2020, 1, 1)


def test_evaluate_compiles_once_per_filter_and_key_types(monkeypatch):
    """10,000 partitions per call: the closure is compiled once per (filter, key types), not
    per partition (what makes evaluating a filter over many partitions fast)."""
    from hms_proxy.hms import filters

    compiled = []
    real = filters._compile
    monkeypatch.setattr(filters, "_compile",
                        lambda root, keys: compiled.append(keys) or real(root, keys))
    rows = [{"ds": "ab"[i % 2] + str(i), "hr": str(i)} for i in range(10000)]
    cases = [
        # odd i (ds 'b<i>' > 'b'; no ds is 'a1') with hr in 1..5000
        ("(ds='a1' or ds>'b') and hr between 1 and 5000", {"ds": "string", "hr": "int"}, 2500),
        ("(ds like 'b.*' or ds='a1') and hr='7'", {"ds": "string", "hr": "string"}, 1),
    ]
    for text, key_types, matching in cases:
        expr = parse_filter(text)
        compiled.clear()
        assert sum(expr.evaluate(r, key_types) for r in rows) == matching
        assert compiled == [list(key_types.items())]  # once, for the 10,000 partitions
        other = {**key_types, "extra": "string"}  # another table's keys: compiled anew
        expr.evaluate(rows[0], other)
        expr.evaluate(rows[1], other)
        assert compiled == [list(key_types.items()), list(other.items())]
