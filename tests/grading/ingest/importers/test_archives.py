"""Unpacking uploads: good archives unpack, anything that could write outside the folder is refused."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile

import pytest

from grading.ingest.importers.archives import UnsafeArchive, archive_stem, extract_archive, is_archive_name


def tar_with(path, members, mode="w:gz"):
    """members: (name, bytes) for files, or TarInfo for anything else."""
    with tarfile.open(path, mode) as tf:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tf.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return path


def link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_tar_gz_and_zip_unpack_into_the_folder(tmp_path):
    tgz = tar_with(tmp_path / "run.tar.gz", [("run/trajs/a/a.traj.json", b"{}"), ("./run/logs/a/report.json", b"{}")])
    assert extract_archive(tgz, tmp_path / "out") == 2
    assert (tmp_path / "out" / "run" / "logs" / "a" / "report.json").read_bytes() == b"{}"
    zpath = tmp_path / "run.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("trajs/", "")
        zf.writestr("trajs/b.traj.json", "{}")
    assert extract_archive(zpath, tmp_path / "zout") == 1
    assert (tmp_path / "zout" / "trajs" / "b.traj.json").exists()
    assert is_archive_name("x.TGZ") and not is_archive_name("x.json") and archive_stem("run-2.tar.gz") == "run-2"


@pytest.mark.parametrize(
    "member, message",
    [
        (("../evil.json", b"x"), "'../evil.json': path leaves the archive"),
        (("run/../../evil.json", b"x"), "path leaves the archive"),
        (("/etc/cron.d/evil", b"x"), "'/etc/cron.d/evil': absolute path"),
        (link("run/link", "/etc/passwd"), "'run/link': symbolic link"),
        (link("run/hard", "run/a.json", tarfile.LNKTYPE), "'run/hard': hard link"),
    ],
)
def test_tar_refusals_name_the_member_and_leave_nothing(tmp_path, member, message):
    archive = tar_with(tmp_path / "bad.tar.gz", [("run/a.json", b"{}"), member])
    with pytest.raises(UnsafeArchive, match=message.replace("(", r"\(").replace(")", r"\)")):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil.json").exists()


def test_zip_refusals(tmp_path):
    traversal = tmp_path / "t.zip"
    with zipfile.ZipFile(traversal, "w") as zf:
        zf.writestr("ok.json", "{}")
        zf.writestr("../../evil.json", "x")
    with pytest.raises(UnsafeArchive, match="path leaves the archive"):
        extract_archive(traversal, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    symlink = tmp_path / "s.zip"
    with zipfile.ZipFile(symlink, "w") as zf:
        info = zipfile.ZipInfo("run/link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(UnsafeArchive, match="symbolic link"):
        extract_archive(symlink, tmp_path / "out2")


def test_sizes_are_counted_while_writing(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.json", b"0" * 2_000_000)
    with pytest.raises(UnsafeArchive, match="unpacks to more than 1,000,000 bytes"):
        extract_archive(bomb, tmp_path / "out", max_bytes=1_000_000)
    many = tar_with(tmp_path / "many.tar", [(f"f{i}.json", b"{}") for i in range(5)], mode="w")
    with pytest.raises(UnsafeArchive, match="more than 3 members"):
        extract_archive(many, tmp_path / "out2", max_members=3)


def test_not_an_archive_and_duplicate_members(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"this is not gzip")
    with pytest.raises(UnsafeArchive, match="not a readable"):
        extract_archive(junk, tmp_path / "out")
    dup = tar_with(tmp_path / "dup.tar", [("a.json", b"1"), ("a.json", b"2")], mode="w")
    with pytest.raises(UnsafeArchive, match="holds this path twice"):
        extract_archive(dup, tmp_path / "out2")
