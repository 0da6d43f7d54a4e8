"""gluon.utils.download and its helpers, with `requests.get` (or urllib) mocked: never the network."""
import hashlib
import io
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from collections import OrderedDict
from unittest import mock

import pytest

import jbind as mx
from jbind.gluon import utils
from jbind.gluon._download import DownloadHashError

requests = pytest.importorskip("requests")

BODY = b"jbind download body " * 200
URL = "https://example.com/data/blob.bin"


class FakeResponse:
    """What download reads of a `requests` response: a status and the body in chunks."""

    def __init__(self, body=BODY, status=200, fail_after=None, seen=None):
        self.status_code, self.body, self.fail_after, self.seen = status, body, fail_after, seen
        self.closed = False

    def close(self):
        self.closed = True

    def iter_content(self, chunk_size=1):
        for i in range(0, len(self.body), 100):
            if self.fail_after is not None and i >= self.fail_after:
                raise requests.exceptions.ChunkedEncodingError("connection broken")
            if self.seen is not None:
                self.seen()
            yield self.body[i:i + 100]


def serve(*responses):
    return mock.patch("requests.get", side_effect=list(responses))


def test_download_into_a_folder_or_a_file_path(tmp_path):
    responses = [FakeResponse(), FakeResponse()]
    with serve(*responses) as get:
        assert utils.download(URL, path=str(tmp_path)) == str(tmp_path / "blob.bin")
        assert utils.download(URL, path=str(tmp_path / "sub" / "named.dat")) == str(tmp_path / "sub" / "named.dat")
    assert (tmp_path / "blob.bin").read_bytes() == BODY == (tmp_path / "sub" / "named.dat").read_bytes()
    assert get.call_args.args == (URL,) and get.call_args.kwargs["stream"] is True
    assert get.call_args.kwargs["verify"] is True
    assert sorted(os.listdir(tmp_path)) == ["blob.bin", "sub"]  # no temporary file left
    assert all(r.closed for r in responses)


def test_existing_file_kept_unless_overwrite_or_sha1_differs(tmp_path):
    target = tmp_path / "blob.bin"
    target.write_bytes(b"old")
    with serve() as get:
        assert utils.download(URL, path=str(tmp_path)) == str(target)
        assert utils.download(URL, path=str(tmp_path), sha1_hash=hashlib.sha1(b"old").hexdigest())
    assert get.call_count == 0 and target.read_bytes() == b"old"
    with serve(FakeResponse()):
        utils.download(URL, path=str(tmp_path), overwrite=True)
    assert target.read_bytes() == BODY
    target.write_bytes(b"stale")
    with serve(FakeResponse()):
        utils.download(URL, path=str(tmp_path), sha1_hash=hashlib.sha1(BODY).hexdigest())
    assert target.read_bytes() == BODY


def test_retries_then_an_error_naming_the_url_and_cause(tmp_path):
    with mock.patch("requests.get", side_effect=requests.exceptions.ConnectionError("no route")) as get:
        with pytest.raises(mx.MXNetError, match=r"example\.com/data/blob\.bin.*3 attempts.*ConnectionError"):
            utils.download(URL, path=str(tmp_path), retries=3)
    assert get.call_count == 3
    with mock.patch("requests.get", side_effect=requests.exceptions.ConnectionError) as get:
        with pytest.raises(mx.MXNetError):
            utils.download(URL, path=str(tmp_path), retries=0)
    assert get.call_count == 1  # at least one attempt, as in MXNet
    with serve(FakeResponse(status=404), FakeResponse()) as get:
        assert utils.download(URL, path=str(tmp_path), retries=2) == str(tmp_path / "blob.bin")
    assert get.call_count == 2
    with serve(FakeResponse(status=404)), pytest.raises(mx.MXNetError, match="HTTP status 404"):
        utils.download(URL, path=str(tmp_path / "x.bin"), retries=1)
    assert sorted(os.listdir(tmp_path)) == ["blob.bin"]


def test_sha1_mismatch_is_retried_then_refused_and_never_lands(tmp_path):
    with serve(FakeResponse(), FakeResponse()) as get:
        with pytest.raises(DownloadHashError, match="sha1") as info:
            utils.download(URL, path=str(tmp_path), sha1_hash="0" * 40, retries=2)
    assert get.call_count == 2
    assert isinstance(info.value, mx.MXNetError) and isinstance(info.value, UserWarning)
    assert os.listdir(tmp_path) == []


def test_write_is_atomic(tmp_path):
    """The target appears only when complete; a broken transfer leaves the old file and no temp file."""
    target = tmp_path / "blob.bin"
    target.write_bytes(b"old")
    seen = []
    with serve(FakeResponse(fail_after=500)):
        with pytest.raises(mx.MXNetError, match="connection broken"):
            utils.download(URL, path=str(tmp_path), overwrite=True, retries=1)
    assert os.listdir(tmp_path) == ["blob.bin"] and target.read_bytes() == b"old"
    fresh = tmp_path / "fresh.bin"
    with serve(FakeResponse(seen=lambda: seen.append(fresh.exists()))):
        utils.download(URL, path=str(fresh))
    assert seen and not any(seen) and fresh.read_bytes() == BODY


def test_replace_file_removes_the_source_on_failure(tmp_path):
    src = tmp_path / "a.tmp"
    src.write_bytes(b"x")
    with pytest.raises(OSError, match="Please retry the download"):
        utils.replace_file(str(src), str(tmp_path / "missing" / "b"))
    assert not src.exists()


def test_verify_ssl_false_warns_and_is_passed_on(tmp_path):
    with serve(FakeResponse()) as get, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        utils.download(URL, path=str(tmp_path), verify_ssl=False)
    assert any(str(w.message).startswith("Unverified HTTPS request") for w in caught)
    assert get.call_args.kwargs["verify"] is False


def test_without_requests_urllib_is_used(tmp_path):
    response = mock.MagicMock(status=200)
    response.__enter__.return_value = response
    response.read.side_effect = io.BytesIO(BODY).read
    with mock.patch.dict(sys.modules, {"requests": None}), \
            mock.patch("urllib.request.urlopen", return_value=response) as urlopen:
        utils.download(URL, path=str(tmp_path))
    assert urlopen.call_args.args == (URL,) and (tmp_path / "blob.bin").read_bytes() == BODY
    with mock.patch.dict(sys.modules, {"requests": None}), \
            mock.patch("urllib.request.urlopen", side_effect=OSError("no network")):
        with pytest.raises(mx.MXNetError, match="blob.bin.*no network"):
            utils.download(URL, path=str(tmp_path / "other.bin"), retries=2)


def test_bad_arguments_are_assertions(tmp_path):
    with pytest.raises(AssertionError, match="file-name"):
        utils.download("https://example.com/")
    with pytest.raises(AssertionError, match="at least 0"):
        utils.download(URL, path=str(tmp_path), retries=-1)


CONCURRENT = textwrap.dedent("""
    import multiprocessing as mp, os, sys, time
    from unittest import mock
    from jbind.gluon import utils

    class Slow:
        status_code = 200
        def iter_content(self, chunk_size=1):
            for _ in range(20):
                time.sleep(0.005)
                yield b"0123456789" * 10

    def one(target, barrier):
        barrier.wait()
        with mock.patch("requests.get", return_value=Slow()):
            utils.download("https://example.com/README.md", path=target)

    if __name__ == "__main__":
        ctx = mp.get_context("fork")  # no JAX backend has started in this process
        barrier = ctx.Barrier(10)
        procs = [ctx.Process(target=one, args=(sys.argv[1], barrier)) for _ in range(10)]
        [p.start() for p in procs]
        [p.join() for p in procs]
        print([p.exitcode for p in procs])
""")


def test_ten_processes_downloading_one_file_leave_one_file(tmp_path):
    script = tmp_path / "race.py"
    script.write_text(CONCURRENT)
    folder = tmp_path / "out"
    folder.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, str(script), str(folder / "README.md")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str([0] * 10)
    assert os.listdir(folder) == ["README.md"]
    assert (folder / "README.md").read_bytes() == b"0123456789" * 200


def test_repo_urls_follow_mxnet_gluon_repo(monkeypatch):
    monkeypatch.delenv("MXNET_GLUON_REPO", raising=False)
    assert utils._get_repo_url() == "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://mirror.local/mx")
    assert utils._get_repo_url() == "http://mirror.local/mx/"
    assert utils._get_repo_file_url("gluon/models", "a.zip") == "http://mirror.local/mx/gluon/models/a.zip"


def test_brief_print_list_and_shape_is_known():
    assert utils._brief_print_list(range(10)) == "'0', '1', '2', ..., '6', '7', '8', '9'"
    assert utils._brief_print_list([1, 2]) == "'1', '2'"
    assert [utils.shape_is_known(s) for s in [None, (), (0, 2), (2, 3)]] == [False, False, False, True]
    with pytest.raises(AssertionError, match="cannot be less than 0"):
        utils.shape_is_known((-1, 2))
    with mx.util.np_shape(True):
        assert [utils.shape_is_known(s) for s in [None, (), (0, 2), (-1, 2)]] == [False, True, True, False]


def test_hook_handle_pickles_with_its_hooks():
    hooks = OrderedDict()
    handle = utils.HookHandle()
    handle.attach(hooks, print)
    hooks2, handle2 = pickle.loads(pickle.dumps((hooks, handle)))
    assert list(hooks2) == [handle2._id]
    handle2.detach()
    assert not hooks2 and list(hooks) == [handle._id]
