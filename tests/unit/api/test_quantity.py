"""Quantity parsing: upstream syntax, exact values, nano rounding, Value()/MilliValue(), formatting."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kubesched.api.quantity import (
    MAX_INT64,
    QuantityError,
    format_quantity,
    parse_quantity,
    quantity_milli_value,
    quantity_nanos,
    quantity_value,
    resource_amount,
)
from kubesched.errors import InputError

NANO = Fraction(1, 10**9)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("1", 1),
        ("-1", -1),
        ("+7", 7),
        ("007", 7),
        # binary suffixes
        ("1Ki", 1024),
        ("3Mi", 3 * 2**20),
        ("1.5Gi", 3 * 2**29),
        ("2Ti", 2 * 2**40),
        ("1Pi", 2**50),
        ("1Ei", 2**60),
        ("0.5Mi", 2**19),
        ("100.035Ki", Fraction(10243584, 100)),
        # decimal SI suffixes
        ("5n", 5 * NANO),
        ("4u", Fraction(4, 10**6)),
        ("100m", Fraction(1, 10)),
        ("1k", 1000),
        ("7M", 7 * 10**6),
        ("6G", 6 * 10**9),
        ("5T", 5 * 10**12),
        ("2P", 2 * 10**15),
        ("1E", 10**18),
        ("100.035k", 100035),
        ("0.1m", Fraction(1, 10**4)),
        # decimal exponents
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e+3", 1000),
        ("1.5E-2", Fraction(3, 200)),
        ("0.5e-1", Fraction(1, 20)),
        ("1.2e3", 1200),
        ("2e0", 2),
        # loose forms upstream accepts
        (".5", Fraction(1, 2)),
        ("1.", 1),
        ("1.G", 10**9),
        ("-.25", Fraction(-1, 4)),
    ],
)
def test_parse_exact_values(text: str, expected: int | Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # magnitudes round up to a whole number of nano units, never down to zero
        ("3.001n", 4 * NANO),
        ("0.9n", NANO),
        ("0.0000000001", NANO),
        ("0.00000012345", 124 * NANO),
        ("1.1E-9", 2 * NANO),
        ("0.000000000001Ki", 2 * NANO),
        ("1e-20", NANO),
        ("1e-99999999999", NANO),
        ("-0.0000000001", -NANO),
        ("0e-30", 0),
        # binary magnitudes are capped at 2^63-1, decimal ones are not
        ("8Ei", MAX_INT64),
        ("9223372036854775807Ki", MAX_INT64),
        ("-9Ei", -MAX_INT64),
        ("7Ei", 7 * 2**60),
        ("10E", 10**19),
        # digitless forms upstream reads as zero
        (".", 0),
        ("+", 0),
        ("-", 0),
        ("-.", 0),
        ("k", 0),
        ("Mi", 0),
        ("e5", 0),
    ],
)
def test_parse_rounding_cap_and_quirks(text: str, expected: int | Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "1\n",
        "1.2.3",
        "1.1.M",
        "1Kb",
        "1K",
        "1ki",
        "1i",
        ".5i",
        "0.1mi",
        "1m5",
        "1Mi3",
        "1e",
        "1e-",
        "1E+",
        "1e3e3",
        "1e1.5",
        "--1",
        "+-1",
        "1+1",
        "1..",
        "aoeu",
        "0x10",
        "1_000",
        "\uff11",  # a non-ASCII digit one
        "e-10",  # upstream's decimal library needs a digit below nano scale
        ".e-10",
        "1e99999999999999999999",  # exponent beyond int64
        "1e1001",  # beyond the documented bound
    ],
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert isinstance(info.value, InputError)
    assert info.value.message.startswith('invalid quantity "')


def test_error_names_the_text_and_keeps_type_when_located() -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity("12XB")
    assert str(info.value) == 'invalid quantity "12XB"'
    located = info.value.at(source="pod.yaml", path_prefix="spec.overhead.cpu")
    assert isinstance(located, QuantityError)
    assert str(located) == 'pod.yaml: spec.overhead.cpu: invalid quantity "12XB"'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2, 2),
        (0, 0),
        (-3, -3),
        (0.5, Fraction(1, 2)),
        (0.1, Fraction(1, 10)),
        (1e-07, Fraction(1, 10**7)),
        (1e20, 10**20),
        (-1.5, Fraction(-3, 2)),
    ],
)
def test_numbers_from_yaml(value: int | float, expected: int | Fraction) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), True, None, [1], b"1"])
def test_rejects_non_quantities(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1.5", 2, 1500),
        ("100m", 1, 100),
        ("0.1m", 1, 1),
        ("1", 1, 1000),
        ("0", 0, 0),
        ("1n", 1, 1),
        ("1Ki", 1024, 1024000),
        ("1e-3", 1, 1),
        ("999m", 1, 999),
        ("1001m", 2, 1001),
        ("-1.5", -2, -1500),  # away from zero, like upstream
        ("-0.1m", -1, -1),
        ("0.5Ki", 512, 512000),
    ],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    assert quantity_value(text) == value
    assert quantity_milli_value(text) == milli


def test_resource_amount_units() -> None:
    assert resource_amount("cpu", "1.5") == 1500
    assert resource_amount("cpu", 2) == 2000
    assert resource_amount("memory", "1.5") == 2
    assert resource_amount("memory", "1Gi") == 2**30
    assert resource_amount("nvidia.com/gpu", 2) == 2


@pytest.mark.parametrize(
    ("amount", "resource", "text"),
    [
        (1500, "cpu", "1500m"),
        (2000, "cpu", "2"),
        (0, "cpu", "0"),
        (1, "cpu", "1m"),
        (-2500, "cpu", "-2500m"),
        (512 * 2**20, "memory", "512Mi"),
        (32 * 2**30, "memory", "32Gi"),
        (1536 * 2**20, "memory", "1536Mi"),
        (1024, "memory", "1Ki"),
        (1000, "memory", "1000"),
        (0, "memory", "0"),
        (-(2**30), "memory", "-1Gi"),
        (2**70, "memory", str(2**70)),  # a binary suffix would be capped on parsing
        (3 * 2**60, "ephemeral-storage", "3Ei"),
        (2**21, "hugepages-2Mi", "2Mi"),
        (10 * 2**30, "storage", "10Gi"),
        (1024, "pods", "1024"),
        (2**20, "nvidia.com/gpu", "1048576"),
    ],
)
def test_format_quantity(amount: int, resource: str, text: str) -> None:
    assert format_quantity(amount, resource) == text


# --------------------------------------------------------------------------- properties

RESOURCES = ["cpu", "memory", "ephemeral-storage", "storage", "hugepages-1Gi", "pods", "example.com/foo"]


@given(st.integers(min_value=-(2**80), max_value=2**80), st.sampled_from(RESOURCES))
def test_format_round_trips(amount: int, resource: str) -> None:
    assert resource_amount(resource, format_quantity(amount, resource)) == amount


@given(st.integers(min_value=1, max_value=MAX_INT64))
def test_format_uses_largest_exact_binary_suffix(amount: int) -> None:
    text = format_quantity(amount, "memory")
    if text[-1] == "i":
        mantissa = int(text[:-2])
        assert mantissa * 2 ** (10 * "KMGTPE".index(text[-2]) + 10) == amount
        assert mantissa % 1024 != 0 or text.endswith("Ei")
    else:
        assert amount % 1024 != 0


@given(st.integers(min_value=0, max_value=10**12))
def test_suffix_equivalences(n: int) -> None:
    assert parse_quantity(f"{n}Ki") == n * 1024
    assert parse_quantity(f"{n}Mi") == parse_quantity(f"{n * 1024}Ki")
    assert parse_quantity(f"{n}k") == n * 1000
    assert parse_quantity(f"{n}e3") == parse_quantity(f"{n}k")
    assert parse_quantity(f"{n}E6") == parse_quantity(f"{n}M")
    assert parse_quantity(f"{n}000m") == n
    assert parse_quantity(f"{n}000000000n") == n
    assert parse_quantity(n) == parse_quantity(str(n))


decimal_texts = st.builds(
    lambda sign, whole, frac: f"{sign}{whole}.{frac}",
    st.sampled_from(["", "+", "-"]),
    st.from_regex(r"[0-9]{1,20}", fullmatch=True),
    st.from_regex(r"[0-9]{0,15}", fullmatch=True),
)


def exact_decimal(text: str) -> Fraction:
    sign = -1 if text.startswith("-") else 1
    whole, frac = text.lstrip("+-").split(".")
    return sign * Fraction(int(whole + frac or "0"), 10 ** len(frac))


def round_up_to_nano(x: Fraction) -> Fraction:
    magnitude = Fraction(math.ceil(abs(x) * 10**9), 10**9)
    return magnitude if x >= 0 else -magnitude


@given(decimal_texts)
def test_decimal_text_is_exact_up_to_nano_rounding(text: str) -> None:
    assert parse_quantity(text) == round_up_to_nano(exact_decimal(text))


@given(decimal_texts, st.sampled_from(["", "n", "u", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e-4", "E2"]))
def test_sign_prefixes(text: str, suffix: str) -> None:
    body = text.lstrip("+-") + suffix
    assert parse_quantity("-" + body) == -parse_quantity(body)
    assert parse_quantity("+" + body) == parse_quantity(body)


quantity_texts = st.builds(
    lambda number, suffix: number + suffix,
    decimal_texts,
    st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "e-12", "e3", "E-1"]),
)


@given(quantity_texts)
def test_value_and_milli_are_exact_ceilings(text: str) -> None:
    exact = parse_quantity(text)
    away = math.ceil if exact >= 0 else math.floor
    assert quantity_milli_value(text) == away(exact * 1000)
    assert quantity_value(text) == away(exact)
    assert quantity_nanos(text) == exact * 10**9


@given(quantity_texts, quantity_texts)
def test_milli_rounding_is_monotone_and_never_below(a: str, b: str) -> None:
    assume(parse_quantity(a) >= 0 and parse_quantity(b) >= 0)
    lo, hi = sorted([a, b], key=parse_quantity)
    assert quantity_milli_value(lo) <= quantity_milli_value(hi)
    assert quantity_milli_value(lo) >= parse_quantity(lo) * 1000
    assert quantity_milli_value(lo) - parse_quantity(lo) * 1000 < 1


@given(st.text(max_size=30) | st.text(alphabet="0123456789.+-eEinumkKMGTP x", max_size=12))
def test_garbage_raises_only_quantity_error(text: str) -> None:
    try:
        result = parse_quantity(text)
    except QuantityError as err:
        assert "invalid quantity" in str(err)
    else:
        assert isinstance(result, Fraction)
        assert (10**9) % result.denominator == 0  # a whole number of nano units
