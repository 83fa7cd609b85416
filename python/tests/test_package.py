"""The installed package: where it comes from, and a stub and a docstring for every public name."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import bzhead

from conftest import REPO, run_bzhead


def stub_tree() -> ast.Module:
    return ast.parse((Path(bzhead.__file__).parent / "__init__.pyi").read_text())


def test_the_package_is_installed_not_read_from_the_source_tree():
    pkg = Path(bzhead.__file__).resolve().parent
    assert "site-packages" in pkg.parts, pkg
    assert not str(pkg).startswith(str(REPO / "python")), pkg
    for f in ("__init__.pyi", "py.typed", "aim.py", "danger.py", "nav.py"):
        assert (pkg / f).is_file(), f
    assert list(pkg.glob("_native*.so")), list(pkg.iterdir())
    assert bzhead.__version__


def test_every_public_name_has_a_stub_and_a_docstring():
    tree = stub_tree()
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    exported = set(bzhead.__all__) - {"aim", "danger", "nav"}
    assert exported <= stubbed, exported - stubbed
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            cls = getattr(bzhead, node.name)
            assert inspect.getdoc(cls), node.name
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and not member.name.startswith("__"):
                    assert hasattr(cls, member.name), f"{node.name}.{member.name} is in the stubs only"
                    assert ast.get_docstring(member), f"{node.name}.{member.name} has no docstring in the stubs"
                    assert inspect.getdoc(getattr(cls, member.name)), f"{node.name}.{member.name} has no docstring"
                elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
                    assert hasattr(cls, member.target.id), f"{node.name}.{member.target.id} is in the stubs only"
        elif isinstance(node, ast.FunctionDef):
            assert ast.get_docstring(node), node.name
            assert inspect.getdoc(getattr(bzhead, node.name)), node.name
    for mod in (bzhead.aim, bzhead.danger, bzhead.nav):
        assert inspect.getdoc(mod), mod
        for name, f in inspect.getmembers(mod, inspect.isfunction):
            if f.__module__ == mod.__name__:
                assert inspect.getdoc(f), f"{mod.__name__}.{name}"


def test_view_and_control_cannot_be_made_by_hand():
    for cls in (bzhead.View, bzhead.Control, bzhead.World):
        try:
            cls()
        except TypeError:
            pass
        else:
            raise AssertionError(f"{cls.__name__}() made an object outside a tick")


def test_the_scan_example_lists_a_server(bzfs_factory):
    bzfs = bzfs_factory()
    example = REPO / "python" / "examples" / "scan_servers.py"
    out = subprocess.run(
        [sys.executable, str(example), "bzflag", bzfs.addr, "127.0.0.1:9"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert bzfs.addr in out.stdout and "1 of 2 answered" in out.stderr, (out.stdout, out.stderr)
    assert run_bzhead("--version").returncode == 0


def test_the_minimal_example_plays_and_leaves_on_ctrl_c(bzfs_factory):
    import signal

    bzfs = bzfs_factory()
    example = REPO / "python" / "examples" / "minimal.py"
    proc = subprocess.Popen(
        [sys.executable, str(example), bzfs.addr, "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        seen = []
        while not (any("minimal1: spawned" in s for s in seen) and any("minimal2: spawned" in s for s in seen)):
            line = proc.stdout.readline()
            assert line, (seen, proc.stderr.read())
            seen.append(line)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    import time

    def removed() -> list:
        return [line for line in bzfs.log().splitlines() if "removed" in line and "minimal" in line]

    deadline = time.monotonic() + 10
    while len(removed()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    removed = removed()
    assert len(removed) == 2 and all(line.endswith(": left") for line in removed), bzfs.log()
