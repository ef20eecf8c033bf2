#!/usr/bin/env bash
# Regenerates constraints/cpu.txt, the lock of the embedded default's CPU environment: every
# package that `pip install -c constraints/cpu.txt -e ".[test]"` installs, at one version.
# pip-compile (pip-tools) resolves pyproject.toml's dependencies and its `test` extra with
# constraints/cpu.in (torch's CPU build) for the Python that runs this script (the lock is for
# Python 3.11, as environment.yml), in a throwaway venv so nothing here leaks into the lock.
#
#   bash constraints/lock.sh            # then review `git diff constraints/cpu.txt`
#
# tests/test_environment.py fails when the installed versions differ from the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
python -m venv "$tools"
"$tools/bin/pip" install -q "pip-tools==7.6.2"
# The current lock seeds the output: pip-compile keeps its pins and resolves only what is new
# (a dependency added to pyproject.toml); `rm constraints/cpu.txt` first to upgrade everything.
if [ -f constraints/cpu.txt ]; then grep -v '^#' constraints/cpu.txt > constraints/cpu.txt.tmp; fi
"$tools/bin/pip-compile" -q --extra test --strip-extras --allow-unsafe --no-emit-index-url \
    --no-emit-find-links --no-header --annotation-style line -o constraints/cpu.txt.tmp \
    pyproject.toml constraints/cpu.in
# A CPU wheel index serves torch as `2.13.0+cpu`; `==2.13.0` matches that build and the
# plain one alike, so the lock installs wherever constraints/cpu.in's pin does.
{
    echo "# The embedded default's CPU environment, locked (Python 3.11). Regenerate with"
    echo "# \`bash constraints/lock.sh\`; both README commands install with \`-c constraints/cpu.txt\`."
    sed -E 's/^torch==([0-9.]+)\+cpu/torch==\1/' constraints/cpu.txt.tmp
} > constraints/cpu.txt
rm constraints/cpu.txt.tmp
