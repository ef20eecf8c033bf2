"""The package's shape (README, Layout): no import cycle, small modules and functions."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mintrl"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60  # of code: the docstring does not count


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports, at the top or inside a function."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_has_no_import_cycle():
    assert find_cycle(import_graph()) is None


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_modules_and_functions_stay_small():
    long_modules, long_functions = {}, {}
    for name, path in _modules().items():
        text = path.read_text()
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            long_modules[name] = n
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            first = node.body[0]
            has_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            start = first.end_lineno + 1 if has_doc and len(node.body) > 1 else first.lineno
            if (n := node.end_lineno - start + 1) > MAX_FUNCTION_LINES:
                long_functions[f"{name}.{node.name}"] = n
    assert long_modules == {}
    assert long_functions == {}


STAGES = ("prepare", "pretrain", "fetch", "filter", "evaluate", "sft", "segment", "train",
          "rollout", "summarize", "track", "tune")


def test_a_stage_module_is_only_its_command_line():
    """``python -m mintrl.<stage>``: argparse around library calls; what the stage computes
    lives in the library, where other code and the tests import it from."""
    extra = {}
    for stage in STAGES:
        tree = ast.parse((PACKAGE / f"{stage}.py").read_text())
        defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        if defined != ["main"]:
            extra[stage] = defined
    assert extra == {}
    importers = {name for name, deps in import_graph().items()
                 if any(d in {f"mintrl.{s}" for s in STAGES} for d in deps)}
    assert importers == set()  # no module imports a stage
