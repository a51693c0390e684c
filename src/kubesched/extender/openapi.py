"""The OpenAPI document of the extender's HTTP endpoints.

Written by hand rather than derived from the Structs, because what matters to a reader is the wire
contract of `k8s.io/kube-scheduler/extender/v1` - Go field names, which fields may be `null`, the
0..10 score range - not the Python types behind it. The copy in the repository
(`docs/extender-openapi.json`) is this document for the default paths; a test keeps them equal.
Regenerate it with `python -m kubesched.extender.openapi > docs/extender-openapi.json`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from kubesched import __version__

__all__ = ["DEFAULT_PATHS", "openapi_document"]

#: verb -> path served when no `--*-verb`/`--prefix` flag changes them.
DEFAULT_PATHS: dict[str, str] = {
    "filter": "/filter",
    "prioritize": "/prioritize",
    "preempt": "/preempt",
    "bind": "/bind",
}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}

SCHEMAS: dict[str, Any] = {
    "Pod": {
        "type": "object",
        "description": "A core/v1 Pod in ordinary Kubernetes JSON (metadata, spec, status).",
        "additionalProperties": True,
    },
    "NodeList": {
        "type": "object",
        "description": "A core/v1 NodeList in ordinary Kubernetes JSON; only `items` is read.",
        "properties": {"items": {"type": "array", "items": {"type": "object", "additionalProperties": True}}},
        "additionalProperties": True,
    },
    "ExtenderArgs": {
        "type": "object",
        "description": (
            "Request of filter and prioritize. `Nodes` is set when the caller's nodeCacheCapable is "
            "false, `NodeNames` when it is true; the other one is null. Keys are matched "
            "case-insensitively."
        ),
        "properties": {
            "Pod": _ref("Pod"),
            "Nodes": _nullable(_ref("NodeList")),
            "NodeNames": _nullable({"type": "array", "items": {"type": "string"}}),
        },
        "required": ["Pod"],
    },
    "ExtenderFilterResult": {
        "type": "object",
        "description": (
            "Reply of filter: the passing nodes in the same form as the request (`Nodes` echoes the "
            "passing items unchanged, or `NodeNames`), failures whose status was "
            "UnschedulableAndUnresolvable in `FailedAndUnresolvableNodes` and the others in "
            "`FailedNodes`; a non-empty `Error` fails the whole call."
        ),
        "properties": {
            "Nodes": _nullable(_ref("NodeList")),
            "NodeNames": _nullable({"type": "array", "items": {"type": "string"}}),
            "FailedNodes": _nullable(_STRING_MAP),
            "FailedAndUnresolvableNodes": _nullable(_STRING_MAP),
            "Error": {"type": "string"},
        },
        "required": ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"],
    },
    "HostPriority": {
        "type": "object",
        "properties": {
            "Host": {"type": "string"},
            "Score": {"type": "integer", "format": "int64", "minimum": 0, "maximum": 10},
        },
        "required": ["Host", "Score"],
    },
    "HostPriorityList": {"type": "array", "items": _ref("HostPriority")},
    "ExtenderBindingArgs": {
        "type": "object",
        "properties": {
            "PodName": {"type": "string"},
            "PodNamespace": {"type": "string"},
            "PodUID": {"type": "string"},
            "Node": {"type": "string"},
        },
        "required": ["PodName", "Node"],
    },
    "ExtenderBindingResult": {
        "type": "object",
        "properties": {"Error": {"type": "string"}},
        "required": ["Error"],
    },
    "MetaPod": {"type": "object", "properties": {"UID": {"type": "string"}}, "required": ["UID"]},
    "Victims": {
        "type": "object",
        "properties": {
            "Pods": _nullable({"type": "array", "items": _ref("Pod")}),
            "NumPDBViolations": {"type": "integer", "format": "int64"},
        },
    },
    "MetaVictims": {
        "type": "object",
        "properties": {
            "Pods": _nullable({"type": "array", "items": _ref("MetaPod")}),
            "NumPDBViolations": {"type": "integer", "format": "int64"},
        },
    },
    "ExtenderPreemptionArgs": {
        "type": "object",
        "description": (
            "Request of preempt: `NodeNameToMetaVictims` (victims' UIDs) when the caller's "
            "nodeCacheCapable is true, else `NodeNameToVictims` (full pods)."
        ),
        "properties": {
            "Pod": _ref("Pod"),
            "NodeNameToVictims": _nullable({"type": "object", "additionalProperties": _ref("Victims")}),
            "NodeNameToMetaVictims": _nullable(
                {"type": "object", "additionalProperties": _ref("MetaVictims")}
            ),
        },
        "required": ["Pod"],
    },
    "ExtenderPreemptionResult": {
        "type": "object",
        "description": "The candidate nodes on which the pod fits this extender once the victims are gone.",
        "properties": {
            "NodeNameToMetaVictims": _nullable(
                {"type": "object", "additionalProperties": _ref("MetaVictims")}
            ),
        },
        "required": ["NodeNameToMetaVictims"],
    },
}

_VERBS: dict[str, tuple[str, str, str]] = {
    # verb: (request schema, response schema, summary)
    "filter": (
        "ExtenderArgs",
        "ExtenderFilterResult",
        "Filter the candidate nodes with the profile's filters",
    ),
    "prioritize": ("ExtenderArgs", "HostPriorityList", "Score the candidate nodes 0..10"),
    "preempt": (
        "ExtenderPreemptionArgs",
        "ExtenderPreemptionResult",
        "Keep the preemption candidates on which the pod fits without its victims",
    ),
    "bind": ("ExtenderBindingArgs", "ExtenderBindingResult", "Bind the pod through the API server"),
}

_TEXT_ERROR = {"text/plain": {"schema": {"type": "string"}}}


def _operation(verb: str) -> dict[str, Any]:
    request, response, summary = _VERBS[verb]
    return {
        "post": {
            "operationId": verb,
            "summary": summary,
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref(request)}},
            },
            "responses": {
                "200": {"description": response, "content": {"application/json": {"schema": _ref(response)}}},
                "400": {"description": "Malformed JSON or a body of the wrong shape", "content": _TEXT_ERROR},
                "401": {"description": "Missing or wrong bearer token", "content": _TEXT_ERROR},
                "413": {"description": "Body larger than --max-body-bytes", "content": _TEXT_ERROR},
                "500": {"description": "A plugin failed", "content": _TEXT_ERROR},
                "503": {"description": "The node cache is not synced yet", "content": _TEXT_ERROR},
            },
        }
    }


def openapi_document(paths: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The document for the served `verb -> path` map (default: `DEFAULT_PATHS`)."""
    served = dict(DEFAULT_PATHS if paths is None else paths)
    doc_paths: dict[str, Any] = {}
    for verb in ("filter", "prioritize", "preempt", "bind"):
        if verb in served:
            doc_paths[served[verb]] = _operation(verb)
    doc_paths["/healthz"] = {
        "get": {
            "operationId": "healthz",
            "summary": "Liveness: `ok`",
            "responses": {"200": {"description": "alive", "content": _TEXT_ERROR}},
        }
    }
    doc_paths["/readyz"] = {
        "get": {
            "operationId": "readyz",
            "summary": "Readiness: the node cache is synced (always ready without one)",
            "responses": {
                "200": {"description": "ready", "content": _TEXT_ERROR},
                "500": {"description": "not ready, with the reason", "content": _TEXT_ERROR},
            },
        }
    }
    doc_paths["/metrics"] = {
        "get": {
            "operationId": "metrics",
            "summary": "Prometheus metrics: requests and latency per verb",
            "responses": {"200": {"description": "text exposition format", "content": _TEXT_ERROR}},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "kubesched scheduler extender",
            "version": __version__,
            "description": (
                "The k8s.io/kube-scheduler/extender/v1 protocol served over kubesched plugins. JSON keys "
                "are the Go field names; absent optional values are null."
            ),
        },
        "paths": doc_paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def render(paths: Mapping[str, str] | None = None) -> str:
    """The document as the repository keeps it: two-space indented JSON and a final newline."""
    return json.dumps(openapi_document(paths), indent=2) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
