"""The one hook for URLs (s3://, gs://, az://, http(s)://): list, glob and open objects.

Object storage is read through fsspec, an optional extra (`pip install 'harmony-doctor[remote]'`
brings fsspec and s3fs; gcsfs and adlfs are installed beside it for gs:// and az://). Nothing
here decompresses or decodes: an object is opened as a binary stream that goes through the same
reader as a local file (inputs/files.py). Credentials, endpoints and other storage options are
each filesystem's own (AWS_* variables and ~/.aws for S3, `FSSPEC_S3_ENDPOINT_URL=...` or
`FSSPEC_S3='{"endpoint_url": ...}'` for any fsspec option), so that a worker process, a Ray task
or a Dask worker started with the same environment opens the same URL the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from harmony_doctor.errors import InputError
from harmony_doctor.lazy_regex import Pattern

INSTALL = "install harmony-doctor[remote] for URLs"
_URL = Pattern(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_GLOB = Pattern(r"[*?\[]")
# Schemes whose "folders" cannot be listed nor globbed: a URL names one object ("?" is a query).
_SINGLE = ("http", "https")
# Where filesystems keep an object's modification time in `info` (s3fs, adlfs, gcsfs, others).
_MODIFIED_KEYS = ("LastModified", "last_modified", "updated", "mtime", "modified", "created")
_BLOCK = 8 * 1024 * 1024  # bytes fetched per request when reading an object in order
# Extras that bring a scheme's filesystem, for the message when it is missing.
_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs"}
_PACKAGES |= {"abfs": "adlfs", "abfss": "adlfs", "http": "aiohttp", "https": "aiohttp"}


@dataclass(frozen=True)
class RemoteObject:
    """One object a URL or glob names: its URL, size in bytes and last-modified time."""

    url: str
    size: int | None
    modified: datetime | None


def is_url(text: str) -> bool:
    """Whether an input names a URL (scheme://...) rather than a local path."""
    return _URL.match(text) is not None


def expand_url(url: str) -> list[RemoteObject]:
    """The objects a URL names: itself, every object under a prefix ("folder"), or those a glob
    matches (`s3://bucket/logs/*.gz`), sorted by URL. Raises InputError."""
    scheme = _scheme(url)
    fs, path = _filesystem(url)
    if scheme in _SINGLE:
        return [RemoteObject(url, None, None)]
    try:
        fs.invalidate_cache()  # a listing cached earlier in this process may be stale
        if _GLOB.search(path):
            found: dict[str, Any] = fs.glob(path, detail=True)
        else:
            info = fs.info(path)
            found = fs.find(path, detail=True) if info.get("type") == "directory" else {path: info}
    except Exception as exc:  # each filesystem raises its own errors: all said as InputErrors
        raise _input_error(url, exc) from None
    objects = [
        RemoteObject(f"{scheme}://{name.lstrip('/')}", info.get("size"), modified_time(info))
        for name, info in sorted(found.items())
        if info.get("type", "file") != "directory"
    ]
    if scheme == "file":  # absolute paths keep their leading slash
        objects = [RemoteObject(f"file:///{o.url[7:]}", o.size, o.modified) for o in objects]
    return objects


def open_url(url: str) -> tuple[IO[bytes], str, datetime | None]:
    """The object's bytes (a binary stream, read in order), its label (the URL) and its
    last-modified time in local time, which dates log stamps without a year. Raises InputError
    (credentials, not found, permission, missing extra)."""
    fs, path = _filesystem(url)
    modified: datetime | None = None
    try:
        if _scheme(url) not in _SINGLE:  # a web server may refuse HEAD: then no time
            modified = modified_time(fs.info(path))
        stream: IO[bytes] = fs.open(path, "rb", block_size=_BLOCK, cache_type="readahead")
    except Exception as exc:
        raise _input_error(url, exc) from None
    return stream, url, modified


def modified_time(info: dict[str, Any]) -> datetime | None:
    """An object's modification time from fsspec's `info`, as a naive local time (what a local
    file's mtime gives), or None when the filesystem does not say."""
    for key in _MODIFIED_KEYS:
        value = info.get(key)
        when: datetime | None = None
        if isinstance(value, datetime):
            when = value
        elif isinstance(value, int | float):
            when = datetime.fromtimestamp(value)
        elif isinstance(value, str):
            try:
                when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
        if when is not None:
            return when.astimezone().replace(tzinfo=None) if when.tzinfo else when
    return None


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower()


def _filesystem(url: str) -> tuple[Any, str]:
    try:
        import fsspec  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise InputError(f"cannot read {url}: {INSTALL}") from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError:
        package = _PACKAGES.get(_scheme(url), "the fsspec filesystem for it")
        raise InputError(f"cannot read {url}: {INSTALL} (and {package})") from None
    except Exception as exc:
        raise _input_error(url, exc) from None
    return fs, str(path)


def _input_error(url: str, exc: BaseException) -> InputError:
    """What went wrong, said so that the fix is plain: credentials, not found, permission."""
    name = type(exc).__name__
    text = " ".join(str(exc).split())[:200] or name
    if "Credential" in name or "Unable to locate credentials" in text:
        why = "no credentials found (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE"
        why += ", or the storage's own variables)"
    elif isinstance(exc, FileNotFoundError) or "NoSuchBucket" in text or "NoSuchKey" in text:
        why = "not found"
    elif isinstance(exc, PermissionError) or "AccessDenied" in text or "Forbidden" in text:
        why = f"permission denied: the credentials may not read it ({text})"
    elif "Protocol not known" in text:
        why = "unknown URL scheme (s3://, gs://, az://, http(s):// are read)"
    else:
        why = text
    return InputError(f"cannot read {url}: {why}")


def download(url: str, target: str) -> bool:
    """Copy one object to the local file `target`; False when there is no such object (a file
    that may or may not be there, as the tallies beside an events file). Raises InputError."""
    fs, path = _filesystem(url)
    try:
        fs.get_file(path, target)
    except FileNotFoundError:
        return False
    except Exception as exc:
        raise _input_error(url, exc) from None
    return True
