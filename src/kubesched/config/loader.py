"""Read a KubeSchedulerConfiguration file: parse, decode, validate, default; and write one back.

Every failure is one InputError naming the file and where in it: a YAML/JSON syntax error by
line and column, a decoding or validation error by field path (`sched.yaml: profiles[0].plugins.
filter.enabled[1].name: unknown plugin "Foo"`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect
import yaml

from kubesched.api.safe_yaml import check_yaml
from kubesched.api.strict import field_names_at, without_unknown_fields
from kubesched.config._util import quote
from kubesched.config.defaults import apply_defaults
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.config.plugin_catalog import PluginCatalog
from kubesched.config.types import KIND, KubeSchedulerConfiguration
from kubesched.config.validation import validate
from kubesched.errors import FieldErrors, InputError, did_you_mean

__all__ = ["decode_config", "dump_config", "load_config", "parse_document"]


def load_config(
    path: str | os.PathLike[str], registry: PluginCatalog, gates: FeatureGates = DEFAULT_GATES
) -> KubeSchedulerConfiguration:
    """The effective (validated, defaulted under `gates`) configuration in file `path`; plugins come
    from `registry`."""
    source = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", source=source) from None
    return decode_config(text, source, registry, gates)


def decode_config(
    text: str, source: str, registry: PluginCatalog, gates: FeatureGates = DEFAULT_GATES
) -> KubeSchedulerConfiguration:
    """The effective configuration in `text` (YAML or JSON); errors name `source`."""
    data = parse_document(text, source)
    if data is None:
        raise InputError("the file is empty; expected a KubeSchedulerConfiguration", source=source)
    _check_kind(data, source)
    info = msgspec.inspect.type_info(KubeSchedulerConfiguration)
    unknown: list[str] = []
    try:
        data = without_unknown_fields(data, info, "", unknown)
    except RecursionError:
        raise InputError("nested too deeply", source=source) from None
    # Every problem of the file in one run: its unknown fields, then a value of the wrong type or
    # else what validation finds.
    errors = [_unknown(path, info) for path in unknown]
    try:
        cfg = msgspec.convert(data, KubeSchedulerConfiguration)
    except RecursionError:
        raise InputError("nested too deeply", source=source) from None
    except msgspec.ValidationError as exc:
        message, path = _translate(str(exc))
        raise FieldErrors([*errors, InputError(message, path=path)], source=source) from None
    try:
        validate(cfg, registry, gates)
    except FieldErrors as exc:
        errors += exc.errors
    if errors:
        raise FieldErrors(errors, source=source)
    return apply_defaults(cfg, registry, gates)


def _unknown(path: str, info: msgspec.inspect.Type) -> InputError:
    parent, _, key = path.rpartition(".")
    return InputError("unknown field" + did_you_mean(key, field_names_at(info, parent)), path=path)


def _check_kind(data: Any, source: str) -> None:
    """A document of another kind is named as such, before its fields are reported as unknown."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind and kind != KIND:
        raise FieldErrors(
            [InputError(f"must be {quote(KIND)}, got {quote(kind)}", path="kind")], source=source
        )


def dump_config(cfg: KubeSchedulerConfiguration) -> str:
    """YAML of `cfg` with camelCase keys in the types' (stable) order; unset fields are left out."""
    return yaml.dump(
        msgspec.to_builtins(cfg),
        Dumper=yaml.CSafeDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
    )


def parse_document(text: str, source: str) -> Any:
    """The single YAML (or JSON) document in `text` as builtins; syntax errors give line and column.

    Nesting too deep for the parsers and alias bombs are refused with one line (see `safe_yaml`).
    """
    if text.lstrip().startswith("{"):
        # JSON (tabs and all) first; a YAML flow mapping is not JSON but is still accepted below.
        try:
            return msgspec.json.decode(text)
        except RecursionError:
            raise InputError("invalid JSON: nested too deeply", source=source) from None
        except msgspec.DecodeError as exc:
            json_error = _json_error(str(exc), text, source)
        check_yaml(text, source)
        try:
            return yaml.load(text, Loader=_StrictLoader)
        except yaml.YAMLError:
            raise json_error from None
    check_yaml(text, source)
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = ", ".join(part for part in (exc.context, exc.problem) if part) or "syntax error"
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InputError(f"invalid YAML: {message}", source=source, path=where) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", source=source) from None


# --------------------------------------------------------------------------- parsing


class _StrictLoader(yaml.CSafeLoader):
    """Safe loading that rejects duplicate keys, as upstream's strict decoding does."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, str | int | float | bool) or key is None:
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {quote(key)}", key_node.start_mark
                )
            seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _json_error(message: str, text: str, source: str) -> InputError:
    m = re.search(r"\(byte (\d+)\)", message)
    if m is None:
        return InputError(f"invalid JSON: {message}", source=source)
    offset = int(m.group(1))
    head = text.encode()[:offset].decode(errors="replace")
    line = head.count("\n") + 1
    column = len(head) - (head.rfind("\n") + 1) + 1
    detail = message[: m.start()].strip().removeprefix("JSON is malformed:").strip()
    return InputError(f"invalid JSON: {detail}", source=source, path=f"line {line}, column {column}")


def _translate(text: str) -> tuple[str, str]:
    """msgspec's `Object contains unknown field `x` - at `$.a[0]`` as (`unknown field`, `a[0].x`)."""
    message, sep, where = text.rpartition(" - at `$")
    if not sep:
        message, where = text, ""
    where = where.rstrip("`").lstrip(".")
    m = re.fullmatch(r"Object (contains unknown|missing required) field `(.+)`", message)
    if m is not None:
        where = f"{where}.{m.group(2)}" if where else m.group(2)
        message = "unknown field" if m.group(1) == "contains unknown" else "required field is missing"
    # Optional fields are `X | None` only so that "unset" can be told apart; users never write null.
    return message.replace("`", "").replace(" | null", ""), where
