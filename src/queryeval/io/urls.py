"""URLs among sources and options: telling them from paths, and keeping passwords out of
everything a run writes."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_USERINFO_PASSWORD = re.compile(r"(://[^:/@?#]*):[^@/?#]*@")
_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)[^&#]*")

PASSWORD_HINT = ("a password in a database URL would be written to the run log and the "
                 "reports; leave it out and give it in PGPASSWORD or ~/.pgpass (libpq reads "
                 "both)")


def is_url(text: str) -> bool:
    """Whether ``text`` starts with a URL scheme (``postgresql://``, ``https://`` …)."""
    return bool(_SCHEME.match(text.strip()))


def has_password(url: str) -> bool:
    """Whether ``url`` carries a password: ``user:secret@host`` or ``?password=secret``."""
    if not is_url(url):
        return False
    if _USERINFO_PASSWORD.search(url):
        return True
    try:
        query = urlsplit(url.strip()).query
    except ValueError:
        query = url.partition("?")[2]
    return any(key.lower() == "password" for key, _ in parse_qsl(query, keep_blank_values=True))


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    return _QUERY_PASSWORD.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1:***@", url))
