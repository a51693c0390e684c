"""What the API server says of a name that is no DNS label or DNS subdomain (RFC 1123), in its
words and order, for the checks that refuse an object as it would (apimachinery's
IsDNS1123Label / IsDNS1123Subdomain: a length error first, then the format's)."""

from __future__ import annotations

import re

__all__ = ["dns1123_label_errors", "dns1123_subdomain_errors"]

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + r"(\." + _LABEL + r")*"
_LABEL_RE = re.compile(_LABEL)
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN)
_LABEL_MAX = 63
_SUBDOMAIN_MAX = 253


def dns1123_label_errors(value: str) -> list[str]:
    """Why `value` is no lowercase RFC 1123 label (at most 63 bytes, no dots); empty: it is one."""
    errors = []
    if len(value.encode()) > _LABEL_MAX:
        errors.append(f"must be no more than {_LABEL_MAX} bytes")
    if not _LABEL_RE.fullmatch(value):
        if _SUBDOMAIN_RE.fullmatch(value):
            errors.append("must not contain dots")
        else:
            errors.append(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                f"regex used for validation is '{_LABEL}')"
            )
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Why `value` is no lowercase RFC 1123 subdomain (at most 253 bytes); empty: it is one."""
    errors = []
    if len(value.encode()) > _SUBDOMAIN_MAX:
        errors.append(f"must be no more than {_SUBDOMAIN_MAX} bytes")
    if not _SUBDOMAIN_RE.fullmatch(value):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
            f"for validation is '{_SUBDOMAIN}')"
        )
    return errors
