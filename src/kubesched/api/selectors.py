"""Label selectors, node selectors and the kubectl selector string (`a=b,c!=d,e in (x,y),!f,g`).

Semantics are upstream's (apimachinery `labels`, component-helpers `nodeaffinity`):

* `LabelSelector`: `matchLabels` AND `matchExpressions` (In, NotIn, Exists, DoesNotExist). A missing
  selector (None) matches nothing; an empty one matches everything. Keys must be qualified names and
  values valid label values; In/NotIn need values, Exists/DoesNotExist take none.
* `NodeSelector`: terms are ORed, the requirements of a term ANDed; a term with no requirements, and
  a selector with no terms, match nothing. Expressions also allow Gt/Lt, which compare the single
  value and the node's label as 64-bit integers (a label that is not an integer does not match).
  `matchFields` supports only `metadata.name` with In/NotIn and exactly one value. A term that is
  invalid matches nothing while the other terms still count, as upstream's lazy-error selector does.

Selectors are evaluated for every pod/node pair, so they are compiled once into small matcher
objects (`compile_label_selector`, `compile_node_selector`); the `*_matches` functions compile on
the fly for one-off use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Final

from kubesched.api.meta import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from kubesched.api.objects import Pod
from kubesched.api.openapi import map_key_path
from kubesched.errors import InputError

__all__ = [
    "LabelSelectorMatcher",
    "NodeSelectorMatcher",
    "RequiredNodeAffinity",
    "compile_label_selector",
    "compile_node_selector",
    "format_label_selector",
    "is_qualified_name",
    "label_selector_matches",
    "label_value_error",
    "node_selector_map_matches",
    "node_selector_matches",
    "node_selector_term_matches",
    "parse_selector_string",
    "qualified_name_error",
    "required_node_affinity_matches",
]

# --------------------------------------------------------------------------- names and values

_NAME_RE = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
_NAME_CHARS_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_GO_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def qualified_name_error(name: str) -> str | None:
    """Why `name` is not a qualified name (`[prefix/]name`, as label keys are), or None if it is."""
    prefix, sep, short = name.rpartition("/")
    if sep:
        if "/" in prefix:
            return "a qualified name may contain at most one '/'"
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            return "prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters"
    if not short:
        return "name part must be non-empty"
    if len(short) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME_RE.fullmatch(short):
        return f"name part {_NAME_CHARS_MSG}"
    return None


def is_qualified_name(name: str) -> bool:
    """Whether `name` is a valid label key / qualified name (e.g. `app`, `example.com/tier`)."""
    return qualified_name_error(name) is None


def label_value_error(value: str) -> str | None:
    """Why `value` is not a valid label value (empty is valid), or None if it is."""
    if not value:
        return None
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _NAME_RE.fullmatch(value):
        return _NAME_CHARS_MSG
    return None


def _parse_go_int64(text: str) -> int | None:
    """`strconv.ParseInt(text, 10, 64)`: optional sign, decimal digits, int64 range; else None."""
    if not _GO_INT_RE.fullmatch(text):
        return None
    n = int(text)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def _join(path: str, child: str) -> str:
    if not path:
        return child
    return f"{path}{child}" if child.startswith("[") else f"{path}.{child}"


def _quote(text: str) -> str:
    return json.dumps(text)


# --------------------------------------------------------------------------- requirements

_IN: Final = 0
_NOT_IN: Final = 1
_EXISTS: Final = 2
_DOES_NOT_EXIST: Final = 3
_GT: Final = 4
_LT: Final = 5

_LABEL_OPERATORS = {"In": _IN, "NotIn": _NOT_IN, "Exists": _EXISTS, "DoesNotExist": _DOES_NOT_EXIST}
_NODE_OPERATORS = {**_LABEL_OPERATORS, "Gt": _GT, "Lt": _LT}

#: One compiled requirement: (key, operator code, value set for In/NotIn, bound for Gt/Lt).
_Requirement = tuple[str, int, frozenset[str], int]


def _requirement_matches(req: _Requirement, labels: Mapping[str, str]) -> bool:
    key, op, values, bound = req
    value = labels.get(key)
    if op == _IN:
        return value is not None and value in values
    if op == _NOT_IN:
        return value is None or value not in values
    if op == _EXISTS:
        return value is not None
    if op == _DOES_NOT_EXIST:
        return value is None
    if value is None:
        return False
    number = _parse_go_int64(value)
    if number is None:
        return False
    return number > bound if op == _GT else number < bound


def _supported(operators: Mapping[str, int]) -> str:
    return ", ".join(_quote(name) for name in operators)


def _compile_requirement(
    req: LabelSelectorRequirement | NodeSelectorRequirement, operators: Mapping[str, int], path: str
) -> _Requirement:
    """Validate one expression the way upstream's `NewRequirement` does and compile it."""
    problem = qualified_name_error(req.key)
    if problem is not None:
        raise InputError(f"invalid label key {_quote(req.key)}: {problem}", path=_join(path, "key"))
    op = operators.get(req.operator)
    if op is None:
        raise InputError(
            f"unsupported operator {_quote(req.operator)}: supported values: {_supported(operators)}",
            path=_join(path, "operator"),
        )
    values_path = _join(path, "values")
    bound = 0
    if op in (_IN, _NOT_IN):
        if not req.values:
            raise InputError("must be specified when `operator` is 'In' or 'NotIn'", path=values_path)
        for i, value in enumerate(req.values):
            problem = label_value_error(value)
            if problem is not None:
                raise InputError(
                    f"invalid label value {_quote(value)}: {problem}", path=f"{values_path}[{i}]"
                )
    elif op in (_EXISTS, _DOES_NOT_EXIST):
        if req.values:
            raise InputError(
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'", path=values_path
            )
    else:
        if len(req.values) != 1:
            raise InputError("must be exactly one value when `operator` is 'Gt' or 'Lt'", path=values_path)
        parsed = _parse_go_int64(req.values[0])
        if parsed is None:
            raise InputError(
                f"invalid value {_quote(req.values[0])}: must be an integer for 'Gt' and 'Lt'",
                path=f"{values_path}[0]",
            )
        bound = parsed
    return (req.key, op, frozenset(req.values), bound)


# --------------------------------------------------------------------------- label selectors


class LabelSelectorMatcher:
    """A compiled `LabelSelector`; call it (or `.matches`) with a label mapping."""

    __slots__ = ("_equals", "_nothing", "_requirements")

    def __init__(
        self,
        equals: tuple[tuple[str, str], ...] = (),
        requirements: tuple[_Requirement, ...] = (),
        *,
        nothing: bool = False,
    ) -> None:
        self._equals = equals
        self._requirements = requirements
        self._nothing = nothing

    @property
    def matches_everything(self) -> bool:
        return not self._nothing and not self._equals and not self._requirements

    @property
    def matches_nothing(self) -> bool:
        return self._nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self._nothing:
            return False
        for key, value in self._equals:
            if labels.get(key) != value:
                return False
        return all(_requirement_matches(req, labels) for req in self._requirements)

    __call__ = matches

    def __repr__(self) -> str:
        if self._nothing:
            return "LabelSelectorMatcher(<nothing>)"
        return f"LabelSelectorMatcher(equals={self._equals!r}, requirements={self._requirements!r})"


_NOTHING = LabelSelectorMatcher(nothing=True)
_EVERYTHING = LabelSelectorMatcher()


def compile_label_selector(selector: LabelSelector | None, *, path: str = "") -> LabelSelectorMatcher:
    """Validate and compile `selector`; None matches nothing, an empty selector everything.

    Raises `InputError` with a field path under `path` (e.g. `matchExpressions[1].values`).
    """
    if selector is None:
        return _NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return _EVERYTHING
    for key, value in selector.match_labels.items():
        labels_path = map_key_path(_join(path, "matchLabels"), key)
        problem = qualified_name_error(key)
        if problem is not None:
            raise InputError(f"invalid label key {_quote(key)}: {problem}", path=labels_path)
        problem = label_value_error(value)
        if problem is not None:
            raise InputError(f"invalid label value {_quote(value)}: {problem}", path=labels_path)
    requirements = tuple(
        _compile_requirement(req, _LABEL_OPERATORS, _join(path, f"matchExpressions[{i}]"))
        for i, req in enumerate(selector.match_expressions)
    )
    return LabelSelectorMatcher(tuple(selector.match_labels.items()), requirements)


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` satisfy `selector`. None matches nothing; an empty selector matches all.

    Those two cases mirror upstream: a pod affinity term or PDB without a selector selects no pods,
    while `selector: {}` selects every pod.
    """
    return compile_label_selector(selector).matches(labels)


# --------------------------------------------------------------------------- node selectors


class _CompiledTerm:
    __slots__ = ("fields", "requirements")

    def __init__(self, requirements: tuple[_Requirement, ...], fields: tuple[tuple[bool, str], ...]) -> None:
        self.requirements = requirements
        #: (is_in, node name) pairs for `metadata.name` In / NotIn.
        self.fields = fields

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        for req in self.requirements:
            if not _requirement_matches(req, labels):
                return False
        return all((node_name == name) == is_in for is_in, name in self.fields)


_FIELD_OPERATORS = {"In": True, "NotIn": False}


def _compile_field(req: NodeSelectorRequirement, path: str) -> tuple[bool, str]:
    if req.key != "metadata.name":
        raise InputError(
            f'unsupported field {_quote(req.key)}: supported values: "metadata.name"', path=_join(path, "key")
        )
    is_in = _FIELD_OPERATORS.get(req.operator)
    if is_in is None:
        raise InputError(
            f'unsupported operator {_quote(req.operator)}: supported values: "In", "NotIn"',
            path=_join(path, "operator"),
        )
    if len(req.values) != 1:
        raise InputError(
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            path=_join(path, "values"),
        )
    return is_in, req.values[0]


def _compile_term(term: NodeSelectorTerm, path: str) -> _CompiledTerm | None:
    """The compiled term, or None for an empty term (which matches nothing). Raises InputError."""
    if not term.match_expressions and not term.match_fields:
        return None
    requirements = tuple(
        _compile_requirement(req, _NODE_OPERATORS, _join(path, f"matchExpressions[{i}]"))
        for i, req in enumerate(term.match_expressions)
    )
    fields = tuple(
        _compile_field(req, _join(path, f"matchFields[{i}]")) for i, req in enumerate(term.match_fields)
    )
    return _CompiledTerm(requirements, fields)


class NodeSelectorMatcher:
    """A compiled `NodeSelector`. Invalid terms are kept in `errors` and never match."""

    __slots__ = ("_terms", "errors")

    def __init__(self, terms: tuple[_CompiledTerm, ...], errors: tuple[InputError, ...]) -> None:
        self._terms = terms
        self.errors = errors

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        return any(term.matches(node_name, labels) for term in self._terms)

    __call__ = matches


def compile_node_selector(selector: NodeSelector, *, path: str = "") -> NodeSelectorMatcher:
    """Compile `selector`; problems are collected in `.errors` (paths under `path`), not raised.

    Upstream evaluates the valid terms of a partly invalid selector, so a bad term must not stop
    the others; callers that validate input can raise `matcher.errors[0]`.
    """
    terms: list[_CompiledTerm] = []
    errors: list[InputError] = []
    for i, term in enumerate(selector.node_selector_terms):
        try:
            compiled = _compile_term(term, _join(path, f"nodeSelectorTerms[{i}]"))
        except InputError as err:
            errors.append(err)
            continue
        if compiled is not None:
            terms.append(compiled)
    return NodeSelectorMatcher(tuple(terms), tuple(errors))


def node_selector_term_matches(term: NodeSelectorTerm, node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether one term matches the node: all its requirements hold; empty or invalid: False."""
    try:
        compiled = _compile_term(term, "")
    except InputError:
        return False
    return compiled is not None and compiled.matches(node_name, labels)


def node_selector_matches(selector: NodeSelector, node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether any term of `selector` matches the node named `node_name` with `labels`."""
    return compile_node_selector(selector).matches(node_name, labels)


def node_selector_map_matches(node_selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """The pod's `spec.nodeSelector` check: every key present with exactly that value."""
    return all(labels.get(key) == value for key, value in node_selector.items())


class RequiredNodeAffinity:
    """A pod's hard node constraints: `spec.nodeSelector` AND required node affinity terms."""

    __slots__ = ("_affinity", "_node_selector")

    def __init__(self, pod: Pod) -> None:
        self._node_selector = tuple(pod.spec.node_selector.items())
        self._affinity: NodeSelectorMatcher | None = None
        affinity = pod.spec.affinity
        if affinity is not None and affinity.node_affinity is not None:
            required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
            if required is not None:
                path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                self._affinity = compile_node_selector(required, path=path)

    @property
    def errors(self) -> tuple[InputError, ...]:
        return self._affinity.errors if self._affinity is not None else ()

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        for key, value in self._node_selector:
            if labels.get(key) != value:
                return False
        return self._affinity is None or self._affinity.matches(node_name, labels)

    __call__ = matches


def required_node_affinity_matches(pod: Pod, node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether the node satisfies the pod's nodeSelector and required node affinity."""
    return RequiredNodeAffinity(pod).matches(node_name, labels)


# --------------------------------------------------------------------------- selector strings

_WHITESPACE = " \t\r\n"
_SYMBOLS = "=!(),<>"
_TWO_CHAR_SYMBOLS = ("!=", "==")
_END = ""


def _tokens(text: str) -> Iterator[tuple[str, int]]:
    """(token, position) pairs; identifiers are runs of anything but whitespace and symbols."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _WHITESPACE:
            i += 1
        elif ch in _SYMBOLS:
            width = 2 if text[i : i + 2] in _TWO_CHAR_SYMBOLS else 1
            yield text[i : i + width], i
            i += width
        else:
            start = i
            while i < n and text[i] not in _WHITESPACE and text[i] not in _SYMBOLS:
                i += 1
            yield text[start:i], start
    yield _END, n


def _is_identifier(token: str) -> bool:
    return token != _END and token[0] not in _SYMBOLS


class _SelectorParser:
    """Recursive-descent parser for the kubectl selector grammar (`kubectl get -l ...`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = list(_tokens(text))
        self.pos = 0

    def error(self, expected: str) -> InputError:
        token, where = self.tokens[self.pos]
        found = "end of string" if token == _END else _quote(token)
        return InputError(
            f"invalid selector {_quote(self.text)}: expected {expected}, found {found} at position {where}"
        )

    def peek(self) -> str:
        return self.tokens[self.pos][0]

    def take(self) -> str:
        token = self.tokens[self.pos][0]
        self.pos += 1
        return token

    def key(self) -> str:
        token = self.peek()
        if not _is_identifier(token) or token in ("in", "notin"):
            raise self.error("a label key")
        return self.take()

    def exact_value(self) -> str:
        token = self.peek()
        if token in (_END, ","):
            return ""  # `a=` selects an empty value
        if not _is_identifier(token):
            raise self.error("a value")
        return self.take()

    def value_set(self) -> list[str]:
        if self.peek() != "(":
            raise self.error('"("')
        self.take()
        values: list[str] = []
        expect_value = True
        while True:
            token = self.peek()
            if token == ")":
                if expect_value and values:
                    values.append("")  # `(a,)` holds an empty value, as upstream reads it
                self.take()
                break
            if token == ",":
                if expect_value:
                    values.append("")  # `(,a)` and `(a,,b)` hold empty values too
                self.take()
                expect_value = True
                continue
            if not expect_value or not _is_identifier(token):
                raise self.error('a value, "," or ")"')
            values.append(self.take())
            expect_value = False
        return list(dict.fromkeys(values))

    def requirement(self) -> tuple[str, str, list[str]]:
        """(key, operator, values) with operator one of = != in notin exists !exists > <."""
        if self.peek() == "!":
            self.take()
            return self.key(), "!exists", []
        key = self.key()
        token = self.peek()
        if token in (_END, ","):
            return key, "exists", []
        if token in ("=", "==", "!=", ">", "<"):
            self.take()
            return key, "!=" if token == "!=" else "=" if token == "==" else token, [self.exact_value()]
        if token in ("in", "notin"):
            self.take()
            return key, token, self.value_set()
        raise self.error('an operator ("=", "==", "!=", "in", "notin") or "," after the key')

    def parse(self) -> list[tuple[str, str, list[str]]]:
        requirements: list[tuple[str, str, list[str]]] = []
        if self.peek() == _END:
            return requirements
        while True:
            requirements.append(self.requirement())
            token = self.take()
            if token == _END:
                return requirements
            if token != ",":
                self.pos -= 1
                raise self.error('"," or end of string')
            if self.peek() == _END:
                raise self.error("a requirement after ','")


_STRING_OPERATORS = {
    "in": "In",
    "notin": "NotIn",
    "!=": "NotIn",
    "exists": "Exists",
    "!exists": "DoesNotExist",
}


def parse_selector_string(text: str) -> LabelSelector:
    """Parse the kubectl form (`a=b,c!=d,e in (x,y),!f,g`) into a `LabelSelector`.

    `=`/`==` become `matchLabels` (a second, different value for the same key becomes an `In`
    expression so that `a=b,a=c` still matches nothing); `!=` becomes `NotIn` with one value, which
    selects the same objects. `>`/`<` cannot be expressed in a LabelSelector and are refused. The
    empty string selects everything. Raises `InputError` naming the problem and its position.
    """
    match_labels: dict[str, str] = {}
    expressions: list[LabelSelectorRequirement] = []
    for key, operator, values in _SelectorParser(text).parse():
        if operator in (">", "<"):
            raise InputError(
                f"invalid selector {_quote(text)}: {operator!r} is not supported in label selectors"
            )
        if operator == "=":
            if key not in match_labels:
                match_labels[key] = values[0]
                continue
            if match_labels[key] == values[0]:
                continue
            expressions.append(LabelSelectorRequirement(key=key, operator="In", values=values))
        else:
            expressions.append(
                LabelSelectorRequirement(key=key, operator=_STRING_OPERATORS[operator], values=values)
            )
    selector = LabelSelector(match_labels=match_labels, match_expressions=expressions)
    try:
        compile_label_selector(selector)
    except InputError as err:
        raise InputError(f"invalid selector {_quote(text)}: {err.message}") from None
    return selector


def format_label_selector(selector: LabelSelector) -> str:
    """The kubectl form of `selector`; `parse_selector_string` reads it back to an equal selector."""
    parts = [f"{key}={value}" for key, value in sorted(selector.match_labels.items())]
    for req in selector.match_expressions:
        # A lone empty value is written `(,)`: `()` would be an empty set.
        values = ",".join(req.values) if req.values != [""] else ","
        if req.operator == "In":
            parts.append(f"{req.key} in ({values})")
        elif req.operator == "NotIn":
            parts.append(f"{req.key} notin ({values})")
        elif req.operator == "Exists":
            parts.append(req.key)
        elif req.operator == "DoesNotExist":
            parts.append(f"!{req.key}")
        else:
            raise InputError(f"operator {_quote(req.operator)} has no selector string form")
    return ",".join(parts)
