"""A fast path for plain YAML: rapidyaml parses and writes JSON in C++, msgspec decodes that.

Even built from libyaml's events (`yaml_events`), a `kubectl get -o yaml` snapshot loads about three
times slower than the same objects as JSON: libyaml hands Python one event object per token. rapidyaml
(ryml) parses the whole text and emits it as JSON without touching Python, and msgspec decodes
the JSON as fast as a JSON input; together they take under half of the event path's time, for about
twice its peak memory (ryml's tree and the JSON text).

ryml reads YAML 1.2, our loader (PyYAML's safe loader) reads YAML 1.1: `yes`, `on`, `0777`,
`1_000`, `1:30`, `~` are booleans, numbers or null there and strings (or other numbers) to ryml.
So `load_fast` declines (returns None, and the event path loads the text) whenever the text
holds anything where the two could part:

* a token placed where it may be a whole plain scalar that is not a string, unless it is
  `true`, `false`, `null`, a short decimal integer or a decimal fraction, which both read alike;
  a timestamp stays a string in both (our loader keeps the text, as the API server does);
* a plain key that would not be a string (`1: a`, `yes: b`);
* anchors, aliases, tags, merge keys, directives, several documents, tabs, carriage returns,
  complex keys: rare in snapshots, and left to PyYAML's exact rules.

The scan over-approximates (a `yes` inside a quoted string declines too): a false alarm only
costs the fast path. A parse error declines as well, so error messages keep PyYAML's file and line.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

import msgspec
import yaml

try:
    import ryml
except ImportError:  # pragma: no cover - a pinned dependency; without it YAML takes the event path
    ryml = None

__all__ = ["load_fast"]

#: Text whose YAML meaning the fast path leaves to PyYAML: anchors, aliases, tags, tabs, carriage
#: returns, a byte-order mark, merge keys, complex keys; at a line's start directives, document markers.
_DECLINED = ("&", "*", "!", "\t", "\r", "\ufeff", "<<", "? ", "?\n", "\n%", "\n---", "\n...")
#: Where a plain scalar or key (colon included) ends: the patterns below find every whole token
#: that starts like a YAML 1.1 or JSON number or a YAML 1.1 word, and then some (a superset is safe).
#: Each starts with its first character's class, so that `re` skips ahead at C speed; the
#: look-behind then asks that the token start a scalar (after a space, a line break, `[`, `{`, `,`).
_END = r"(?::(?=\s|\Z)|(?=[\s,\]}]|\Z))"
_NUMBER_RE = re.compile(r"[-+.0-9](?<![^\s\[{,].)[0-9A-Za-z_:.+-]*" + _END)
_WORD_RE = re.compile(
    r"[yYnNoOtTfF~=](?<![^\s\[{,].)"
    r"(?:(?<=[yY])(?:es|ES)|(?<=[nN])(?:o|O|ull|ULL)|(?<=[oO])(?:n|N|ff|FF)"
    r"|(?<=[tT])(?:rue|RUE)|(?<=[fF])(?:alse|ALSE)|(?<=[~=]))" + _END
)
#: What ryml reads more leniently than PyYAML, which refuses it: a plain scalar starting with a
#: reserved indicator (in a flow collection too: `[@x]`), a stray closing bracket, an empty key.
_LENIENT_RE = re.compile(r"[`@%](?<![^\s,\[{].)|[}\]](?<![^\s,].)|\n *:(?:\s|\Z)")
#: ryml writes a scalar reading `inf` or `nan` (any case, sign, dot; quoted too) as `.inf`/`.nan`:
#: these find them in the lower-cased text, `_inf_or_nan` looks at what precedes.
_INF_RE = re.compile(r"inf(?![^\s,\]}'\":])")
_NAN_RE = re.compile(r"nan(?![^\s,\]}'\":])")
#: Values that ryml writes as the JSON our loader's value reads back as.
_AGREED_RE = re.compile(r"true|false|null|-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,15})?")
_JSON_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_RESOLVER = yaml.resolver.Resolver()
_STR_TAGS = frozenset({"tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp"})  # timestamps stay text


def _parts(token: str) -> bool:
    """Whether ryml and our loader may read the plain scalar `token` (a key if it ends in `:`) apart."""
    key = token.endswith(":")
    token = token.rstrip(":") if key else token
    tag = _RESOLVER.resolve(yaml.ScalarNode, token, (True, False))  # type: ignore[no-untyped-call]
    if tag in _STR_TAGS:
        return bool(_JSON_NUMBER_RE.fullmatch(token))  # `1e3`: text to YAML 1.1, a number to ryml
    return key or not _AGREED_RE.fullmatch(token)  # `yes`, `0777`, `~`, or a key that is no string


def _inf_or_nan(text: str) -> bool:
    lower = text.lower()
    for match in (*_INF_RE.finditer(lower), *_NAN_RE.finditer(lower)):
        head = lower[: match.start()].rstrip(".+-")[-1:]
        if head in ("", " ", "\n", "[", "{", ",", "'", '"'):
            return True
    return False


def declines(text: str) -> bool:
    """Whether `text` may hold a construct that ryml and our YAML 1.1 loader read differently."""
    if text.lstrip(" ").startswith(("%", "---", "...", ":")) or any(part in text for part in _DECLINED):
        return True
    if _LENIENT_RE.search(text) or _inf_or_nan(text):
        return True
    tokens = set(_NUMBER_RE.findall(text))
    tokens.update(_WORD_RE.findall(text))
    return any(_parts(token) for token in tokens)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2: ryml prints its parse errors there from C++, and the event path
    reports the same error in our words (file and line) right after."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def load_fast(text: str) -> list[Any] | None:
    """The one document of `text` (a mapping or a list), or None where the event path must load it."""
    if ryml is None or not text.strip() or declines(text):
        return None
    try:
        with _quiet_stderr():
            tree = ryml.parse_in_arena(text.encode("utf-8"))
        out = ryml.emit_json_malloc(tree, tree.root_id())
        doc = msgspec.json.decode(out)
    except Exception:  # a parse error, or JSON ryml wrote for a scalar msgspec will not read
        return None
    if not isinstance(doc, dict | list):
        return None
    return [doc]
