"""The CEL libraries on PyPI, measured on what DRA selectors use: correctness and speed.

Each installed candidate compiles and evaluates the same expressions against one GPU-like `device`
(plain maps: the candidates' own features, before kubesched's additions), then one typical selector
is timed. Prints one JSON object per candidate:

    {"library": "cel-expr-python", "correct": 11, "of": 16, "failed": [...],
     "evalMicroseconds": 23.8, "compileMicroseconds": 221.0}

Candidates not installed are reported as such. To measure all three:
`python -m venv /tmp/cel && /tmp/cel/bin/pip install cel-expr-python cel-python common-expression-language`
then `/tmp/cel/bin/python benchmarks/cel_candidates.py [--smoke]`. Why kubesched uses cel-expr-python:
docs/dra.md.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

#: (label, expression, expected): True, or "error" (a missing key must fail), or "non-bool".
EXPRESSIONS: list[tuple[str, str, object]] = [
    ("basic", 'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100"', True),  # noqa: E501
    ("optional", 'device.attributes["gpu.example.com"].?model.orValue("") == "a100"', True),
    ("optional-missing", 'device.attributes["gpu.example.com"].?nope.orValue("x") == "x"', True),
    ("cel.bind", 'cel.bind(a, device.attributes["gpu.example.com"], a.model == "a100" && a.cores > 10)', True),  # noqa: E501
    ("strings", 'device.attributes["gpu.example.com"].model.upperAscii().startsWith("A1") && "a,b".split(",").size() == 2', True),  # noqa: E501
    ("strings-2", '"  x ".trim() == "x" && "abc".indexOf("c") == 2 && "a-b".replace("-", "_") == "a_b"', True),  # noqa: E501
    ("macros", "[1,2,3].exists(x, x > 2) && [1,2,3].all(x, x > 0) && [1,2,3].map(x, x*2)[2] == 6", True),
    ("ext.lists", "[3,1,2].sort() == [1,2,3] && lists.range(3) == [0,1,2]", True),
    ("cross-numeric", 'device.attributes["gpu.example.com"].cores > 1.5 && 1u < 2 && 2.0 == 2', True),
    ("has", 'has(device.attributes["gpu.example.com"].model) && !has(device.attributes["gpu.example.com"].nope)', True),  # noqa: E501
    ("in", '"model" in device.attributes["gpu.example.com"]', True),
    ("missing-key", 'device.attributes["gpu.example.com"].nope == "x"', "error"),
    ("non-bool", "device.driver", "non-bool"),
    ("two-var", '{"a": 1}.all(k, v, v > 0)', True),
    ("ext.sets", "sets.contains([1,2,3], [2])", True),
    ("regex", '"abc".matches("^a.c$")', True),
]  # fmt: skip
DEVICE = {
    "driver": "gpu.example.com",
    "attributes": {"gpu.example.com": {"model": "a100", "cores": 108}},
    "capacity": {"gpu.example.com": {"memory": "40Gi"}},
    "allowMultipleAllocations": False,
}


#: Timed evaluations and compilations per candidate (`--smoke` takes a tenth of a percent: CI).
TIMED = {"evaluations": 5000, "compilations": 100}


def measure(name: str, compile_: Callable[[str], Any], evaluate: Callable[[Any], Any]) -> dict[str, Any]:
    correct, failed = 0, []
    for label, expression, expected in EXPRESSIONS:
        try:
            program = compile_(expression)
            got = evaluate(program)
            ok = got is True if expected is True else expected == "non-bool" and not isinstance(got, bool)
        except Exception:
            ok = expected == "error"
        correct += ok
        if not ok:
            failed.append(label)
    program = compile_(EXPRESSIONS[0][1])
    n = TIMED["evaluations"]
    started = time.perf_counter()
    for _ in range(n):
        evaluate(program)
    per_eval = (time.perf_counter() - started) / n
    started = time.perf_counter()
    for _ in range(TIMED["compilations"]):
        compile_(EXPRESSIONS[3][1])
    per_compile = (time.perf_counter() - started) / TIMED["compilations"]
    return {
        "library": name,
        "correct": correct,
        "of": len(EXPRESSIONS),
        "failed": failed,
        "evalMicroseconds": round(per_eval * 1e6, 1),
        "compileMicroseconds": round(per_compile * 1e6, 1),
    }


def cel_expr_python() -> dict[str, Any]:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

    env = cel.NewEnv(
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[ext_bindings.ExtBindings(), ext_optional.ExtOptional(), ext_strings.ExtStrings()],
    )

    def evaluate(program: Any) -> Any:
        value = program.eval(data={"device": DEVICE})
        if value.type() == cel.Type.ERROR:
            raise RuntimeError(value.value())
        return value.value()

    return measure("cel-expr-python", env.compile, evaluate)


def cel_python() -> dict[str, Any]:
    import celpy

    env = celpy.Environment()
    device = celpy.json_to_cel(DEVICE)

    def evaluate(program: Any) -> Any:
        result = program.evaluate({"device": device})
        if isinstance(result, Exception):
            raise result
        return bool(result) if isinstance(result, celpy.celtypes.BoolType) else result

    return measure("cel-python", lambda e: env.program(env.compile(e)), evaluate)


def cel_rust() -> dict[str, Any]:
    import cel

    return measure("common-expression-language", cel.compile, lambda p: p.execute({"device": DEVICE}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="5 evaluations, 1 compilation each (CI)")
    if parser.parse_args().smoke:
        TIMED.update(evaluations=5, compilations=1)
    for name, run in (
        ("cel-expr-python", cel_expr_python),
        ("cel-python", cel_python),
        ("common-expression-language", cel_rust),
    ):
        try:
            print(json.dumps(run()))
        except ImportError:
            print(json.dumps({"library": name, "installed": False}))


if __name__ == "__main__":
    main()
