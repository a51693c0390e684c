"""DRA selector CEL: the expressions users write, Kubernetes' libraries, and upstream's error texts."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.resource import Device, DeviceAttribute, DeviceCapacity
from kubesched.cel import CELError, compile_selector, device_input
from kubesched.cel.semver import SemverError, parse_semver

DRIVER = "gpu.example.com"
GPU = device_input(
    DRIVER,
    Device(
        name="gpu-0",
        attributes={
            "model": DeviceAttribute(string="a100"),
            "cores": DeviceAttribute(int=108),
            "mig": DeviceAttribute(bool=True),
            "driverVersion": DeviceAttribute(version="550.1.0"),
            "other.example.com/zone": DeviceAttribute(string="z1"),
        },
        capacity={"memory": DeviceCapacity(value="40Gi")},
    ),
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["gpu.example.com"].model == "h100"', False),
        ('device.attributes["other.example.com"].zone == "z1"', True),
        ("device.allowMultipleAllocations == false", True),
        # optional chaining, has(), in
        ('device.attributes["gpu.example.com"].?nvlink.orValue(false) == false', True),
        ('device.attributes["gpu.example.com"].?model.orValue("") == "a100"', True),
        ('has(device.attributes["gpu.example.com"].model)', True),
        ('!has(device.attributes["gpu.example.com"].nvlink)', True),
        # an unknown domain is an empty map
        ('device.attributes["unknown.example.com"].size() == 0', True),
        ('device.attributes["unknown.example.com"].?x.orValue(7) == 7', True),
        ('device.capacity["unknown.example.com"].size() == 0', True),
        # cel.bind, macros, strings
        ('cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && g.mig)', True),
        ('["a100", "h100"].exists(m, m == device.attributes["gpu.example.com"].model)', True),
        ('device.attributes["gpu.example.com"].model.upperAscii().startsWith("A1")', True),
        ('"a,b,c".split(",").size() == 3 && "  x ".trim() == "x"', True),
        ('device.attributes["gpu.example.com"].model.matches("^a[0-9]+$")', True),
        # cross-type numeric comparisons
        ('device.attributes["gpu.example.com"].cores > 100.5', True),
        ("1 < 2.5 && 3u >= 2", True),
        # Quantity
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0', True),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("39Gi"))', True),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("20G"))', False),
        ('quantity("200M").compareTo(quantity("0.2G")) == 0', True),
        ('quantity("1") == quantity("1000m")', True),
        ('quantity("1.5").isInteger() == false && quantity("2k").asInteger() == 2000', True),
        (
            'quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")'
            ' && quantity("3").sub(1).asInteger() == 2',
            True,
        ),
        ('isQuantity("1Gi") && !isQuantity("1Gb")', True),
        ('quantity("-1").sign() == -1', True),
        # Semver
        ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("550.0.9"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 550', True),
        ('semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
        ('semver("v1.2", true) == semver("1.2.0")', True),
        ('isSemver("1.2.3") && !isSemver("1.2")', True),
        # Kubernetes lists / regex / sets libraries
        ("[1, 2, 3].isSorted() && [1, 2, 3].sum() == 6 && [4, 1].min() == 1 && [4, 1].max() == 4", True),
        ('["a", "b", "a"].lastIndexOf("a") == 2 && ["a", "b"].indexOf("c") == -1', True),
        ('"gpu-10-x".find("[0-9]+") == "10" && "a1b2".findAll("[0-9]").size() == 2', True),
        (
            "sets.contains([1, 2, 3], [2]) && sets.intersects([1], [1, 4])"
            " && sets.equivalent([1, 2], [2, 1])",
            True,
        ),
    ],
)
def test_expressions_users_write(expression: str, expected: bool) -> None:
    assert compile_selector(expression).matches(GPU) is expected


def test_missing_key_is_a_runtime_error_with_upstreams_hint() -> None:
    with pytest.raises(CELError) as err:
        compile_selector('device.attributes["gpu.example.com"].nvlink == true').matches(GPU)
    assert str(err.value) == (
        "no such key: nvlink. consider using CEL optional chaining (.? followed by orValue()) "
        "or guarding the check with has() for optional fields"
    )


@pytest.mark.parametrize(
    ("expression", "prefix"),
    [
        ("device.driver ==", "compilation failed: ERROR: <input>:1:"),
        (
            "undefined_variable == 1",
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'undefined_variable'",
        ),
        ('"a" + "b"', "must evaluate to bool or the unknown type, not string"),
        ("1 + 1", "must evaluate to bool or the unknown type, not int"),
    ],
)
def test_compile_errors(expression: str, prefix: str) -> None:
    selector = compile_selector(expression)
    assert selector.error.startswith(prefix)
    with pytest.raises(CELError, match="^" + re.escape(prefix[:20])):
        selector.matches(GPU)


def test_a_dynamic_non_bool_result_is_an_error() -> None:
    with pytest.raises(CELError, match=r"^CEL result of type string could not be converted to bool"):
        compile_selector('device.attributes["gpu.example.com"].model').matches(GPU)


def test_bad_quantity_text_inside_an_expression() -> None:
    with pytest.raises(CELError, match=r"^quantities must match the regular expression"):
        compile_selector('quantity("1Gb").sign() == 1').matches(GPU)


def test_a_version_attribute_that_does_not_parse_fails_evaluation() -> None:
    broken = device_input(DRIVER, Device(name="d", attributes={"v": DeviceAttribute(version="1.02.0")}))
    with pytest.raises(CELError, match=r"^attribute v: parse semantic version: "):
        compile_selector("true").matches(broken)


def test_compiled_programs_are_cached() -> None:
    assert compile_selector('device.driver == "x"') is compile_selector('device.driver == "x"')


def test_devices_a_selector_cannot_tell_apart_share_a_key() -> None:
    a = device_input(DRIVER, Device(name="a", attributes={"model": DeviceAttribute(string="a100")}))
    b = device_input(DRIVER, Device(name="b", attributes={"model": DeviceAttribute(string="a100")}))
    c = device_input(DRIVER, Device(name="c", attributes={"model": DeviceAttribute(string="h100")}))
    assert a.key == b.key != c.key


def test_unqualified_names_take_the_drivers_domain() -> None:
    assert compile_selector('"zone" in device.attributes["gpu.example.com"]').matches(GPU) is False
    assert compile_selector('"model" in device.attributes["gpu.example.com"]').matches(GPU) is True
    assert compile_selector('"zone" in device.attributes["other.example.com"]').matches(GPU) is True


# --------------------------------------------------------------------------- semver parsing

_ident = st.from_regex(r"[1-9][0-9]{0,3}|0", fullmatch=True)


@given(_ident, _ident, _ident)
def test_semver_round_trips(major: str, minor: str, patch: str) -> None:
    text = f"{major}.{minor}.{patch}"
    assert str(parse_semver(text)) == text


@given(st.text(max_size=12))
def test_semver_parser_never_crashes(text: str) -> None:
    with contextlib.suppress(SemverError):
        parse_semver(text)


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("1.0.0-alpha", "1.0.0-alpha.1"),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta"),
        ("1.0.0-beta.2", "1.0.0-beta.11"),
        ("1.0.0-rc.1", "1.0.0"),
        ("1.9.0", "1.10.0"),
    ],
)
def test_semver_precedence(low: str, high: str) -> None:
    assert parse_semver(low).compare(parse_semver(high)) == -1
    assert parse_semver(high).compare(parse_semver(low)) == 1


@pytest.mark.parametrize("bad", ["1.2", "01.2.3", "1.2.3-", "1.2.3-a..b", "a.b.c", ""])
def test_semver_rejects(bad: str) -> None:
    with pytest.raises(SemverError):
        parse_semver(bad)


def test_the_cel_runtime_is_imported_only_when_a_selector_is_compiled() -> None:
    """Every profile imports the DRA plugins; a cluster without DRA objects must not pay for CEL."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from kubesched.plugins import default_registry\n"
        "default_registry()\n"
        "print(sorted(m for m in ('cel_expr_python', 'google.protobuf') if m in sys.modules))\n"
        "from kubesched.cel import compile_selector\n"
        "assert compile_selector('device.driver == \"x\"').error == ''\n"
        "print('cel_expr_python' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "True"]
