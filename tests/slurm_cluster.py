"""A single-node SLURM cluster on this machine, from Debian's packages, on loopback.

    python tests/slurm_cluster.py DIR                 # up until Ctrl-C
    python tests/slurm_cluster.py DIR -- COMMAND ...  # up, COMMAND, down; exits as COMMAND

It runs MariaDB, munged, slurmdbd, slurmctld and slurmd as root, each with its files under DIR
and its own ports, in a private mount namespace where DIR/etc is bound over /etc/slurm: a job's
nested ``srun`` reads the default path, because the executor plugin's job step drops every
SLURM_* variable, SLURM_CONF included. A machine's own SLURM (if any) is untouched. slurmdbd is
there because Snakemake's SLURM executor plugin reads job states through ``sacct``. The node
claims the resources ``workflow/profiles/slurm`` asks for (CPUs, memory, GPUs: /dev/null's
device numbers stand in for their files) with ``SlurmdParameters=config_overrides``, so the
profile's requests are submitted unchanged; the jobs run on this machine's real cores. The
account the profile names exists.

Debian packages: slurmctld slurmd slurmdbd slurm-client munge mariadb-server
(``tests/system_packages.py`` installs them as root).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

# the daemons and clients this needs; absent ones make the SLURM test skip (or fail as root)
COMMANDS = ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd",
            "sbatch", "sacct", "sacctmgr", "squeue")
CLUSTER, ACCOUNT, NODE = "mintrl", "your_account", "node1"
NAMESPACE_FLAG = "MINTRL_SLURM_NAMESPACE"  # set once this script runs in its own mount namespace
# what the node claims (slurmd does not check it against the hardware: config_overrides)
NODE_CPUS, NODE_MEM_MB, NODE_GPUS = 32, 262144, 8


def missing_commands() -> list[str]:
    return [c for c in COMMANDS if not shutil.which(c)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(check, what: str, log: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if check():
            return
        time.sleep(0.25)
    tail = log.read_text()[-2000:] if log.exists() else "(no log)"
    why = f"exited with {proc.returncode}" if proc.poll() is not None else \
        f"did not come up in {timeout:.0f} s"
    raise RuntimeError(f"{what} {why}; {log}:\n{tail}")


def _ok(cmd: list[str], env: dict) -> bool:
    return subprocess.run(cmd, env=env, capture_output=True).returncode == 0


class Cluster:
    """The daemons, started in order; ``env`` is what a SLURM client needs (SLURM_CONF)."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.root / "etc" / "slurm.conf")}
        self.ports = {k: _free_port() for k in ("mariadb", "slurmdbd", "slurmctld", "slurmd")}

    # each daemon runs in the foreground under this process, its output in log/<name>.log
    def _spawn(self, name: str, cmd: list[str]) -> tuple[Path, subprocess.Popen]:
        log = self.root / "log" / f"{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs.append((name, proc))
        return log, proc

    def _dirs(self) -> None:
        for sub in ("etc", "log", "run", "dev", "munge", "munge/key", "mysql", "ctld", "slurmd"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)  # munged wants its socket's folders searchable by all
        (self.root / "munge").chmod(0o755)
        (self.root / "munge" / "key").chmod(0o700)

    def _munge(self) -> None:
        key = self.root / "munge" / "key" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.munge_socket = self.root / "munge" / "munge.socket"
        log, proc = self._spawn("munged", [
            "munged", "--foreground", "--force", f"--key-file={key}",
            f"--socket={self.munge_socket}", f"--pid-file={self.root / 'munge' / 'munged.pid'}",
            f"--seed-file={self.root / 'munge' / 'munged.seed'}",
            f"--log-file={self.root / 'log' / 'munged.file.log'}"])
        _wait(self.munge_socket.exists, "munged", log, proc)

    def _mariadb(self) -> None:
        data, sock = self.root / "mysql" / "data", self.root / "mysql" / "mysqld.sock"
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       check=True, capture_output=True)
        log, proc = self._spawn("mariadbd", [
            "mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={sock}",
            f"--port={self.ports['mariadb']}", "--bind-address=127.0.0.1", "--user=root",
            f"--pid-file={self.root / 'mysql' / 'mysqld.pid'}", "--skip-name-resolve"])
        client = ["mariadb", "--no-defaults", f"--socket={sock}", "-uroot"]
        _wait(lambda: _ok(client + ["-e", "SELECT 1"], self.env), "mariadbd", log, proc)
        sql = ("CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';"
               "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
        subprocess.run(client + ["-e", sql], check=True, capture_output=True)

    def _configs(self) -> None:
        etc, p = self.root / "etc", self.ports
        auth = f"AuthType=auth/munge\nAuthInfo=socket={self.munge_socket}\n"
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(
            f"{auth}DbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort={p['slurmdbd']}\n"
            f"SlurmUser=root\nPidFile={self.root / 'run' / 'slurmdbd.pid'}\n"
            f"LogFile={self.root / 'log' / 'slurmdbd.file.log'}\n"
            "StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\n"
            f"StoragePort={p['mariadb']}\nStorageUser=slurm\nStoragePass=slurm\n"
            "StorageLoc=slurm_acct_db\n")
        dbd.chmod(0o600)  # slurmdbd refuses a config others can read (it holds a password)
        # slurmd drops a GPU without a character device: /dev/null's numbers stand in
        for i in range(NODE_GPUS):
            os.mknod(self.root / "dev" / f"gpu{i}", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        (etc / "gres.conf").write_text(
            f"NodeName={NODE} Name=gpu File={self.root / 'dev'}/gpu[0-{NODE_GPUS - 1}]\n")
        (etc / "slurm.conf").write_text(
            f"ClusterName={CLUSTER}\nSlurmctldHost=localhost(127.0.0.1)\n{auth}"
            f"SlurmUser=root\nSlurmctldPort={p['slurmctld']}\nSlurmdPort={p['slurmd']}\n"
            f"StateSaveLocation={self.root / 'ctld'}\nSlurmdSpoolDir={self.root / 'slurmd'}\n"
            f"SlurmctldPidFile={self.root / 'run' / 'slurmctld.pid'}\n"
            f"SlurmdPidFile={self.root / 'run' / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={self.root / 'log' / 'slurmctld.file.log'}\n"
            f"SlurmdLogFile={self.root / 'log' / 'slurmd.file.log'}\n"
            "AccountingStorageType=accounting_storage/slurmdbd\n"
            f"AccountingStorageHost=localhost\nAccountingStoragePort={p['slurmdbd']}\n"
            # the munge socket of the connection to slurmdbd is set here, not by AuthInfo
            f"AccountingStoragePass={self.munge_socket}\n"
            "AccountingStorageEnforce=associations\nAccountingStorageTRES=gres/gpu\n"
            "JobAcctGatherType=jobacct_gather/linux\nProctrackType=proctrack/linuxproc\n"
            "TaskPlugin=task/none\nMpiDefault=none\nSwitchType=switch/none\n"
            "SchedulerType=sched/backfill\nSelectType=select/cons_tres\n"
            "SelectTypeParameters=CR_Core_Memory\nReturnToService=2\n"
            "SlurmdParameters=config_overrides\nGresTypes=gpu\nMinJobAge=300\n"
            f"NodeName={NODE} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={NODE_CPUS} "
            f"RealMemory={NODE_MEM_MB} Gres=gpu:{NODE_GPUS} State=UNKNOWN\n"
            f"PartitionName=cpu Nodes={NODE} Default=YES MaxTime=INFINITE State=UP\n"
            f"PartitionName=gpu Nodes={NODE} MaxTime=INFINITE State=UP\n")

    def start(self) -> Cluster:
        if missing := missing_commands():
            raise RuntimeError(f"SLURM cluster: missing commands {missing}")
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self._dirs()
        self._munge()
        self._mariadb()
        self._configs()
        if os.environ.get(NAMESPACE_FLAG) == "1":
            subprocess.run(["mount", "--bind", str(self.root / "etc"), "/etc/slurm"], check=True)
        # slurmdbd reads slurmdbd.conf next to SLURM_CONF
        log, proc = self._spawn("slurmdbd", ["slurmdbd", "-D"])
        _wait(lambda: _ok(["sacctmgr", "-n", "list", "cluster"], self.env), "slurmdbd", log, proc)
        for args in (["add", "cluster", CLUSTER], ["add", "account", ACCOUNT],
                     ["add", "user", os.environ.get("USER", "root"), f"account={ACCOUNT}"]):
            subprocess.run(["sacctmgr", "-i", *args], env=self.env, check=True,
                           capture_output=True)
        log, proc = self._spawn("slurmctld", ["slurmctld", "-D", "-i"])
        _wait(lambda: _ok(["scontrol", "ping"], self.env), "slurmctld", log, proc)
        log, proc = self._spawn("slurmd", ["slurmd", "-D", "-N", NODE])
        idle = lambda: "idle" in subprocess.run(  # noqa: E731
            ["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True,
            text=True).stdout
        _wait(idle, "slurmd (node idle)", log, proc)

    def stop(self) -> None:
        """Stops the daemons in reverse order (jobs still running on the node die with slurmd)."""
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        self.procs.clear()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    if not argv or (len(argv) > 1 and (argv[1] != "--" or len(argv) == 2)):
        print("usage: python tests/slurm_cluster.py DIR [-- COMMAND ...]", file=sys.stderr)
        return 2
    root, command = argv[0], argv[2:]
    if os.environ.get(NAMESPACE_FLAG) != "1":  # mounts made below vanish with the namespace
        os.environ[NAMESPACE_FLAG] = "1"
        os.execvp("unshare", ["unshare", "--mount", "--propagation", "private",
                              sys.executable, __file__, *argv])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the daemons on kill too
    with Cluster(Path(root)) as cluster:
        if command:
            return subprocess.run(command, env=cluster.env).returncode
        print(f"export SLURM_CONF={cluster.env['SLURM_CONF']}   # then sbatch, sacct, snakemake",
              flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
