"""Running model-generated code: a separate, limited process that sees only its interpreter.

- ``runner``: ``run_python`` and the isolation modes (root: util-linux namespaces and a uid of
  the run's own; bwrap: bubblewrap for a non-root caller);
- ``view``: what a run sees of the filesystem;
- ``boot``: the first code of a root-mode run, which builds that view and drops privileges.
"""

from mintrl.sandbox.runner import (
    Limits,
    SandboxResult,
    SandboxUnavailable,
    allow_unisolated,
    hardened,
    isolation,
    run_python,
)

__all__ = ["Limits", "SandboxResult", "SandboxUnavailable", "allow_unisolated", "hardened",
           "isolation", "run_python"]
