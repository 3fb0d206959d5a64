#!/usr/bin/env python3
"""Extract the Hive Metastore Thrift interfaces from the published jars and render our IDL.

Why: hms-proxy must be wire-compatible with every Hive metastore client generation. The HMS
2.3.10 that Spark talks to by default is the base: the jar PySpark ships is the authority for
it. The 3.1.3 and 4.0.1 interfaces (hive-standalone-metastore's jars on Maven Central) are
laid over it as a superset: their new methods, structs, fields and enum values are added,
and where a newer generation reuses an id or a name differently, the older one keeps it
(a 2.3 client must see exactly what it saw before; the conflicts are listed by ``--report``
and pinned in tests/thrift/test_thrift_idl.py). Rather than copy Apache's .thrift files, we
read the Java classes the Thrift compiler generated (thrift/java/DumpThriftModel.java dumps
them as JSON) and render our own thrift/hive_metastore.thrift and thrift/fb303.thrift, plus
hms_proxy/thrift/generations.py (which generation declares each method and field).
hmsclient's generated Python (from an older Hive 2.3) is only cross-checked.

Usage:  python thrift/extract_idl.py           # rewrite the files, print the report
        python thrift/extract_idl.py --check   # exit 1 if the committed files are stale
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
JAVA_SOURCE = HERE / "java" / "DumpThriftModel.java"
HIVE_JAR = "hive-metastore-2.3.10.jar"

# Thrift program name -> (jar glob, Java package, service class, constants class).
PROGRAMS = {
    "fb303": ("libfb303-*.jar", "com.facebook.fb303", "FacebookService", ""),
    "hive_metastore": (HIVE_JAR, "org.apache.hadoop.hive.metastore.api",
                       "ThriftHiveMetastore", "hive_metastoreConstants"),
}
PACKAGE_TO_PROGRAM = {pkg: name for name, (_, pkg, _, _) in PROGRAMS.items()}


# --------------------------------------------------------------------------- extraction

def pyspark_jars_dir() -> Path:
    """PySpark bundles the HMS 2.3.10 client jars; they are our source of truth."""
    import pyspark
    return Path(os.path.dirname(pyspark.__file__)) / "jars"


def java_available() -> bool:
    return bool(shutil.which("java") and shutil.which("javac"))


def extract(jars_dir: Path | None = None) -> dict:
    """The HMS 2.3.10 model from PySpark's jars: {program: model}."""
    jars_dir = jars_dir or pyspark_jars_dir()
    specs = []
    for name, (pattern, pkg, service, consts) in PROGRAMS.items():
        jars = sorted(jars_dir.glob(pattern))
        if jars:
            specs.append(f"{name}={jars[0]}:{pkg}:{service}:{consts}")
        elif name != "fb303":
            raise FileNotFoundError(f"{pattern} not found in {jars_dir}")
    model = dump(f"{jars_dir}/*", specs)
    model.setdefault("fb303", fb303_from_hmsclient())
    return model


def dump(classpath: str, specs: list[str]) -> dict:
    """Compile and run the Java dumper over ``classpath`` for the given program specs."""
    with tempfile.TemporaryDirectory(prefix="hms-idl-") as tmp:
        subprocess.run(["javac", "-nowarn", "-d", tmp, "-cp", classpath, str(JAVA_SOURCE)],
                       check=True, capture_output=True, text=True)
        out = subprocess.run(["java", "-cp", f"{tmp}{os.pathsep}{classpath}", "DumpThriftModel",
                              *specs], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


# The newer generations laid over 2.3.10, oldest first: version -> the jars their model is read
# from (Maven Central paths; the metastore jar first). 3.1.3's come from the -bin tarball the
# stock 3.1.3 oracle runs from; 4.0.1's are the three jars its Thrift classes need.
NEWER = {
    "3.1.3": None,  # hms_proxy.tools.hive31_local.ensure_hive31()'s lib directory
    "4.0.1": ("org/apache/hive/hive-standalone-metastore-common/4.0.1/"
              "hive-standalone-metastore-common-4.0.1.jar",
              "org/apache/thrift/libthrift/0.16.0/libthrift-0.16.0.jar",
              "org/apache/thrift/libfb303/0.9.3/libfb303-0.9.3.jar"),
}


def newer_jars(version: str) -> tuple[Path, list[Path]]:
    """(the metastore jar, the classpath) of a newer generation, downloaded once per machine
    into ~/.cache/hms-proxy (SHA-1 checked)."""
    if NEWER[version] is None:
        from hms_proxy.tools.hive31_local import ensure_hive31
        lib = ensure_hive31() / "lib"
        jar = lib / f"hive-standalone-metastore-{version}.jar"
        return jar, [jar, *sorted(lib.glob("libthrift-*.jar")), *sorted(lib.glob("libfb303-*.jar"))]
    from hms_proxy.tools import maven
    from hms_proxy.tools.lakefs_local import cache_root
    cache = cache_root() / "idl" / version
    cache.mkdir(parents=True, exist_ok=True)
    jars = [maven.fetch_verified(rel, cache / Path(rel).name) for rel in NEWER[version]]
    return jars[0], jars


def extract_newer(version: str) -> dict:
    """The hive_metastore model of a newer generation (its fb303 is 2.3.10's, unchanged)."""
    jar, classpath = newer_jars(version)
    _, pkg, service, consts = PROGRAMS["hive_metastore"]
    model = dump(os.pathsep.join(map(str, classpath)),
                 [f"hive_metastore={jar}:{pkg}:{service}:{consts}"])["hive_metastore"]
    model["jar"] = jar.name
    _resolve_typedefs(model, pkg)
    return model


def _resolve_typedefs(node, pkg: str) -> None:
    """Thrift 0.9.3 records a struct used before its declaration as a typedef of its name
    (3.1.3's Table.creationMetadata); such a type is that struct."""
    if isinstance(node, list):
        for item in node:
            _resolve_typedefs(item, pkg)
    elif isinstance(node, dict):
        if node.get("kind") == "struct" and "name" not in node and "typedef" in node:
            node["name"] = node.pop("typedef")
            node["package"] = pkg
        for value in node.values():
            _resolve_typedefs(value, pkg)


def extract_all(jars_dir: Path | None = None) -> tuple[dict, dict]:
    """(the 2.3.10 model, {newer version: its hive_metastore model})."""
    return extract(jars_dir), {v: extract_newer(v) for v in NEWER}


# --------------------------------------------------------------------------- the superset

def _field_key(f: dict, union: bool = False):
    # a union's members are optional by nature; Thrift 0.9.3 records them as default
    return (f["name"], f["type"], None if union else f["req"],
            json.dumps(f.get("default"), sort_keys=True))


# Newer fields whose name an older field holds at another id, kept under another name because
# newer clients need them: 3.x/4.x's Table.catName (17; 2.3.10's catName is 16) names the
# catalog a Hive 3.1/4.x client's table is in.
ALIASES = {("struct Table field", 17, "catName"): "catalogName"}


def merge_fields(what: str, base: list[dict], newer: list[dict], version: str,
                 conflicts: list[str], union: bool = False) -> list[dict]:
    """``base``'s fields, then ``newer``'s whose id and name are both new; a newer field that
    reuses an id or a name differently is left out and recorded."""
    by_id = {f["id"]: f for f in base}
    names = {f["name"] for f in base}
    out = list(base)
    for f in newer:
        old = by_id.get(f["id"])
        if old is not None:
            if _field_key(old, union) != _field_key(f, union):
                conflicts.append(f"{what} {f['id']}: {version} {_sig(f)}, kept {_sig(old)}")
        elif f["name"] in names and f["id"] > 0 and any(
                o["name"] == f["name"] and o["id"] < 0 for o in out):
            # an id the older IDL left out (the compiler numbered it -1), given by the newer
            out = [f if o["name"] == f["name"] else o for o in out]
        elif f["name"] in names:
            conflicts.append(f"{what} {f['id']}: {version} {_sig(f)}, the name is taken")
            alias = ALIASES.get((what, f["id"], f["name"]))
            if alias is not None and alias not in names:  # read (and written) by another name
                out.append(dict(f, name=alias))
                names.add(alias)
        else:
            out.append(f)
            names.add(f["name"])
    return out


def _sig(f: dict) -> str:
    req = "" if f["req"] == "default" else f["req"] + " "
    return f"{req}{type_name(f['type'], 'hive_metastore')} {f['name']}"


def superset(base: dict, newer: dict, version: str) -> tuple[dict, list[str]]:
    """The hive_metastore model serving both ``base`` and ``newer`` clients, and the conflicts
    that were settled for ``base`` (the older generation keeps what it has)."""
    conflicts: list[str] = []
    structs = {s["name"]: dict(s) for s in base["structs"]}
    for s in newer["structs"]:
        old = structs.get(s["name"])
        if old is None:
            structs[s["name"]] = s
            continue
        if old["kind"] != s["kind"]:
            conflicts.append(f"struct {s['name']}: {version} {s['kind']}, kept {old['kind']}")
        old["fields"] = merge_fields(f"struct {s['name']} field", old["fields"], s["fields"],
                                     version, conflicts, union=old["kind"] == "union")
    enums = {e["name"]: dict(e) for e in base["enums"]}
    for e in newer["enums"]:
        old = enums.get(e["name"])
        if old is None:
            enums[e["name"]] = e
            continue
        values = {v["name"]: v["value"] for v in old["values"]}
        taken = set(values.values())
        extra = []
        for v in e["values"]:
            if v["name"] in values:
                if values[v["name"]] != v["value"]:
                    conflicts.append(f"enum {e['name']} {v['name']}: {version} {v['value']}, "
                                     f"kept {values[v['name']]}")
            elif v["value"] in taken:
                conflicts.append(f"enum {e['name']} {v['name']}: {version} {v['value']}, "
                                 "the value is taken")
            else:
                extra.append(v)
                taken.add(v["value"])
        old["values"] = old["values"] + extra
    constants = {c["name"]: c for c in base["constants"]}
    for c in newer["constants"]:
        if c["name"] not in constants:
            constants[c["name"]] = c
        elif constants[c["name"]] != c:
            conflicts.append(f"const {c['name']}: {version} differs, kept")
    methods = {m["name"]: dict(m) for m in base["service"]["methods"]}
    for m in newer["service"]["methods"]:
        old = methods.get(m["name"])
        if old is None:
            methods[m["name"]] = m
            continue
        if old["returns"] != m["returns"] or old["oneway"] != m["oneway"]:
            conflicts.append(f"method {m['name']}: {version} returns "
                             f"{m['returns'] and model_sig(m['returns'])}, kept")
            continue
        old["args"] = merge_fields(f"method {m['name']} arg", old["args"], m["args"], version,
                                   conflicts)
        old["throws"] = merge_fields(f"method {m['name']} throws", old["throws"], m["throws"],
                                     version, conflicts)
    merged = dict(base, structs=list(structs.values()), enums=list(enums.values()),
                  constants=list(constants.values()),
                  service=dict(base["service"], methods=list(methods.values())),
                  jar=f"{base['jar']} and, laid over it, {newer['jar']}")
    return merged, conflicts


def superset_model(model23: dict, newer: dict) -> tuple[dict, list[str]]:
    """The full model (fb303 and the hive_metastore superset) and every conflict settled."""
    merged, conflicts = model23["hive_metastore"], []
    for version, m in newer.items():
        merged, found = superset(merged, m, version)
        conflicts += found
    return dict(model23, hive_metastore=merged), conflicts


def fb303_from_hmsclient() -> dict:
    """Fallback when libfb303 is not among the jars: rebuild fb303 from hmsclient's specs.

    Python specs lose enum types (getStatus returns i32, the same wire encoding) and the
    declaration order (methods come out alphabetically); neither changes the wire format.
    """
    svc = importlib.import_module("hmsclient.genthrift.fb303.FacebookService")
    ttypes = importlib.import_module("hmsclient.genthrift.fb303.ttypes")
    methods = []
    for name, _ in inspect.getmembers(svc.Iface, inspect.isfunction):
        result = getattr(svc, f"{name}_result", None)
        res_fields = _spec_to_fields(result.thrift_spec) if result else []
        methods.append({
            "name": name, "oneway": result is None,
            "args": _spec_to_fields(getattr(svc, f"{name}_args").thrift_spec),
            "returns": next((f["type"] for f in res_fields if f["id"] == 0), None),
            "throws": [f for f in res_fields if f["id"] != 0]})
    status = ttypes.fb_status
    return {"package": "com.facebook.fb303", "jar": "hmsclient", "constants": [], "structs": [],
            "enums": [{"name": "fb_status", "values": [
                {"name": n, "value": v} for v, n in sorted(status._VALUES_TO_NAMES.items())]}],
            "service": {"name": "FacebookService", "extends": None, "methods": methods}}


def _spec_to_fields(spec) -> list[dict]:
    from thrift.Thrift import TType
    kinds = {TType.BOOL: "bool", TType.BYTE: "i8", TType.I16: "i16", TType.I32: "i32",
             TType.I64: "i64", TType.DOUBLE: "double"}

    def typ(ttype, args):
        if ttype == TType.STRING:
            return {"kind": "binary" if args == "BINARY" else "string"}
        if ttype in (TType.LIST, TType.SET):
            return {"kind": "list" if ttype == TType.LIST else "set", "elem": typ(args[0], args[1])}
        if ttype == TType.MAP:
            return {"kind": "map", "key": typ(args[0], args[1]), "value": typ(args[2], args[3])}
        if ttype == TType.STRUCT:
            return {"kind": "struct", "name": args[0].__name__, "package": "com.facebook.fb303"}
        return {"kind": kinds[ttype]}

    return [{"name": f[2], "id": f[0], "req": "default", "type": typ(f[1], f[3])}
            for f in (spec or ()) if f]


# --------------------------------------------------------------------------- rendering

def type_name(t: dict, program: str) -> str:
    """IDL spelling of a type; names from another program get its include prefix."""
    kind = t["kind"]
    if kind in ("struct", "enum"):
        owner = PACKAGE_TO_PROGRAM.get(t.get("package"), program)
        return t["name"] if owner == program else f"{owner}.{t['name']}"
    if kind in ("list", "set"):
        return f"{kind}<{type_name(t['elem'], program)}>"
    if kind == "map":
        return f"map<{type_name(t['key'], program)}, {type_name(t['value'], program)}>"
    return kind


def const_value(v) -> str:
    """IDL literal for a default or constant value as dumped by the Java side."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        if '"' in v or "\\" in v:
            raise ValueError(f"cannot write {v!r} as a Thrift literal")
        return f'"{v}"'
    if "enum" in v:
        return f"{v['enum']}.{v['name']}"
    if "list" in v:
        return "[" + ", ".join(const_value(x) for x in v["list"]) + "]"
    return "{" + ", ".join(f"{const_value(k)}: {const_value(x)}" for k, x in v["map"]) + "}"


def field_decl(f: dict, program: str) -> str:
    req = "" if f["req"] == "default" else f["req"] + " "
    default = f" = {const_value(f['default'])}" if "default" in f else ""
    return f"{f['id']}: {req}{type_name(f['type'], program)} {f['name']}{default}"


def struct_deps(t: dict) -> set[str]:
    """Struct names a type refers to (containers included)."""
    if t["kind"] == "struct":
        return {t["name"]}
    return set().union(*(struct_deps(t[k]) for k in ("elem", "key", "value") if k in t))


def dependency_order(structs: list[dict]) -> list[dict]:
    """Alphabetical, except that a struct always follows the structs it uses."""
    by_name = {s["name"]: s for s in structs}
    done: dict[str, dict] = {}

    def visit(name: str, path: tuple = ()):
        if name in done or name in path or name not in by_name:
            return
        for f in by_name[name]["fields"]:
            for dep in sorted(struct_deps(f["type"])):
                visit(dep, path + (name,))
        done[name] = by_name[name]

    for name in sorted(by_name):
        visit(name)
    return list(done.values())


def render_program(name: str, model: dict) -> str:
    """The .thrift text of one program."""
    m = model[name]
    out = [f"// {name}.thrift: the Thrift interface compiled into {m['jar']}",
           f"// (Java package {m['package']}).",
           "// Generated by thrift/extract_idl.py from the jar's classes; do not edit by hand.",
           "",
           f"namespace java {m['package']}",
           f"namespace py {name}",
           ""]
    includes = sorted(p for p in PROGRAMS if p != name and uses_program(m, p))
    out += [f'include "{p}.thrift"' for p in includes] + ([""] if includes else [])
    for enum in sorted(m["enums"], key=lambda e: e["name"]):
        out.append(f"enum {enum['name']} {{")
        out += [f"  {v['name']} = {v['value']}," for v in enum["values"]]
        out += ["}", ""]
    for c in m["constants"]:
        out.append(f"const {type_name(c['type'], name)} {c['name']} = {const_value(c['value'])}")
    out += [""] if m["constants"] else []
    for s in dependency_order(m["structs"]):
        out.append(f"{s['kind']} {s['name']} {{")
        out += [f"  {field_decl(f, name)}," for f in s["fields"]]
        out += ["}", ""]
    out += render_service(m["service"], name)
    return "\n".join(out)


def uses_program(m: dict, other: str) -> bool:
    """Whether program m refers to another program's types or extends its service."""
    _, pkg, service, _ = PROGRAMS[other]
    return m["service"]["extends"] == service or f'"{pkg}"' in json.dumps(m)


def render_service(svc: dict, program: str) -> list[str]:
    parent = svc["extends"]
    if parent:
        owner = next((p for p, spec in PROGRAMS.items() if spec[2] == parent), program)
        parent = parent if owner == program else f"{owner}.{parent}"
    out = [f"service {svc['name']}" + (f" extends {parent}" if parent else "") + " {"]
    for m in svc["methods"]:
        ret = type_name(m["returns"], program) if m["returns"] else "void"
        args = ", ".join(field_decl(f, program) for f in m["args"])
        line = f"  {'oneway ' if m['oneway'] else ''}{ret} {m['name']}({args})"
        if m["throws"]:
            line += " throws (" + ", ".join(field_decl(f, program) for f in m["throws"]) + ")"
        out.append(line)
    return out + ["}", ""]


GENERATIONS = HERE.parent / "hms_proxy" / "thrift" / "generations.py"


def render_generations(model23: dict, newer: dict) -> str:
    """hms_proxy/thrift/generations.py: which generation declares each method, and the field
    ids of each struct in 2.3.10 (what a 2.3 client and a Java 2.3 toString know of)."""
    base = model23["hive_metastore"]
    versions = ["2.3.10", *newer]
    declared: dict[str, list[str]] = {}
    for version, m in [("2.3.10", base), *newer.items()]:
        for meth in m["service"]["methods"]:
            declared.setdefault(meth["name"], []).append(version)
    out = ['"""Which Hive metastore generation declares each Thrift method, and the fields of',
           "each struct in 2.3.10. Generated by thrift/extract_idl.py from the jars; do not edit.",
           '"""', "",
           f"VERSIONS = {tuple(versions)!r}", "",
           "# method -> the versions whose IDL declares it",
           "METHODS: dict[str, tuple[str, ...]] = {"]
    out += [f"    {name!r}: {tuple(v)!r}," for name, v in sorted(declared.items())]
    out += ["}", "", "# struct -> the field ids HMS 2.3.10 declares (absent: a struct newer than 2.3)",
            "FIELDS_2_3: dict[str, frozenset[int]] = {"]
    for s in sorted(base["structs"], key=lambda s: s["name"]):
        ids = ", ".join(str(f["id"]) for f in s["fields"])
        out.append(f"    {s['name']!r}: frozenset({{{ids}}}),")
    return "\n".join(out + ["}", ""])


def render_all(model: dict) -> dict[str, str]:
    return {f"{name}.thrift": render_program(name, model) for name in PROGRAMS}


# --------------------------------------------------------------------------- hmsclient cross-check

def spec_sig(ttype: int, args) -> str:
    """Type signature of a Python thrift_spec entry (enums are plain i32 on the wire)."""
    from thrift.Thrift import TType
    if ttype == TType.STRUCT:
        return args[0].__name__
    if ttype in (TType.LIST, TType.SET):
        return f"{'list' if ttype == TType.LIST else 'set'}<{spec_sig(args[0], args[1])}>"
    if ttype == TType.MAP:
        return f"map<{spec_sig(args[0], args[1])},{spec_sig(args[2], args[3])}>"
    if ttype == TType.STRING:
        return "binary" if args == "BINARY" else "string"
    return {TType.BOOL: "bool", TType.BYTE: "i8", TType.I16: "i16", TType.I32: "i32",
            TType.I64: "i64", TType.DOUBLE: "double"}[ttype]


def spec_fields(cls) -> dict[int, tuple[str, str]]:
    """{field id: (name, type signature)} of a generated Python struct."""
    return {f[0]: (f[2], spec_sig(f[1], f[3])) for f in (cls.thrift_spec or ()) if f}


def model_sig(t: dict) -> str:
    """The same signature as spec_sig, computed from the jar model."""
    kind = t["kind"]
    if kind == "struct":
        return t["name"]
    if kind == "enum":
        return "i32"
    if kind in ("list", "set"):
        return f"{kind}<{model_sig(t['elem'])}>"
    if kind == "map":
        return f"map<{model_sig(t['key'])},{model_sig(t['value'])}>"
    return kind


def model_fields(fields: list[dict]) -> dict[int, tuple[str, str]]:
    return {f["id"]: (f["name"], model_sig(f["type"])) for f in fields}


def compare_fields(what: str, ours: dict, theirs: dict) -> list[str]:
    diffs = []
    for fid in sorted(set(ours) | set(theirs)):
        a, b = ours.get(fid), theirs.get(fid)
        if a != b:
            diffs.append(f"{what} field {fid}: jar {a} vs hmsclient {b}")
    return diffs


def method_fields(m: dict) -> tuple[dict, dict | None]:
    """(args fields, result fields or None for oneway) of a jar method."""
    result = None
    if not m["oneway"]:
        result = model_fields(m["throws"])
        if m["returns"]:
            result[0] = ("success", model_sig(m["returns"]))
    return model_fields(m["args"]), result


def own_methods(iface) -> set[str]:
    """Methods a generated Python Iface declares itself (not those inherited from fb303)."""
    return {n for n, v in vars(iface).items() if inspect.isfunction(v)}


def hmsclient_differences(model: dict) -> list[str]:
    """What hmsclient (generated from some Hive version) lacks or declares differently."""
    try:
        ttypes = importlib.import_module("hmsclient.genthrift.hive_metastore.ttypes")
        svc = importlib.import_module("hmsclient.genthrift.hive_metastore.ThriftHiveMetastore")
    except ImportError:
        return ["hmsclient is not installed; nothing cross-checked"]
    m = model["hive_metastore"]
    diffs = []
    for s in m["structs"]:
        cls = getattr(ttypes, s["name"], None)
        if cls is None:
            diffs.append(f"struct {s['name']}: missing in hmsclient")
        else:
            diffs += compare_fields(f"struct {s['name']}", model_fields(s["fields"]), spec_fields(cls))
    ours = {meth["name"] for meth in m["service"]["methods"]}
    theirs = own_methods(svc.Iface)
    diffs += [f"method {n}: missing in hmsclient" for n in sorted(ours - theirs)]
    diffs += [f"method {n}: only in hmsclient" for n in sorted(theirs - ours)]
    for meth in m["service"]["methods"]:
        if meth["name"] not in theirs:
            continue
        args, result = method_fields(meth)
        diffs += compare_fields(f"method {meth['name']} args", args,
                                spec_fields(getattr(svc, f"{meth['name']}_args")))
        their_result = getattr(svc, f"{meth['name']}_result", None)
        if (result is None) != (their_result is None):
            diffs.append(f"method {meth['name']}: oneway differs")
        elif result is not None:
            diffs += compare_fields(f"method {meth['name']} result", result, spec_fields(their_result))
    return diffs


# --------------------------------------------------------------------------- CLI

def summary(model: dict) -> str:
    m = model["hive_metastore"]
    kinds = [s["kind"] for s in m["structs"]]
    oneway = [x["name"] for p in model.values() for x in p["service"]["methods"] if x["oneway"]]
    return (f"hive_metastore: {len(m['service']['methods'])} methods, "
            f"{kinds.count('struct')} structs, {kinds.count('exception')} exceptions, "
            f"{kinds.count('union')} unions, {len(m['enums'])} enums, {len(m['constants'])} constants; "
            f"fb303: {len(model['fb303']['service']['methods'])} methods; oneway: {', '.join(oneway)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with the files on disk")
    parser.add_argument("--out", type=Path, default=HERE, help="directory for the .thrift files")
    args = parser.parse_args(argv)
    model23, newer = extract_all()
    model, conflicts = superset_model(model23, newer)
    files = {args.out / name: text for name, text in render_all(model).items()}
    files[GENERATIONS] = render_generations(model23, newer)
    stale = []
    for path, text in files.items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    print("2.3.10 " + summary(model23))
    print("superset " + summary(model))
    print(f"conflicts settled for the older generation ({len(conflicts)}):")
    print("\n".join(f"  {c}" for c in conflicts) or "  none")
    diffs = hmsclient_differences(model23)
    print(f"hmsclient differences from 2.3.10 ({len(diffs)}):")
    print("\n".join(f"  {d}" for d in diffs) or "  none")
    if stale:
        print(f"stale: {', '.join(stale)} (run python thrift/extract_idl.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
