"""The package's import rules, read from the source with `ast`: arrows run one way, nothing forms a cycle."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pillar_cli"

# Each domain's docstring (its package __init__, or the module itself) ends with "May import: `a`, `b.c`, ..."
# — a whole domain, or only the named module of one — or "May import: nothing." `api` is
# pillar_cli/__init__.py and `cli` may import every domain.
RULE = re.compile(r"^May import: (.*?)(?:\n\n|\Z)", re.MULTILINE | re.DOTALL)


def declared_imports() -> dict[str, set[str]]:
    """Each domain's "May import" list, as dotted names below pillar_cli."""
    rules = {}
    for path in sorted(PACKAGE.iterdir()):
        source = path / "__init__.py" if path.is_dir() else path
        if path.name in ("cli", "__init__.py", "__main__.py", "__pycache__") or not source.exists():
            continue
        docstring = ast.get_docstring(ast.parse(source.read_text())) or ""
        match = RULE.search(docstring)
        assert match, f"{source} has no 'May import:' line in its docstring"
        rules[path.stem] = set(re.findall(r"`([a-z_.]+)`", match.group(1)))
    return rules


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


def test_domains_import_exactly_what_their_docstrings_declare():
    rules, violations, used = declared_imports(), [], {}
    for module, targets in graph().items():
        source = domain(module)
        for target in targets:
            destination = domain(target)
            if (
                destination == source
                or source in ("cli", "__main__")
                or (source == "api" and destination != "cli")
            ):
                continue
            named = target.removeprefix("pillar_cli.")
            entry = (
                destination
                if destination in rules.get(source, ())
                else next(
                    (rule for rule in rules.get(source, ()) if named == rule or named.startswith(rule + ".")),
                    None,
                )
            )
            if entry is None:
                violations.append(f"{module} imports {target}, which its domain's docstring does not declare")
            used.setdefault(source, set()).add(entry)
    unused = {source: sorted(rule - used.get(source, set())) for source, rule in rules.items()}
    assert violations == []
    assert {source: rule for source, rule in unused.items() if rule} == {}  # the docstrings do not overstate


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


def statements(nodes: list[ast.AST]) -> int:
    """The statements in `nodes`, at any depth: the size of code whatever the width of its lines."""
    return sum(isinstance(node, ast.stmt) for top in nodes for node in ast.walk(top))


def command_bodies() -> dict[str, int]:
    """Statements of each CLI command's body: those after its docstring (options are its signature)."""
    sizes = {}
    for path in (PACKAGE / "cli").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            decorated = isinstance(node, ast.FunctionDef) and any(
                "cli_errors" in ast.unparse(d) for d in node.decorator_list
            )
            if decorated:
                sizes[f"{path.stem}.{node.name}"] = statements(
                    node.body[1:] if ast.get_docstring(node) else node.body
                )
    return sizes


# a module's statements at any depth (about 300 lines of dense code): counted so, a module stays small by its
# structure, not by the width of its lines
MAX_STATEMENTS = 200
MAX_COMMAND_STATEMENTS = 22  # a command's body: about 25 dense lines


def test_cli_commands_are_thin_and_modules_small():
    assert {name: size for name, size in command_bodies().items() if size > MAX_COMMAND_STATEMENTS} == {}
    assert {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := statements([ast.parse(p.read_text())])) > MAX_STATEMENTS
    } == {}


def test_no_module_names_a_method_but_its_own_and_the_registry():
    """A method is one module and one registration: another module spelling a method's name would be one more
    place to change when a method is added, renamed or removed (the program's name is `version.PROGRAM`)."""
    from pillar_cli.methods.catalog import METHODS

    homes = {
        name: Path(sys.modules[type(method).__module__].__file__).resolve()
        for name, method in METHODS.items()
    }
    allowed = {PACKAGE / "methods" / "catalog.py", PACKAGE / "version.py"}  # the registry; the program's name
    named = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} names method '{node.value}'"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant)
        and node.value in homes
        and path.resolve() not in {homes[node.value], *allowed}
    ]
    assert named == []


def _texts_outside_docstrings(tree: ast.AST) -> list[ast.Constant]:
    """Every string constant of a module that is not a docstring (a module's, a class's or a function's)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_mechanism_spells_its_neighbouring_relation_by_hand():
    """Mechanisms state a `Relation` value; only privacy/guarantee.py and privacy/relation.py turn one into
    words, so that no description can claim a relation its mechanism does not declare."""
    spelled = re.compile(r"add/remove|add or remove|replace-one|replace one", re.IGNORECASE)
    owners = {PACKAGE / "privacy" / "unit.py", PACKAGE / "privacy" / "relation.py"}
    found = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in owners
        for node in _texts_outside_docstrings(ast.parse(path.read_text()))
        if spelled.search(node.value)
    ]
    assert found == []


def test_deltas_are_summed_in_one_function():
    """δ_total (a run's δ plus each upstream release's) is privacy/guarantee.py's `total_delta`: a sum or an
    addition reading a `delta` key or attribute anywhere else would be a second, possibly different,
    composition."""

    def reads_delta(node: ast.AST) -> bool:
        if isinstance(node, (ast.JoinedStr, ast.List, ast.ListComp)):  # text, or lists concatenated
            return False
        return any(
            (isinstance(sub, ast.Constant) and sub.value == "delta")
            or (isinstance(sub, ast.Attribute) and sub.attr == "delta")
            for sub in ast.walk(node)
        )

    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for function in ast.walk(ast.parse(path.read_text())):
            for node in ast.walk(function) if isinstance(function, (ast.FunctionDef, ast.Lambda)) else ():
                summed = (
                    [node.left, node.right]
                    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
                    else [node.value]
                    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add)
                    else node.args
                    if isinstance(node, ast.Call) and ast.unparse(node.func) == "sum"
                    else []
                )
                if any(map(reads_delta, summed)):
                    found.add(f"{path.relative_to(PACKAGE)}:{getattr(function, 'name', 'lambda')}")
    assert found == {"privacy/guarantee.py:total_delta"}


def test_the_training_domains_read_the_privacy_unit_as_units_not_as_an_optional_array():
    """Where the rows train (methods, the engine, the audit, the projections, privacy), every row's unit is a
    `Units` value (privacy/guarantee.py): `Units.rows(n)` where each row is its own, never a person array that
    None means "rows" — which every consumer had to branch on. Sources and files keep the column they may or
    may not record; their `units` turns it into the value."""
    optional = re.compile(
        r"\b(persons|unit|units)\s+is\s+(not\s+)?None\b|\b(private_persons|persons_from|val_persons)\b"
    )
    domains = ("methods", "linear", "audit", "projection", "privacy")
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for domain in domains
        for path in sorted((PACKAGE / domain).rglob("*.py"))
        if path != PACKAGE / "privacy" / "unit.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if optional.search(line)
    ]
    assert found == []


def test_a_guarantee_is_made_in_one_place():
    """The plan's `guarantee_of` is where a Guarantee is made (sweeps, fine-tuning, an audit's file);
    everything else reads one from a file or copies the plan's for a head."""
    made = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "Guarantee"
    ]
    assert len(made) == 1 and made[0].startswith("methods/plan.py:")
