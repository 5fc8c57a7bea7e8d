"""The one hook for URLs (s3://, gs://, az://, http(s)://): open one as a binary stream."""

from __future__ import annotations

from datetime import datetime
from typing import IO

from harmony_doctor.errors import InputError


def is_url(text: str) -> bool:
    """Whether an input names a URL rather than a local path."""
    return "://" in text


def open_url(url: str) -> tuple[IO[bytes], str, datetime | None]:
    """The object's bytes, its label (the URL) and last-modified time (dates year-less stamps).

    Reading URLs goes through fsspec, an optional extra; until it is wired here, or when it
    is not installed, a URL is an InputError saying what to install.
    """
    try:
        import fsspec  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        raise InputError(f"cannot read {url}: install harmony-doctor[remote] for URLs") from None
    raise InputError(f"cannot read {url}: URLs are not supported yet")
