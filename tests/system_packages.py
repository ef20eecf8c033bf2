"""System packages the test suite uses for real, installed where they are missing.

    python tests/system_packages.py      # part of the README's test command

As root on Debian or Ubuntu (CI, containers) it installs them with ``apt-get``; there the tests
that need them fail rather than skip. Elsewhere it says what is missing and goes on: those
tests skip, with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

# command -> Debian package: the sandbox's non-root mode; the browser the MLflow UI test drives;
# the single-node SLURM cluster of the SLURM test (tests/slurm_cluster.py)
PACKAGES = {"bwrap": "bubblewrap", "chromium": "chromium", "chromedriver": "chromium-driver",
            "slurmctld": "slurmctld", "slurmd": "slurmd", "slurmdbd": "slurmdbd",
            "sbatch": "slurm-client", "munged": "munge", "mariadbd": "mariadb-server"}


def _install(packages: list[str]) -> bool:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    if subprocess.run(cmd, env=env).returncode == 0:
        return True
    return (subprocess.run(["apt-get", "update", "-q"], env=env).returncode == 0
            and subprocess.run(cmd, env=env).returncode == 0)


def main() -> int:
    missing = sorted(pkg for cmd, pkg in PACKAGES.items() if not shutil.which(cmd))
    if not missing:
        print("system packages: all present")
        return 0
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print(f"system packages: missing {missing}; the tests that need them skip (install "
              "them with your system's package manager)")
        return 0
    print(f"system packages: installing {missing} with apt-get", flush=True)
    if not _install(missing):
        print(f"error: apt-get could not install {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
