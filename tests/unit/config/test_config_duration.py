"""Go duration strings: parse and format like Go's time package."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.config import format_duration, parse_duration, parse_duration_ns
from kubesched.errors import InputError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("-0", 0.0),
        ("+0", 0.0),
        ("0s", 0.0),
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("1h", 3600.0),
        ("1.5h", 5400.0),
        ("2h45m", 9900.0),
        ("500ms", 0.5),
        (".5s", 0.5),
        ("5.s", 5.0),
        ("1us", 1e-6),
        ("1\u00b5s", 1e-6),
        ("1\u03bcs", 1e-6),
        ("3ns", 3e-9),
        ("-1.5s", -1.5),
        ("+2m", 120.0),
        ("1h2m3s4ms5us6ns", 3723.004005006),
        ("1s1s", 2.0),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, abs=1e-12)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "-",
        "+",
        "s",
        "1",
        "00",
        "1.s.",
        ".s",
        "1 s",
        " 1s",
        "1s ",
        "1d",
        "1S",
        "1sec",
        "abc",
        "1e3s",
        "--1s",
        "1h-2m",
        "\u0661s",
        "9223372037s",
        "2562048h",
    ],
)
def test_parse_rejects_garbage(text: str) -> None:
    with pytest.raises(InputError, match="invalid duration"):
        parse_duration(text)


def test_parse_rejects_non_string() -> None:
    with pytest.raises(InputError, match="expected a string"):
        parse_duration(15)  # type: ignore[arg-type]


def test_parse_range_limits_are_go_int64() -> None:
    assert parse_duration_ns("9223372036854775807ns") == 2**63 - 1
    assert parse_duration_ns("-9223372036854775808ns") == -(2**63)
    with pytest.raises(InputError, match="out of range"):
        parse_duration_ns("9223372036854775808ns")


def test_fraction_below_a_nanosecond_truncates() -> None:
    assert parse_duration_ns("1.9ns") == 1
    assert parse_duration_ns("0.0000000019s") == 1


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (90, "1m30s"),
        (15, "15s"),
        (3600, "1h0m0s"),
        (60, "1m0s"),
        (1.5, "1.5s"),
        (0.5, "500ms"),
        (0.0015, "1.5ms"),
        (1.5e-6, "1.5\u00b5s"),
        (2e-9, "2ns"),
        (-90, "-1m30s"),
        (3723.5, "1h2m3.5s"),
    ],
)
def test_format_like_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_format_then_parse_round_trips(ns: int) -> None:
    assert parse_duration_ns(format_duration(ns / 1e9)) == ns


@given(
    st.lists(st.tuples(st.integers(0, 10**4), st.sampled_from(["h", "m", "s", "ms", "us", "ns"])), min_size=1)
)
def test_elements_add_up(parts: list[tuple[int, str]]) -> None:
    text = "".join(f"{n}{unit}" for n, unit in parts)
    assert parse_duration_ns(text) == sum(parse_duration_ns(f"{n}{unit}") for n, unit in parts)
    assert parse_duration_ns("-" + text) == -parse_duration_ns(text)


@given(st.text(max_size=12))
def test_arbitrary_text_parses_or_raises_input_error(text: str) -> None:
    try:
        parse_duration(text)
    except InputError as exc:
        assert "invalid duration" in str(exc)
