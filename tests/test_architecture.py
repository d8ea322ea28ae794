"""The package's import rules, read from the source with `ast`: arrows run one way, nothing forms a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pillar_cli"

# Which domains each domain may import (besides itself). `api` is pillar_cli/__init__.py; `cli` may import all.
ALLOWED = {
    "version": set(),
    "errors": set(),
    "devices": {"errors"},
    "randomness": set(),
    "artifacts": {"errors", "version"},
    "privacy": {"randomness", "errors"},
    "data": {"errors"},
    "theory": {"errors", "artifacts"},
    "projection": {"errors", "artifacts"},
    "linear": {"randomness", "errors", "devices"},
    "embedding": {"errors", "devices", "data", "artifacts"},
    "gsd": {"randomness", "errors", "artifacts", "privacy", "linear", "embedding"},
    "methods": {"randomness", "errors", "devices", "artifacts", "privacy", "projection", "linear"},
    "reporting": {"randomness", "errors", "artifacts", "projection", "methods", "embedding"},
    "audit": {"randomness", "errors", "artifacts", "privacy", "projection", "linear", "methods"},
    "finetune": {"randomness", "errors", "devices", "artifacts", "privacy", "gsd", "embedding"},
}
# Narrower rules: GSD uses the softmax head's closed form, image ops and weight loading; never training.
ONLY = {("gsd", "linear"): {"pillar_cli.linear.gradients"},
        ("gsd", "embedding"): {"pillar_cli.embedding.images", "pillar_cli.embedding.backbones",
                               "pillar_cli.embedding.networks"},
        ("reporting", "embedding"): {"pillar_cli.embedding.networks"},
        ("finetune", "gsd"): {"pillar_cli.gsd.probes"}, ("finetune", "embedding"): {"pillar_cli.embedding.backbones",
                                                                        "pillar_cli.embedding.networks"}}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports(path: Path, known: set[str]) -> set[str]:
    """Every pillar_cli module this file imports, at any depth of the file (function bodies included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("pillar_cli")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pillar_cli"):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in known else node.module)
    return found


def domain(module: str) -> str:
    parts = module.split(".")
    return "api" if len(parts) == 1 else parts[1]


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(path, set(found)) for name, path in found.items()}


def test_domains_import_only_what_their_rules_allow():
    violations = []
    for module, targets in graph().items():
        source = domain(module)
        if source in ("cli", "__main__"):
            continue
        for target in targets:
            destination = domain(target)
            if destination == source:
                continue
            if source == "api":
                allowed = destination != "cli"
            else:
                allowed = destination in ALLOWED[source] and target in ONLY.get((source, destination), {target})
            if not allowed:
                violations.append(f"{module} imports {target}")
    assert violations == []


def test_no_import_cycles_between_modules():
    edges = graph()
    cycles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    assert cycles == []


def test_every_domain_says_what_it_owns_and_may_import():
    for package in sorted(PACKAGE.iterdir()):
        init = package / "__init__.py"
        if init.exists():
            docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
            assert "import" in docstring.lower(), f"{init} has no docstring naming what it may import"


def command_bodies() -> dict[str, int]:
    """Lines of each CLI command's body: the statements after its docstring (options are its signature)."""
    sizes = {}
    for path in (PACKAGE / "cli").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            decorated = isinstance(node, ast.FunctionDef) and any(
                "cli_errors" in ast.unparse(d) for d in node.decorator_list)
            if decorated:
                body = node.body[1:] if ast.get_docstring(node) else node.body
                sizes[f"{path.stem}.{node.name}"] = body[-1].end_lineno - body[0].lineno + 1
    return sizes


def test_cli_commands_are_thin_and_modules_small():
    assert {name: lines for name, lines in command_bodies().items() if lines > 25} == {}
    assert {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 300} == {}
