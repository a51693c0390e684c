"""A fast path for plain YAML: rapidyaml parses and writes JSON in C++, msgspec decodes that.

Even built from libyaml's events (`yaml_events`), a `kubectl get -o yaml` snapshot loads about three
times slower than the same objects as JSON: libyaml hands Python one event object per token. rapidyaml
(ryml) parses the text and emits it as JSON without touching Python, and msgspec decodes the JSON
as fast as a JSON input. ryml's tree takes about ten times the text it holds, so a kubectl list is
parsed CHUNK characters of entries at a time (`_split_items`), each tree emptied before its JSON is
decoded: the peak is then what the decoded objects take, as for a JSON input.

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
costs the fast path. It looks at one line at a time, so the loader hands it the text's distinct
lines (`yaml_lines`), a twentieth of a snapshot. A parse error declines as well, so error messages
keep PyYAML's file and line.
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
#: Where a plain scalar or key ends (a key's colon included, and the spaces before it: `0 : a` has
#: the int key 0): the patterns below find every whole token that starts like a YAML 1.1 or JSON
#: number or a YAML 1.1 word, and then some (a superset is safe).
#: Each starts with its first character's class, so that `re` skips ahead at C speed; the
#: look-behind then asks that the token start a scalar (after a space, a line break, `[`, `{`, `,`).
_END = r"(?: *:(?=\s|\Z)|(?=[\s,\]}]|\Z))"
_NUMBER_RE = re.compile(r"[-+.0-9](?<![^\s\[{,].)[0-9A-Za-z_:.+-]*" + _END)
_WORD_RE = re.compile(
    r"[yYnNoOtTfF~=](?<![^\s\[{,].)"
    r"(?:(?<=[yY])(?:es|ES)|(?<=[nN])(?:o|O|ull|ULL)|(?<=[oO])(?:n|N|ff|FF)"
    r"|(?<=[tT])(?:rue|RUE)|(?<=[fF])(?:alse|ALSE)|(?<=[~=]))" + _END
)
#: What ryml reads more leniently than PyYAML, which refuses it: a plain scalar starting with a
#: reserved indicator (in a flow collection too: `[@x]`), a stray closing bracket; a colon that
#: opens a line, a flow entry or a block entry (an empty key: `- :`, `[:]`; in a flow, `[:x]` too).
_LENIENT_RE = re.compile(r"[`@%](?<![^\s,\[{].)|[}\]](?<![^\s,].)")
_EMPTY_KEY_RE = re.compile(r"(?:\n|[\[{,]|- ) *:")
#: A quoted scalar that opens a line (a key, an entry, a value on its own line) and runs on to the
#: next: ryml takes it as a key too, PyYAML refuses a key over several lines.
_MULTILINE_QUOTE_RE = re.compile(r"""\n *(?:- +)*(?:'(?:[^'\n]|'')*|"(?:[^"\\\n]|\\.)*\\?)\n""")
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
    token = token[:-1].rstrip(" ") if key else token
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


def declines(text: str, lines: str | None = None) -> bool:
    """Whether `text` may hold a construct that ryml and our YAML 1.1 loader read differently.
    Every scan but the first looks at one line at a time, so `lines`, the text's distinct lines
    (`yaml_lines.distinct_lines`), give the same answer faster."""
    if text.lstrip(" ").startswith(("%", "---", "...", ":")):
        return True
    scanned = text if lines is None else lines
    if any(part in scanned for part in _DECLINED):
        return True
    if _LENIENT_RE.search(scanned) or _EMPTY_KEY_RE.search(scanned) or _inf_or_nan(scanned):
        return True
    if _MULTILINE_QUOTE_RE.search(scanned):
        return True
    tokens = set(_NUMBER_RE.findall(scanned))
    tokens.update(_WORD_RE.findall(scanned))
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


def load_fast(text: str, lines: str | None = None) -> list[Any] | None:
    """The one document of `text` (a mapping or a list), or None where the event path must load it;
    `lines` as for `declines`."""
    if ryml is None or not text.strip() or declines(text, lines):
        return None
    try:
        with _quiet_stderr():
            split = _split_items(text)
            doc = _parse(text) if split is None else _parse_list(*split)
    except Exception:  # a parse error, or JSON ryml wrote for a scalar msgspec will not read
        return None
    if not isinstance(doc, dict | list):
        return None
    return [doc]


def _parse(text: str, tree: Any = None) -> Any:
    """`text` parsed by ryml, written out as JSON and decoded. The tree is freed (or, when given,
    emptied for the next call) before the JSON is decoded: it is ten times the text's size."""
    parsed = ryml.parse_in_arena(text.encode("utf-8"), tree=tree)
    out = ryml.emit_json_malloc(parsed, parsed.root_id())
    if tree is None:
        del parsed
    else:
        tree.clear()
        tree.clear_arena()
    return msgspec.json.decode(out)


#: A top-level `items:` key whose value is a block sequence at column 0 (`kubectl get -o yaml`).
_ITEMS_RE = re.compile(r"^items:\n(?=-[ \n])", re.MULTILINE)
#: The first line at column 0 that can no longer belong to that sequence: not an entry (`- `),
#: an indented line, a blank line or a comment.
_ITEMS_END_RE = re.compile(r"\n(?![- \n#])")
#: The start of an entry of that sequence (what follows the line break).
_ENTRY_RE = re.compile(r"\n(?=-[ \n])")
#: The line that must follow the sequence: a simple key of the top-level mapping.
_KEY_LINE_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*:[ \n]")
#: Characters of entries parsed at a time: ryml's tree takes about ten times the text it holds.
CHUNK = 1 << 18


def _split_items(text: str) -> tuple[str, list[str]] | None:
    """A kubectl list cut into its mapping without the items (`items: []` in their place) and
    chunks of whole entries, each a block sequence at column 0 as in the text; None when `text` is
    not that shape (then it is parsed whole).

    A chunk keeps its lines and columns, so ryml reads each entry as it would in the whole text. An
    entry start found inside a quoted scalar that runs across lines would cut that scalar: the
    piece before ends inside quotes, which ryml refuses, and the whole text goes to the event path.
    """
    found = _ITEMS_RE.search(text)
    if found is None or len(text) < 2 * CHUNK:
        return None
    start = found.end()
    end_match = _ITEMS_END_RE.search(text, start)
    end = len(text) if end_match is None else end_match.start() + 1
    if end < len(text) and not _KEY_LINE_RE.match(text, end):
        return None
    head = text[: found.start()] + "items: []\n" + text[end:]
    if _ITEMS_RE.search(head):
        return None  # a second `items` list: left to the whole parse
    chunks: list[str] = []
    while start < end:
        entry = _ENTRY_RE.search(text, start + CHUNK, end) if start + CHUNK < end else None
        cut = end if entry is None else entry.end()
        chunks.append(text[start:cut])
        start = cut
    return head, chunks


def _parse_list(head_text: str, chunks: list[str]) -> Any:
    """The list of `_split_items`: its mapping, with the entries of every chunk as `items`."""
    head = _parse(head_text)
    if not isinstance(head, dict) or head.get("items") != []:
        raise ValueError("not a list")
    items: list[Any] = []
    tree = ryml.Tree()
    for chunk in chunks:
        part = _parse(chunk, tree)
        if not isinstance(part, list):
            raise ValueError("not a sequence")
        items.extend(part)
    head["items"] = items
    return head
