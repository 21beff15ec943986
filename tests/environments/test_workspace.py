"""A sample's workspace from the task and the row: inline text, host files, folders and archives, later sources
replacing earlier ones; paths that leave the workspace, in a spec, a row or an archive, are refused."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from assay.environments.base import EnvironmentSpec
from assay.environments.workspace import materialise


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            out[str(path.relative_to(root))] = path.read_text()
    return out


def _tar(path: Path, members: dict[str, str], links: dict[str, str] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return path


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def test_inline_host_file_and_row_files_later_ones_win(tmp_path: Path) -> None:
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "given.txt").write_text("from the host\n")
    spec = EnvironmentSpec(
        files={"a.txt": "task a\n", "src/b.py": "b = 1\n", "g.txt": {"path": "given.txt"}},
        base_dir=str(tmp_path / "task"),
    )
    dest = tmp_path / "ws"
    dest.mkdir()
    initial = materialise(spec, {"files": {"a.txt": "row a\n", "c/d.txt": "d\n"}}, dest, None)
    expected = {"a.txt": "row a\n", "src/b.py": "b = 1\n", "g.txt": "from the host\n", "c/d.txt": "d\n"}
    assert _tree(dest) == expected
    assert {k: v.decode() for k, v in initial.items()} == expected


@pytest.mark.parametrize("kind", ["folder", "tar", "zip"])
def test_folder_or_archive_as_base_then_row_archive_over_it(tmp_path: Path, kind: str) -> None:
    base = {"repo/main.py": "print('hi')\n", "repo/README": "read me\n"}
    if kind == "folder":
        for name, text in base.items():
            (tmp_path / "base" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "base" / name).write_text(text)
        source = "base"
    elif kind == "tar":
        source = _tar(tmp_path / "base.tar.gz", base).name
    else:
        source = _zip(tmp_path / "base.zip", base).name
    _tar(tmp_path / "row.tgz", {"repo/main.py": "print('fixed')\n", "repo/new.txt": "new\n"})
    dest = tmp_path / "ws"
    dest.mkdir()
    spec = EnvironmentSpec(folder=source, base_dir=str(tmp_path), row_files="repo_archive")
    materialise(spec, {"repo_archive": "row.tgz"}, dest, None)
    assert _tree(dest) == {"repo/main.py": "print('fixed')\n", "repo/README": "read me\n", "repo/new.txt": "new\n"}


@pytest.mark.parametrize(
    ("spec_files", "row", "says"),
    [
        ({"../escape.txt": "x"}, {}, "environment.files['../escape.txt']"),
        ({"/etc/evil": "x"}, {}, "is absolute"),
        ({}, {"files": {"a/../../b": "x"}}, "row key 'files', file 'a/../../b'"),
        ({}, {"files": {"/abs": "x"}}, "row key 'files'"),
    ],
)
def test_paths_leaving_the_workspace_are_refused(tmp_path: Path, spec_files: dict, row: dict, says: str) -> None:
    dest = tmp_path / "ws"
    dest.mkdir()
    with pytest.raises(ValueError, match=r"leaves|absolute") as err:
        materialise(EnvironmentSpec(files=spec_files), row, dest, None)
    assert says in str(err.value)
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "b").exists()


def test_archive_members_and_links_leaving_the_workspace_are_refused(tmp_path: Path) -> None:
    dest = tmp_path / "ws"
    dest.mkdir()
    cases = {
        "up.tar": _tar(tmp_path / "up.tar", {"../up.txt": "x"}),
        "link.tar": _tar(tmp_path / "link.tar", {}, links={"passwd": "/etc/passwd"}),
        "rel-link.tar": _tar(tmp_path / "rel-link.tar", {}, links={"out": "../../outside"}),
        "up.zip": _zip(tmp_path / "up.zip", {"../../up.txt": "x"}),
        "abs.zip": _zip(tmp_path / "abs.zip", {"/abs.txt": "x"}),
    }
    for name, archive in cases.items():
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            materialise(EnvironmentSpec(folder=str(archive)), {}, dest, None)
    assert not (tmp_path / "up.txt").exists() and not os.path.lexists(dest / "passwd")


def test_a_link_already_in_the_workspace_cannot_redirect_later_files(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "lib").symlink_to(tmp_path / "outside")
    (tmp_path / "outside").mkdir()
    (tmp_path / "row").mkdir()
    (tmp_path / "row" / "lib").mkdir()
    (tmp_path / "row" / "lib" / "x.txt").write_text("x")
    dest = tmp_path / "ws"
    dest.mkdir()
    with pytest.raises(ValueError, match="symbolic link"):
        materialise(EnvironmentSpec(folder="base", files={"lib/y.txt": "y"}, base_dir=str(tmp_path)), {}, dest, None)
    dest2 = tmp_path / "ws2"
    dest2.mkdir()
    spec = EnvironmentSpec(folder="base", base_dir=str(tmp_path), row_files="dir")
    with pytest.raises(ValueError, match="symbolic link"):
        materialise(spec, {"dir": "row"}, dest2, None)
    assert list((tmp_path / "outside").iterdir()) == []


def test_a_missing_source_or_wrong_row_value_says_which(tmp_path: Path) -> None:
    dest = tmp_path / "ws"
    dest.mkdir()
    with pytest.raises(ValueError, match=r"environment\.folder: .*nope\.tar.*does not exist"):
        materialise(EnvironmentSpec(folder="nope.tar", base_dir=str(tmp_path)), {}, dest, None)
    with pytest.raises(ValueError, match="row key 'files'"):
        materialise(EnvironmentSpec(), {"files": 3}, dest, None)
