"""cdc.spill_dir: the spill directory is private or refused; files are exclusive, 0600, swept; a full disk is named."""

from __future__ import annotations

import os
import stat

import pytest

from cdc.errors import SpillError
from cdc.spill.dirs import PrivateDir, default_spill_dir
from cdc.spill.store import SpillPolicy, TransactionStore


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_directory_and_its_missing_parent_are_created_0700(tmp_path):
    d = tmp_path / "state" / "spill" / "shop"
    PrivateDir(str(d)).close()
    assert mode(d) == 0o700 and mode(d.parent) == 0o700


def test_a_directory_open_to_others_is_refused_naming_it_its_owner_mode_and_the_fix(tmp_path):
    d = tmp_path / "shop"
    d.mkdir()
    d.chmod(0o777)
    with pytest.raises(SpillError) as err:
        TransactionStore(str(d))
    msg = str(err.value)
    assert f"spill directory {d} is owned by uid {os.geteuid()}" in msg and "(0777)" in msg and "chmod 700" in msg
    assert err.value.mode == "0777" and err.value.directory == str(d)


def test_group_read_alone_is_refused(tmp_path):
    d = tmp_path / "shop"
    d.mkdir(mode=0o740)
    d.chmod(0o740)
    with pytest.raises(SpillError, match=r"\(0740\)"):
        PrivateDir(str(d))


def test_a_directory_owned_by_another_user_is_refused(tmp_path):
    assert os.geteuid() == 0, "this test chowns a directory to another uid: it runs as root (CI does)"
    d = tmp_path / "shop"
    d.mkdir(mode=0o700)
    os.chown(d, 4242, 4242)
    with pytest.raises(SpillError, match="owned by uid 4242") as err:
        PrivateDir(str(d))
    assert err.value.owner == 4242


def test_a_symlink_is_refused_even_to_a_private_directory(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "shop").symlink_to(real)
    with pytest.raises(SpillError, match="symbolic link"):
        PrivateDir(str(tmp_path / "shop"))


def test_files_are_created_exclusively_with_mode_0600_and_unpredictable_names(tmp_path):
    d = PrivateDir(str(tmp_path / "shop"))
    d.create("a.chunk", b"x")
    assert mode(tmp_path / "shop" / "a.chunk") == 0o600
    with pytest.raises(SpillError, match="File exists"):
        d.create("a.chunk", b"y")  # never opens a file that is already there (O_EXCL) ...
    os.symlink(tmp_path / "elsewhere", tmp_path / "shop" / "b.chunk")
    with pytest.raises(SpillError, match="File exists"):
        d.create("b.chunk", b"y")  # ... nor follows a planted link
    assert not (tmp_path / "elsewhere").exists() and d.read("a.chunk") == b"x"
    d.close()

    store = TransactionStore(str(tmp_path / "s"), SpillPolicy(threshold_rows=2, chunk_rows=2))
    buf = store.open("tx")
    for i in range(6):
        buf.append(("row", i), key=i)
    buf._wait_written()
    names = sorted(os.listdir(tmp_path / "s"))
    assert len(names) == 3 and all(mode(tmp_path / "s" / n) == 0o600 for n in names)
    tokens = {n.split(".")[2] for n in names}
    assert len(tokens) == 3 and all(len(t) == 16 for t in tokens)  # 64 random bits per file
    buf.discard()
    store.close()


def test_sweep_removes_an_earlier_process_files_and_counts_them(tmp_path):
    d = tmp_path / "shop"
    d.mkdir(mode=0o700)
    (d / "one.chunk").write_bytes(b"12345")
    (d / "two.chunk").write_bytes(b"123")
    assert PrivateDir(str(d)).sweep() == (2, 8)
    assert os.listdir(d) == []


def test_a_corrupt_chunk_file_stops_the_iteration_naming_file_chunk_and_offset(tmp_path):
    store = TransactionStore(str(tmp_path / "s"), SpillPolicy(threshold_rows=4, chunk_rows=4))
    buf = store.open("5.12.99")
    for i in range(20):
        buf.append(("row", i, "x" * 50), key=i)
    buf._wait_written()
    second = buf._chunks[1][0]
    path = tmp_path / "s" / second
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    rows = []
    with pytest.raises(SpillError) as err:
        rows.extend(buf)
    assert rows == [("row", i, "x" * 50) for i in range(4)]  # chunk 0 only: nothing of chunk 1 or after
    assert err.value.chunk == 1 and err.value.path == str(path) and err.value.offset == 32
    assert "transaction 5.12.99" in str(err.value) and "digest mismatch" in str(err.value)
    buf.discard()
    store.close()


def test_a_truncated_chunk_file_is_named(tmp_path):
    store = TransactionStore(str(tmp_path / "s"), SpillPolicy(threshold_rows=4, chunk_rows=4))
    buf = store.open("tx")
    for i in range(8):
        buf.append(("row", i), key=i)
    buf._wait_written()
    path = tmp_path / "s" / buf._chunks[0][0]
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(SpillError, match=r"spill chunk 0 of transaction tx in .* is corrupt: truncated") as err:
        list(buf)
    assert err.value.offset == 40
    buf.discard()
    store.close()


def test_a_full_disk_names_the_directory_and_the_bytes_and_leaves_no_partial_file(tiny_disk):
    store = TransactionStore(str(tiny_disk / "shop"), SpillPolicy(threshold_rows=10, chunk_rows=10))
    buf = store.open("tx")
    with pytest.raises(SpillError) as err:
        for i in range(200):  # 20 chunks of ~10 KiB: the fifth or so does not fit
            buf.append(("row", i, os.urandom(1000)), key=i, nbytes=1100)
        buf._wait_written()
    msg = str(err.value)
    assert f"the file system holding {tiny_disk / 'shop'} is full" in msg and "No space left on device" in msg
    assert f"cannot write {err.value.nbytes} bytes" in msg and err.value.nbytes > 10_000
    assert not os.path.exists(err.value.path)  # the partial file is gone
    buf.discard()
    store.close()


def test_the_default_location_is_a_private_state_directory_never_tmp(monkeypatch, tmp_path):
    monkeypatch.setenv("CDC_STATE_DIR", str(tmp_path / "state"))
    assert default_spill_dir() == str(tmp_path / "state" / "spill")
    monkeypatch.delenv("CDC_STATE_DIR")
    container = tmp_path / "var-lib-cdc"
    container.mkdir()
    monkeypatch.setattr("cdc.spill.dirs.CONTAINER_STATE", str(container))
    assert default_spill_dir() == str(container / "spill")
    monkeypatch.setattr("cdc.spill.dirs.CONTAINER_STATE", str(tmp_path / "absent"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_spill_dir() == str(tmp_path / "xdg" / "cdc" / "spill")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_spill_dir() == str(tmp_path / "home" / ".local" / "state" / "cdc" / "spill")
