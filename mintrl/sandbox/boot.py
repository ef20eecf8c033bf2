"""The first code of a hardened (root-mode) sandbox run: it builds the run's filesystem view,
drops to the run's uid and runs the program, all in one interpreter.

``runner`` starts it as root inside fresh mount, network, PID, IPC and UTS namespaces
(util-linux ``unshare``), compiled once by the same interpreter and passed as ``-c``'s first
argument, with its arguments after it::

    UID NEWROOT WORK PROGRAM CPU_S AS_BYTES FSIZE_BYTES NOFILE NPROC
        bind P... link PATH TARGET... hide P... dev P... end

It mounts an empty tmpfs on NEWROOT; binds each ``bind`` path there read-only at its own path
(the interpreter, its standard library, the shared libraries it loads); recreates each ``link``
(``/lib -> usr/lib``); covers each ``hide`` path (site-packages) with an empty read-only tmpfs;
binds the ``dev`` nodes (``/dev/null``-class); mounts a fresh ``/tmp`` and binds WORK (the run's
own folder) writable inside it; makes the root read-only; ``pivot_root``s into it and detaches
the old root, so nothing else of the machine is reachable: not the repository, ``results/``,
checkpoints, ``/etc``, ``/home``, ``/proc``. Then it sets the rlimits, drops to UID (no groups, no
capabilities, no-new-privs) and runs PROGRAM as ``__main__``.

Standard library only: ``os`` has no ``mount``, so the libc calls go through ``_ctypes``.
Failing to build the view exits with 125 before the program runs.
"""

import _ctypes
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND = 32, 4096
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}


class _Int(_ctypes._SimpleCData):
    _type_ = "i"


class _Long(_ctypes._SimpleCData):
    _type_ = "l"


class _ULong(_ctypes._SimpleCData):
    _type_ = "L"


class _Text(_ctypes._SimpleCData):  # char *: bytes or None
    _type_ = "z"


class _Function(_ctypes.CFuncPtr):  # ctypes' own machinery, without its 2 ms import
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Int


class _Libc:
    _handle = _ctypes.dlopen(None)


def _function(name, *argtypes):
    fn = _Function((name, _Libc))
    fn.argtypes = argtypes
    return fn


def _check(rc, what):
    if rc != 0:
        err = _ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _parse(argv):
    """``bind``/``link``/``hide``/``dev`` sections -> lists (``link`` items come in pairs)."""
    sections, key = {"bind": [], "link": [], "hide": [], "dev": []}, None
    for arg in argv:
        if arg in sections:
            key = arg
        elif arg == "end":
            break
        else:
            sections[key].append(arg)
    links = sections["link"]
    sections["link"] = list(zip(links[::2], links[1::2], strict=True))
    return sections


def _make(path, is_dir):
    os.makedirs(path if is_dir else os.path.dirname(path), mode=0o755, exist_ok=True)
    if not is_dir and not os.path.exists(path):
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def _build(root, work, view):
    libc_mount = _function("mount", _Text, _Text, _Text, _ULong, _Text)

    def enc(text):
        return None if text is None else text.encode()

    def mount(src, dst, fstype, flags, data=None):
        _check(libc_mount(enc(src), enc(dst), enc(fstype), flags, enc(data)),
               f"mount {src} on {dst}")

    secure = MS_NOSUID | MS_NODEV
    mount("tmpfs", root, "tmpfs", secure, "size=1m,mode=755")
    for path in view["bind"]:
        target = root + path
        _make(target, os.path.isdir(path))
        mount(path, target, None, MS_BIND)
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | secure)
    for path, link in view["link"]:
        os.makedirs(os.path.dirname(root + path), mode=0o755, exist_ok=True)
        if not os.path.lexists(root + path):
            os.symlink(link, root + path)
    for path in view["hide"]:
        if os.path.isdir(root + path):
            mount("tmpfs", root + path, "tmpfs", MS_RDONLY | secure, "size=4k,mode=755")
    for path in view["dev"]:
        _make(root + path, False)
        mount(path, root + path, None, MS_BIND)
    _make(root + "/tmp", True)
    mount("tmpfs", root + "/tmp", "tmpfs", secure | MS_NOEXEC, "size=64m,mode=1777")
    _make(root + work, True)
    mount(work, root + work, None, MS_BIND)
    mount(None, root + work, None, MS_REMOUNT | MS_BIND | secure | MS_NOEXEC)
    mount(None, root, None, MS_REMOUNT | MS_RDONLY | secure)
    os.chdir(root)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:  # an architecture without a known number: chroot, no pivot
        os.chroot(".")
    else:
        _check(_function("syscall", _Long, _Text, _Text)(number, b".", b"."), "pivot_root")
        _check(_function("umount2", _Text, _Int)(b".", MNT_DETACH), "detach the old root")
    os.chdir(work)


def _limit(cpu_s, address_space, file_size, open_files, processes):
    """The run's rlimits (set here rather than by ``prlimit``: one exec fewer per run)."""
    for kind, value in ((resource.RLIMIT_CPU, cpu_s), (resource.RLIMIT_AS, address_space),
                        (resource.RLIMIT_FSIZE, file_size), (resource.RLIMIT_NOFILE, open_files),
                        (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, processes)):
        resource.setrlimit(kind, (value, value))


def _drop(uid):
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # all ids non-zero: every capability is gone
    prctl = _function("prctl", _Int, _ULong, _ULong, _ULong, _ULong)
    _check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def boot(argv):
    """Build the view, drop privileges; return the program's path (see the module doc)."""
    uid, root, work, program = int(argv[0]), argv[1], argv[2], argv[3]
    try:
        _build(root, work, _parse(argv[9:]))
        _limit(*map(int, argv[4:9]))
        _drop(uid)
    except OSError as err:
        sys.stderr.write(f"mintrl.sandbox: could not build the run's view: {err}\n")
        sys.stderr.flush()
        os._exit(125)
    return program


def _start():
    """(the program's code, the ``__main__`` namespace emptied for it)."""
    path = boot(sys.argv[1:])
    sys.argv = [path]
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    main = globals()
    for name in [n for n in main if n not in ("__name__", "__builtins__")]:
        del main[name]  # the program starts with a namespace of its own
    main["__file__"] = path
    return code, main


if __name__ == "__main__" and sys.argv[0] == "-c":
    exec(*_start())  # noqa: S102 - the sandboxed program itself, as __main__
