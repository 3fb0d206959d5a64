"""MkDocs hooks: the reference pages generated at build time, never kept in git.

- ``reference/cli.md``: every command of ``hms-proxy`` (``hms_proxy.cli.build_parser()``,
  walked recursively through its subparsers): usage, description, arguments.
- ``reference/thrift-methods.md``: every method of the Thrift interface, the Hive generations
  whose IDL declares it (``hms_proxy.thrift.generations``) and whether the server serves it
  (``hms_proxy.hms.handler.served_methods``).
- ``reference/http-api.md``: the HTTP API from its OpenAPI 3 document
  (``hms_proxy.api.openapi.document()``), grouped by tag, with its schemas; the document itself
  is published beside it as ``reference/openapi.json``.

The project is imported inside the hook functions only, so that loading this file (which MkDocs
does when it reads ``mkdocs.yml``) does not import it.
"""
from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

CLI_PAGE = "reference/cli.md"
API_PAGE = "reference/http-api.md"
METHODS_PAGE = "reference/thrift-methods.md"
OPENAPI_FILE = "reference/openapi.json"
USAGE_WIDTH = 100  # columns of the usage blocks, whatever the terminal building the site

GENERATED_NOTE = ("<!-- Generated at build time by docs_hooks/reference.py from {source}: "
                  "edit that, not this page. -->\n")


# ---------------------------------------------------------------------------------------------
# MkDocs events

def on_files(files, config, **kwargs):
    root = Path(config["config_file_path"]).resolve().parent
    if str(root) not in sys.path:  # the project, even when it is not installed in the venv
        sys.path.insert(0, str(root))
    for uri in (CLI_PAGE, API_PAGE, OPENAPI_FILE, METHODS_PAGE):
        stale = files.get_file_from_path(uri)
        if stale is not None:  # a copy left in docs/ would shadow the generated page
            files.remove(stale)
    document = _openapi_document()
    files.append(File.generated(config, CLI_PAGE, content=render_cli(_cli_parser())))
    files.append(File.generated(config, API_PAGE, content=render_openapi(document)))
    files.append(File.generated(config, METHODS_PAGE, content=render_methods()))
    files.append(File.generated(config, OPENAPI_FILE,
                                content=json.dumps(document, indent=2, sort_keys=False) + "\n"))
    return files


def render_methods() -> str:
    """The Thrift methods page: one row a method."""
    with _project_call("hms_proxy.thrift.generations and the handler", "the Thrift methods page"):
        from hms_proxy.hms.handler import served_methods
        from hms_proxy.thrift.gen.fb303 import FacebookService
        from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
        from hms_proxy.thrift.generations import METHODS, VERSIONS
        from hms_proxy.thrift.processor import service_methods

        methods = service_methods((ThriftHiveMetastore, FacebookService))
        served = served_methods(methods)
    rows = []
    for name in sorted(methods, key=str.lower):
        declared = METHODS.get(name, VERSIONS[:1])  # fb303's: every generation's
        answer = f"served ({served[name].__name__})" if name in served else \
            "[unknown method](../compatibility.md#methods-answered-with-unknown_method)"
        rows.append([code(name)] + ["yes" if v in declared else "" for v in VERSIONS] + [answer])
    counts = ", ".join(
        f"{sum(1 for n in methods if n in served and v in METHODS.get(n, VERSIONS[:1]))} of "
        f"{sum(1 for n in methods if v in METHODS.get(n, VERSIONS[:1]))} for {v}"
        for v in VERSIONS)
    return (GENERATED_NOTE.format(source="hms_proxy/thrift/generations.py and the handler")
            + "# Thrift methods\n\n"
            "Every method of the interface (`thrift/hive_metastore.thrift`, the HMS 2.3.10 IDL with "
            "3.1.3's and 4.0.1's laid over it, and fb303's), the Hive generations whose IDL "
            "declares it, and what this server answers: the family of `hms_proxy/hms/` that "
            "serves it, or the unknown-method error the stock HMS gives for a method it does not "
            f"know (the reasons are in [Compatibility](../compatibility.md)). Served: {counts}.\n\n"
            + table(["Method", *VERSIONS, "Here"], rows) + "\n")


def _cli_parser() -> argparse.ArgumentParser:
    with _project_call("hms_proxy.cli.build_parser()", "the CLI reference"):
        from hms_proxy.cli import build_parser
        with _documented_environment():
            return build_parser()


def _openapi_document() -> dict:
    with _project_call("hms_proxy.api.openapi.document()", "the HTTP API reference"):
        from hms_proxy.api.openapi import document
        return document()


@contextlib.contextmanager
def _project_call(what: str, page: str):
    """A failure of the project's code fails the build in one line naming what failed (the
    reference pages are never built from anything else)."""
    try:
        yield
    except Exception as exc:
        raise PluginError(f"docs_hooks/reference.py: {page} comes from {what}, which failed: "
                          f"{type(exc).__name__}: {exc}") from exc


@contextlib.contextmanager
def _documented_environment():
    """Some defaults come from the environment (``HMS_STORE``, ``HMS_PORT``...): build the
    parser without those variables, so the page shows the defaults a user gets, not the
    builder's."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("HMS_")}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)


# ---------------------------------------------------------------------------------------------
# Markdown helpers

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def md_text(text: str, *, cell: bool = False) -> str:
    """``text`` as Markdown showing exactly those characters, code spans kept as code spans
    (descriptions of the OpenAPI document use them); ``cell``: inside a table cell."""
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_escape(text[pos:m.start()], cell))
        out.append(m.group(0).replace("\n", " "))
        pos = m.end()
    out.append(_escape(text[pos:], cell))
    result = "".join(out)
    if cell:
        result = " ".join(result.split())
    return result


def _escape(text: str, cell: bool) -> str:
    text = html.escape(text, quote=False)
    text = re.sub(r"([\\*_\[\]])", r"\\\1", text)
    if cell:
        text = text.replace("|", "\\|")
    return text


def code(text: str) -> str:
    """An inline code element for a table cell (HTML: pipes and backticks are safe in it)."""
    return "<code>" + html.escape(str(text), quote=False).replace("|", "&#124;") + "</code>"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# ---------------------------------------------------------------------------------------------
# The CLI reference

def _subcommands(parser: argparse.ArgumentParser):
    """(name, help, subparser) of every subcommand of ``parser``, in declaration order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from _subcommands_of(action)


def _subcommands_of(action: argparse._SubParsersAction):
    helps = {choice.dest: choice.help for choice in action._choices_actions}
    seen = set()
    for name, sub in action.choices.items():
        if id(sub) not in seen:  # aliases name a subcommand already listed
            seen.add(id(sub))
            yield name, helps.get(name), sub


def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    try:
        return parser.formatter_class(prog=parser.prog, width=USAGE_WIDTH)
    except TypeError:  # a formatter class that takes no width
        return parser.formatter_class(prog=parser.prog)


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = _formatter(parser)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or isinstance(action, (argparse._HelpAction,
                                                  argparse._SubParsersAction)):
        return ""  # flags: present or not
    default = action.default
    if default is None or default == argparse.SUPPRESS or default == [] or default == "":
        return ""
    if isinstance(default, (list, tuple)):
        default = " ".join(str(v) for v in default)
    return code(default)


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    out = []
    formatter = _formatter(parser)
    for group in parser._action_groups:
        rows = []
        for action in group._group_actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                for name, help_text, sub in _subcommands_of(action):
                    rows.append([f"[{code(name)}](#{slug(sub.prog)})",
                                 "", md_text(help_text or "", cell=True)])
                continue
            invocation = formatter._format_action_invocation(action)
            required = action.required and bool(action.option_strings)
            help_text = formatter._expand_help(action) if action.help else ""
            if required:
                help_text = (help_text + " (required)").strip()
            if action.choices and not isinstance(action.choices, dict) \
                    and action.metavar is not None:
                help_text += " (one of: " + ", ".join(str(c) for c in action.choices) + ")"
            rows.append([code(invocation), _default(action), md_text(help_text, cell=True)])
        if rows:
            title = group.title or "arguments"
            out.append(f"**{md_text(title[:1].upper() + title[1:])}**\n")
            if group.description:
                out.append(md_text(group.description) + "\n")
            out.append(table(["Argument", "Default", "Description"], rows))
    return out


def render_cli(parser: argparse.ArgumentParser) -> str:
    parts = [GENERATED_NOTE.format(source="hms_proxy.cli.build_parser()"),
             "# CLI reference\n",
             "Every command of `hms-proxy`, generated from its argument parsers when the site is "
             "built (`hms-proxy COMMAND --help` prints the same). Defaults are shown as a user "
             "gets them with no `HMS_*` variable set in the environment.\n"]
    commands = []

    def walk(p: argparse.ArgumentParser, help_text: str | None, depth: int):
        anchor = slug(p.prog)
        commands.append((p.prog, help_text, anchor, depth))
        level = "#" * min(2 + max(depth - 1, 0), 6)
        body = [f"{level} {p.prog} {{#{anchor}}}\n"]
        if help_text and depth:
            body.append(f"*{md_text(help_text)}*\n")
        if p.description:
            body.append(md_text(p.description) + "\n")
        body.append("```text\n" + _usage(p) + "\n```\n")
        body += _arguments(p)
        if p.epilog:
            body.append(md_text(p.epilog) + "\n")
        sections.append("\n".join(body))
        for name, sub_help, sub in _subcommands(p):
            walk(sub, sub_help, depth + 1)

    sections: list[str] = []
    walk(parser, None, 0)
    index = ["| Command | What it does |", "|---|---|"]
    for prog, help_text, anchor, depth in commands[1:]:
        index.append(f"| [{code(prog)}](#{anchor}) | {md_text(help_text or '', cell=True) or ' '} |")
    parts.append("\n".join(index) + "\n")
    parts += sections
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# The HTTP API reference

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def _schema_anchor(name: str) -> str:
    return "schema-" + slug(name)


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def schema_type(schema: dict) -> str:
    """A one-line Markdown description of a schema's type, with links to named schemas."""
    if not schema:
        return "any"
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        text = f"[{name}](#{_schema_anchor(name)})"
    elif "allOf" in schema and len(schema["allOf"]) == 1:
        text = schema_type(schema["allOf"][0])
    elif "allOf" in schema or "oneOf" in schema or "anyOf" in schema:
        key = next(k for k in ("allOf", "oneOf", "anyOf") if k in schema)
        joiner = {"allOf": " and ", "oneOf": " or ", "anyOf": " or "}[key]
        text = joiner.join(schema_type(s) for s in schema[key])
    else:
        kind = schema.get("type", "object" if "properties" in schema else "any")
        if kind == "array":
            text = "array of " + schema_type(schema.get("items") or {})
        elif kind == "object" and isinstance(schema.get("additionalProperties"), dict) \
                and not schema.get("properties"):
            text = "map of string to " + schema_type(schema["additionalProperties"])
        else:
            text = kind
            if schema.get("format"):
                text += f" ({schema['format']})"
    if schema.get("nullable"):
        text += ", nullable"
    return text


def _constraints(schema: dict) -> str:
    notes = []
    if "enum" in schema:
        notes.append("one of " + ", ".join(code(json.dumps(v)) for v in schema["enum"]))
    if "default" in schema:
        notes.append("default " + code(json.dumps(schema["default"])))
    for key, label in (("minimum", "minimum"), ("maximum", "maximum"),
                       ("minLength", "min length"), ("maxLength", "max length"),
                       ("minItems", "min items"), ("maxItems", "max items")):
        if key in schema:
            notes.append(f"{label} {schema[key]}")
    if "example" in schema and not isinstance(schema["example"], (dict, list)):
        notes.append("example " + code(json.dumps(schema["example"])))
    return "; ".join(notes)


def _property_rows(schema: dict, prefix: str = "") -> list[list[str]]:
    """Rows (field, type, required, description) of an object schema's properties, the
    properties of inline objects (and arrays of them) listed under dotted names."""
    rows = []
    required = set(schema.get("required") or [])
    for name, prop in (schema.get("properties") or {}).items():
        full = prefix + name
        description = md_text(prop.get("description", ""), cell=True)
        extra = _constraints(prop)
        rows.append([code(full), schema_type(prop), "yes" if name in required else "",
                     "; ".join(x for x in (description, extra) if x)])
        inner = prop
        suffix = "."
        while inner.get("type") == "array" and isinstance(inner.get("items"), dict):
            inner, suffix = inner["items"], "[]."
        if "$ref" not in inner and inner.get("properties"):
            rows += _property_rows(inner, full + suffix)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and schema.get("properties"):
        rows.append([code(prefix + "*"), schema_type(extra), "",
                     "any other key"])
    return rows


def _schema_block(schema: dict) -> list[str]:
    out = []
    if "$ref" in schema or schema.get("type") == "array" or "properties" not in schema:
        out.append(f"Type: {schema_type(schema)}.\n")
        constraints = _constraints(schema)
        if constraints:
            out.append(constraints + ".\n")
    if schema.get("properties"):
        out.append(table(["Field", "Type", "Required", "Description"], _property_rows(schema)))
        if schema.get("additionalProperties") is False:
            out.append("No other field.\n")
    if isinstance(schema.get("example"), (dict, list)):
        out.append("Example:\n\n```json\n" + json.dumps(schema["example"], indent=2) + "\n```\n")
    return out


def _operation(path: str, method: str, op: dict, shared_parameters: list) -> str:
    title = f"{method.upper()} {path}"
    anchor = "op-" + slug(op.get("operationId") or title)
    out = [f"### {md_text(title)} {{#{anchor}}}\n"]
    if op.get("summary"):
        out.append(f"**{md_text(op['summary'])}**\n")
    if op.get("description"):
        out.append(md_text(op["description"]) + "\n")
    if op.get("operationId"):
        out.append(f"Operation id: `{op['operationId']}`.\n")
    parameters = list(shared_parameters) + list(op.get("parameters") or [])
    if parameters:
        rows = []
        for p in parameters:
            schema = p.get("schema") or {}
            notes = [md_text(p.get("description", ""), cell=True), _constraints(schema)]
            if "example" in p:
                notes.append("example " + code(p["example"]))
            rows.append([code(p["name"]), p.get("in", ""), schema_type(schema),
                         "yes" if p.get("required") else "",
                         "; ".join(n for n in notes if n)])
        out.append("Parameters:\n")
        out.append(table(["Name", "In", "Type", "Required", "Description"], rows))
    body = op.get("requestBody")
    if body:
        for content_type, media in (body.get("content") or {}).items():
            required = " (required)" if body.get("required") else ""
            out.append(f"Request body, `{content_type}`{required}:\n")
            if body.get("description"):
                out.append(md_text(body["description"]) + "\n")
            out += _schema_block(media.get("schema") or {})
    rows = []
    for status, response in (op.get("responses") or {}).items():
        content = response.get("content") or {}
        kinds = "; ".join(f"`{ct}`: {schema_type(m.get('schema') or {})}"
                          for ct, m in content.items())
        rows.append([code(status), md_text(response.get("description", ""), cell=True),
                     kinds])
    if rows:
        out.append("Responses:\n")
        out.append(table(["Status", "Description", "Body"], rows))
    return "\n".join(out)


def render_openapi(doc: dict) -> str:
    info = doc.get("info") or {}
    parts = [GENERATED_NOTE.format(source="hms_proxy.api.openapi.document()"),
             "# HTTP API reference\n",
             f"**{md_text(info.get('title', 'HTTP API'))}**, version "
             f"`{info.get('version', '?')}` (OpenAPI `{doc.get('openapi', '3')}`). Generated "
             "from the OpenAPI document the server publishes at `/api/openapi.json`, when the "
             "site is built. Download it: [openapi.json](openapi.json).\n"]
    if info.get("description"):
        parts.append(md_text(info["description"]) + "\n")
    servers = doc.get("servers") or []
    if servers:
        parts.append("Servers: " + ", ".join(f"`{s.get('url')}`" for s in servers) + ".\n")
    schemes = (doc.get("components") or {}).get("securitySchemes") or {}
    if schemes:
        rows = []
        for name, scheme in schemes.items():
            how = scheme.get("type", "")
            if scheme.get("scheme"):
                how += f" ({scheme['scheme']})"
            if scheme.get("in"):
                how += f", {scheme['in']} `{scheme.get('name')}`"
            rows.append([code(name), md_text(how, cell=True),
                         md_text(scheme.get("description", ""), cell=True)])
        parts.append("## Authentication\n")
        requirements = doc.get("security") or []
        if requirements:
            options = [" and ".join(sorted(r)) or "anonymous" for r in requirements]
            parts.append("Accepted, per request: " + ", ".join(options) + ".\n")
        parts.append(table(["Scheme", "How", "Description"], rows))

    # operations grouped by their first tag, in the order of the document's tags
    tag_order = [t["name"] for t in doc.get("tags") or []]
    tag_info = {t["name"]: t for t in doc.get("tags") or []}
    grouped: dict[str, list] = {}
    for path, item in (doc.get("paths") or {}).items():
        shared = item.get("parameters") or []
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            tag = (op.get("tags") or ["other"])[0]
            grouped.setdefault(tag, []).append((path, method, op, shared))
    for tag in grouped:
        if tag not in tag_order:
            tag_order.append(tag)

    index = ["| Method and path | Summary |", "|---|---|"]
    sections = []
    for tag in tag_order:
        ops = grouped.get(tag)
        if not ops:
            continue
        sections.append(f"## {md_text(tag[:1].upper() + tag[1:])} {{#tag-{slug(tag)}}}\n")
        if tag_info.get(tag, {}).get("description"):
            sections.append(md_text(tag_info[tag]["description"]) + "\n")
        for path, method, op, shared in ops:
            anchor = "op-" + slug(op.get("operationId") or f"{method} {path}")
            index.append(f"| [{code(method.upper() + ' ' + path)}](#{anchor}) | "
                         f"{md_text(op.get('summary', ''), cell=True) or ' '} |")
            sections.append(_operation(path, method, op, shared))
    parts.append("## Endpoints\n")
    parts.append("\n".join(index) + "\n")
    parts += sections

    schemas = (doc.get("components") or {}).get("schemas") or {}
    if schemas:
        parts.append("## Schemas\n")
        for name, schema in schemas.items():
            parts.append(f"### {md_text(name)} {{#{_schema_anchor(name)}}}\n")
            if schema.get("description"):
                parts.append(md_text(schema["description"]) + "\n")
            parts += _schema_block(schema)
    return "\n".join(parts)
