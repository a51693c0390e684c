"""Invalid `resourceClaims` entries of a PodGroup and what the v1.37.2 API server answers for each
(GenericWorkload and DRAWorkloadResourceClaims on): the unit tests check kubesched's loader against
these texts, the integration test posts them to a real API server again."""

from __future__ import annotations

LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
ONE_OF = "`resourceClaimName`, `resourceClaimTemplateName`"

#: (entries, the field path under `resourceClaims`, the server's text for it)
CASES: list[tuple[list[dict[str, str]], str, str]] = [
    (
        [{"name": "a", "resourceClaimName": "c", "resourceClaimTemplateName": "t"}],
        "[0]",
        'Invalid value: "{resourceClaimName, resourceClaimTemplateName}": must specify exactly one of: '
        + ONE_OF,
    ),
    ([{"name": "a"}], "[0]", f'Invalid value: "": must specify one of: {ONE_OF}'),
    ([{"resourceClaimName": "c"}], "[0].name", "Required value"),
    ([{"name": "A_b", "resourceClaimName": "c"}], "[0].name", f'Invalid value: "A_b": {LABEL}'),
    (
        [{"name": "a" * 64, "resourceClaimName": "c"}],
        "[0].name",
        f'Invalid value: "{"a" * 64}": must be no more than 63 bytes',
    ),
    ([{"name": "a.b", "resourceClaimName": "c"}], "[0].name", 'Invalid value: "a.b": must not contain dots'),
    (
        [{"name": "a", "resourceClaimName": "C_x"}],
        "[0].resourceClaimName",
        f'Invalid value: "C_x": {SUBDOMAIN}',
    ),
    ([{"name": "a", "resourceClaimName": ""}], "[0].resourceClaimName", f'Invalid value: "": {SUBDOMAIN}'),
    (
        [{"name": "a", "resourceClaimName": "c" * 254}],
        "[0].resourceClaimName",
        f'Invalid value: "{"c" * 254}": must be no more than 253 bytes',
    ),
    (
        [{"name": "a", "resourceClaimTemplateName": "-t"}],
        "[0].resourceClaimTemplateName",
        f'Invalid value: "-t": {SUBDOMAIN}',
    ),
    (
        [{"name": "a", "resourceClaimName": "c"}, {"name": "a", "resourceClaimName": "d"}],
        "[1]",
        'Duplicate value: {"name":"a","resourceClaimName":"d"}',
    ),
    (
        [{"name": f"a{i}", "resourceClaimName": "c"} for i in range(5)],
        "",
        "Too many: 5: must have at most 4 items",
    ),
    # Several errors: the server lists them all; its first is named.
    ([{"name": "A", "resourceClaimName": "c"}, {"name": "b"}], "[0].name", f'Invalid value: "A": {LABEL}'),
    ([{"name": "a", "resourceClaimName": "c"}, {"name": "a"}], "[1]", 'Duplicate value: {"name":"a"}'),
]
