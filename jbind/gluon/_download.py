"""`gluon.utils.download` and its helpers: fetch a URL into a file, atomically.

The bytes come through `requests.get(url, stream=True, verify=...)` when `requests` is
installed (MXNet's path, and the one its tests mock), else through `urllib.request`.
They are written to a temporary file beside the target and moved into place with
`os.replace`, so a reader never sees half a file and several processes downloading the
same file leave exactly one. A file whose SHA-1 does not match never lands at the target.

Differences from MXNet 1.9.1: `overwrite=True` replaces an existing file (MXNet's
downloads it and then keeps the old one); a failure after the last attempt is an
MXNetError naming the URL and the cause (MXNet re-raises the last exception); each
request has a 60 s timeout (MXNet's can hang without one).
"""
from __future__ import annotations

import hashlib
import os
import ssl
import uuid
import warnings

from ..base import MXNetError

_TIMEOUT_S = 60
_CHUNK = 1 << 16


class DownloadHashError(MXNetError, UserWarning):
    """A downloaded file whose SHA-1 is not the expected one (MXNet raises UserWarning)."""


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """True when the SHA-1 of the file's bytes is `sha1_hash` (hex digits)."""
    return _sha1_of(filename) == sha1_hash


def _sha1_of(filename: str) -> str:
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    return sha1.hexdigest()


def replace_file(src: str, dst: str) -> None:
    """Move `src` to `dst` in one atomic step (`dst` replaced if present); on failure `src`
    is removed and OSError raised, as MXNet does."""
    try:
        os.replace(src, dst)
    except OSError as e:
        try:
            os.remove(src)
        except OSError:
            pass
        raise OSError(f"Moving downloaded temp file - {src}, to {dst} failed. Please retry the download.") from e


def _get_repo_url() -> str:
    """The base URL of Gluon's dataset and model repository: $MXNET_GLUON_REPO or MXNet's
    default, always ending in '/'."""
    url = os.environ.get("MXNET_GLUON_REPO", "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
    return url if url.endswith("/") else url + "/"


def _get_repo_file_url(namespace: str, filename: str) -> str:
    """The URL of `filename` under `namespace` in Gluon's repository."""
    return f"{_get_repo_url()}{namespace}/{filename}"


def _target(url: str, path) -> str:
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise _assertion("Can't construct file-name from this URL. Please set the `path` option manually.")
        return fname
    path = os.path.expanduser(path)
    return os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path


def _assertion(msg: str):
    from ._util import GluonAssertionError
    return GluonAssertionError(msg)


def download(url: str, path=None, overwrite: bool = False, sha1_hash=None, retries: int = 5,
             verify_ssl: bool = True) -> str:
    """Download `url` to a file and return the file's path.

    Args:
        url: the URL.
        path: a folder (the file keeps the URL's last component as its name) or a file
            path; default the URL's last component in the current folder.
        overwrite: download even if the file exists.
        sha1_hash: expected SHA-1 (hex). An existing file that differs is downloaded
            again; a download that differs is an error (`DownloadHashError`, an MXNetError
            and a UserWarning) and is not kept.
        retries: how many attempts to make (at least one).
        verify_ssl: verify HTTPS certificates; False warns "Unverified HTTPS request ...".

    Raises:
        MXNetError: naming the URL and the last cause, after `retries` failed attempts.
    """
    fname = _target(url, path)
    if retries < 0:
        raise _assertion(f"Number of retries should be at least 0, currently it's {retries}")
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). "
                      "Adding certificate verification is strongly advised.", stacklevel=2)
    if not overwrite and os.path.exists(fname) and not (sha1_hash and not check_sha1(fname, sha1_hash)):
        return fname
    folder = os.path.dirname(os.path.abspath(fname))
    os.makedirs(folder, exist_ok=True)
    attempts = max(1, retries)
    for attempt in range(1, attempts + 1):
        try:
            print(f"Downloading {fname} from {url}...")
            _fetch_into(url, fname, folder, overwrite, sha1_hash, verify_ssl)
            return fname
        except Exception as e:  # noqa: BLE001 - any failure of one attempt is retried
            left = attempts - attempt
            if left:
                print(f"download failed due to {e!r}, retrying, {left} attempt{'s' if left > 1 else ''} left")
                continue
            if isinstance(e, MXNetError):
                raise
            raise MXNetError(f"download({url!r}) to {fname!r} failed after {attempts} attempt"
                             f"{'s' if attempts > 1 else ''}: {e!r}") from e
    return fname


def _fetch_into(url, fname, folder, overwrite, sha1_hash, verify_ssl) -> None:
    """One attempt: the body of `url` into a temporary file in `folder`, checked, then moved
    to `fname` (unless another process put a good file there first)."""
    tmp = os.path.join(folder, f"{os.path.basename(fname)}.{uuid.uuid4()}")
    try:
        with open(tmp, "wb") as f:
            for chunk in _chunks(url, verify_ssl):
                f.write(chunk)
        if sha1_hash:
            got = _sha1_of(tmp)
            if got != sha1_hash:
                raise DownloadHashError(f"File {fname} is downloaded from {url} but its sha1 {got} is not "
                                        f"{sha1_hash}. The repo may be outdated or download may be incomplete. "
                                        'If the "repo_url" is overridden, consider switching to the default repo.')
        if overwrite or not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash)):
            replace_file(tmp, fname)
        else:
            warnings.warn(f"File {fname} exists in file system so the downloaded file is deleted", stacklevel=3)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _chunks(url: str, verify_ssl: bool):
    """The response body of `url` in chunks; a status other than 200 is an error."""
    try:
        import requests
    except ImportError:
        requests = None
    if requests is not None:
        r = requests.get(url, stream=True, verify=verify_ssl, timeout=_TIMEOUT_S)
        try:
            if r.status_code != 200:
                raise RuntimeError(f"Failed downloading url {url}: HTTP status {r.status_code}")
            yield from (c for c in r.iter_content(chunk_size=_CHUNK) if c)
        finally:  # a streamed response holds its connection until closed
            close = getattr(r, "close", None)
            if close is not None:
                close()
        return
    import urllib.request
    context = ssl.create_default_context()
    if not verify_ssl:
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with urllib.request.urlopen(url, timeout=_TIMEOUT_S, context=context) as r:  # noqa: S310 - a user's URL
        if r.status != 200:
            raise RuntimeError(f"Failed downloading url {url}: HTTP status {r.status}")
        yield from iter(lambda: r.read(_CHUNK), b"")
