"""The layers of spacy_ag and its static import graph (docs/architecture.md).

A lower layer never imports a higher one; modules of one layer may import
each other as long as there is no cycle. The graph is read from the source
with `ast`, so an import inside a function counts as much as one at the top:
a lazy import only moves the moment the dependency bites, not the dependency.

`LAYERS` is the one declaration: docs/architecture.md shows the same table and
a paragraph per room, and the tests below keep the two equal.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, Iterable, List, NamedTuple, Sequence, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / "spacy_ag"
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"

#: The layers, lowest first: (name, rooms). A room is a path under spacy_ag/, either a module file
#: or a package folder written with a trailing "/" (the package and every module in it). Every
#: module of spacy_ag is in exactly one room.
LAYERS: List[Tuple[str, List[str]]] = [
    ("foundation", ["about.py", "errors.py", "settings.py", "kernel_environment.py", "text_units.py", "tree.py",
                    "synthetic.py"]),
    ("grammar and data", ["grammar/", "corpus.py", "input_formats.py", "evaluation.py", "morphology/",
                          "topics/topic_grammar.py", "topics/spelling.py", "topics/coherence.py",
                          "topics/standard_coherence.py", "topics/planted.py", "topics/ldavis.py"]),
    ("kernels", ["core/__init__.py", "core/compiled.py", "core/state.py", "core/rng.py", "core/borrowed.py",
                 "core/analyses.py", "core/chart.py", "core/sampler.py", "core/hyper.py", "core/segmentation.py",
                 "core/viterbi.py", "core/word_lattice.py", "core/expectations.py", "core/grammatons.py",
                 "core/variational.py", "core/vhyper.py", "core/topic_draws.py", "core/topic_gibbs.py", "core/seating.py",
                 "core/state_checks.py"]),
    ("runners and storage", ["runs/", "topics/gibbs.py", "serialize.py", "archive.py", "model_headers.py"]),
    ("models", ["model.py", "topics/topic_model.py", "topics/__init__.py"]),
    ("faces", ["components/", "annotation/", "config.py"]),
    ("entry points", ["train/", "cli/", "__main__.py", "__init__.py"]),
]

#: What the kernels (every module of core/) may import besides each other: numba's environment, the
#: error table and the grammar the compiler reads. Not `settings`: a runner turns settings into the
#: plain values a kernel takes, and a Python driver of kernels lives in runs/, a floor up.
KERNEL_IMPORTS = ("spacy_ag.kernel_environment", "spacy_ag.errors", "spacy_ag.grammar")

#: Packages whose __init__ defines an object that its own command modules import to register on it,
#: then imports them: the one kind of cycle allowed (a submodule -> its package edge is left out of
#: the cycle check, never out of the layer check). `spacy_ag.cli` defines typer's `app` and imports
#: the command modules so that `spacy-ag --help` lists every command.
REGISTRATION_PACKAGES = {"spacy_ag.cli"}


class Edge(NamedTuple):
    importer: str
    imported: str
    line: int


def package_modules(package_dir: Path) -> Dict[str, Path]:
    """Every module of the package under `package_dir`, by dotted name (a package by its own name)."""
    package_dir = Path(package_dir)
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _named(module: str, path: Path, node: ast.AST) -> List[str]:
    """The dotted names an import statement asks for, relative imports resolved."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = module.split(".")
        keep = len(base) - node.level + (1 if path.name == "__init__.py" else 0)
        if keep <= 0:
            return []
        prefix = ".".join(base[:keep] + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [f"{prefix}.{alias.name}" for alias in node.names]


def import_edges(package_dir: Path) -> List[Edge]:
    """Every import of one module of the package by another, with its line.

    ``import a.b.c`` and ``from a.b import c`` depend on the deepest of a.b.c, a.b, a that is a
    module of the package; imports of other packages are left out.
    """
    modules = package_modules(package_dir)
    package = Path(package_dir).name
    edges = set()
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in _named(module, path, node):
                if name != package and not name.startswith(package + "."):
                    continue
                while name not in modules:
                    name = name.rpartition(".")[0]
                if name != module:
                    edges.add(Edge(module, name, node.lineno))
    return sorted(edges)


def private_imports(package_dir: Path) -> List[str]:
    """``from module import _name`` where the module is another module of the package, as
    ``importer: _name from module (line N)``. A private name is the module's own business: what
    another module needs is public (and then unique in the package)."""
    modules = package_modules(package_dir)
    package = Path(package_dir).name
    found = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
                continue
            source = _named(module, path, node)[0].rpartition(".")[0]  # the module the names come from
            if source != package and not source.startswith(package + "."):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and source != module:
                    found.append(f"{module}: {alias.name} from {source} (line {node.lineno})")
    return found


def module_layers(package_dir: Path, layers: Sequence[Tuple[str, Sequence[str]]]) -> Tuple[Dict[str, int], List[str]]:
    """The layer number of every module, and the problems of the declaration: a module in no room
    or in two, a room that names no module."""
    package_dir = Path(package_dir)
    modules = package_modules(package_dir)
    package = package_dir.name
    placed: Dict[str, List[Tuple[int, str]]] = {m: [] for m in modules}
    problems = []
    for number, (_, rooms) in enumerate(layers):
        for room in rooms:
            if room.endswith("/"):
                name = package + "." + room.rstrip("/").replace("/", ".")
                members = [m for m in modules if m == name or m.startswith(name + ".")]
            else:
                parts = room[: -len(".py")].split("/")
                if parts[-1] == "__init__":
                    parts.pop()
                name = ".".join([package] + parts)
                found = modules.get(name)
                members = [name] if found and found.relative_to(package_dir).as_posix() == room else []
            if not members:
                problems.append(f"room {room} (layer {number}) names no module of {package}")
            for m in members:
                placed[m].append((number, room))
    for m, where in sorted(placed.items()):
        if not where:
            problems.append(f"{m} is in no layer: add it to a room of LAYERS and of docs/architecture.md")
        elif len(where) > 1:
            problems.append(f"{m} is in more than one room: " + ", ".join(room for _, room in where))
    return {m: where[0][0] for m, where in placed.items() if where}, problems


def upward_edges(edges: Iterable[Edge], layer: Dict[str, int]) -> List[str]:
    """The imports of a higher layer by a lower one, as ``lower.module -> higher.module (line N)``."""
    return [f"{e.importer} -> {e.imported} (line {e.line})" for e in edges if layer[e.importer] < layer[e.imported]]


def foreign_imports(edges: Iterable[Edge], package: str, allowed: Sequence[str]) -> List[str]:
    """The imports by modules of `package` of modules outside it and outside `allowed` (each a module
    or a package with its modules), as ``importer -> imported (line N)``."""
    def within(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return [f"{e.importer} -> {e.imported} (line {e.line})" for e in edges
            if within(e.importer, package) and not within(e.imported, package)
            and not any(within(e.imported, a) for a in allowed)]


def import_cycles(edges: Iterable[Edge], registration_packages: Set[str] = frozenset()) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted.

    An edge from a module to the registration package that contains it is left out.
    """
    graph: Dict[str, Set[str]] = {}
    for e in edges:
        graph.setdefault(e.imported, set())
        if e.imported in registration_packages and e.importer.startswith(e.imported + "."):
            graph.setdefault(e.importer, set())
            continue
        graph.setdefault(e.importer, set()).add(e.imported)
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(components)


def doc_layer_table(text: str) -> List[Tuple[int, str, List[str]]]:
    """The rows ``| number | name | `room`, `room` ... |`` of the layer table of docs/architecture.md."""
    rows = []
    for line in text.splitlines():
        match = re.fullmatch(r"\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|([^|]+)\|", line.strip())
        if match:
            rows.append((int(match.group(1)), match.group(2), re.findall(r"`([^`]+)`", match.group(3))))
    return rows


def doc_rooms(text: str) -> List[str]:
    """The rooms that have a paragraph of their own: paragraphs that start with **`room`**."""
    return re.findall(r"^\*\*`([^`]+)`\*\*", text, flags=re.MULTILINE)


# ---------------------------------------------------------------- spacy_ag itself


def test_every_module_is_in_exactly_one_layer():
    layer, problems = module_layers(PACKAGE_DIR, LAYERS)
    assert problems == []
    assert len(layer) == len(package_modules(PACKAGE_DIR)) > 90


def test_no_lower_layer_imports_a_higher_one():
    edges = import_edges(PACKAGE_DIR)
    # the graph is really read: edges that must be there are there
    pairs = {(e.importer, e.imported) for e in edges}
    assert {("spacy_ag.model", "spacy_ag.runs.chain_pool"), ("spacy_ag.runs.chain_pool", "spacy_ag.runs.mcmc_chain"),
            ("spacy_ag.runs.mcmc_chain", "spacy_ag.core.sampler"),
            ("spacy_ag.serialize", "spacy_ag.core.state")} <= pairs
    layer, _ = module_layers(PACKAGE_DIR, LAYERS)
    assert upward_edges(edges, layer) == []


def test_the_kernels_import_only_kernels_and_what_they_stand_on():
    layer, _ = module_layers(PACKAGE_DIR, LAYERS)
    kernels = [name for name, _ in LAYERS].index("kernels")
    core = [m for m in layer if m == "spacy_ag.core" or m.startswith("spacy_ag.core.")]
    assert len(core) > 15
    # a module of core/ declared on a higher floor could import runs/ unseen by the layer check
    assert [m for m in core if layer[m] != kernels] == []
    assert foreign_imports(import_edges(PACKAGE_DIR), "spacy_ag.core", KERNEL_IMPORTS) == []


def test_no_import_cycles():
    edges = import_edges(PACKAGE_DIR)
    assert import_cycles(edges, REGISTRATION_PACKAGES) == []
    # the allowance is still needed (remove it when it is not): without it, the package is a cycle
    for package in REGISTRATION_PACKAGES:
        assert any(package in component for component in import_cycles(edges)), package


def test_the_doc_shows_the_declared_layers():
    text = ARCHITECTURE_DOC.read_text(encoding="utf8")
    table = doc_layer_table(text)
    assert [(number, name, sorted(rooms)) for number, name, rooms in table] == \
        [(number, name, sorted(rooms)) for number, (name, rooms) in enumerate(LAYERS)]
    declared = sorted(room for _, rooms in LAYERS for room in rooms)
    assert sorted(doc_rooms(text)) == declared


def test_the_version_is_defined_once_in_about():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    import spacy_ag
    from spacy_ag import about

    assert spacy_ag.__version__ == about.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "spacy_ag.about.__version__"}
    assigned = [path.relative_to(PACKAGE_DIR).as_posix() for path in package_modules(PACKAGE_DIR).values()
                for node in ast.walk(ast.parse(path.read_text(encoding="utf8")))
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets)]
    assert assigned == ["about.py"]


def test_the_layout_page_links_the_architecture():
    assert "architecture.md" in (ROOT / "docs" / "layout.md").read_text(encoding="utf8")


# ---------------------------------------------------------------- the checker on a made-up package

FAKE = {
    "__init__.py": "",
    "base.py": "import os\nfrom . import plain\n",
    "plain.py": "",
    "late.py": "import json\n\n\ndef later():\n    from fake.top import thing\n    return thing\n",
    "top.py": "from .base import *\nthing = 1\n",
    "sub/__init__.py": "from .a import value\n",
    "sub/a.py": "from . import b\nvalue = 1\n",
    "sub/b.py": "from fake.sub.a import value\n",
    "app/__init__.py": "registry = []\nfrom . import command  # noqa: E402\n",
    "app/command.py": "from . import registry\nfrom .. import top\n",
}
FAKE_LAYERS = [
    ("low", ["__init__.py", "base.py", "plain.py", "late.py", "sub/"]),
    ("high", ["top.py", "app/"]),
]


def write_fake_package(tmp_path: Path) -> Path:
    root = tmp_path / "fake"
    for name, text in FAKE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf8")
    return root

def modules_sharing_a_name(package: Path) -> dict:
    """{file name: its paths} for every module file name (``__init__.py`` aside) that more than one
    module, or a module and a package, of `package` carry."""
    paths: dict = {}
    for path in package.rglob("*"):
        if "__pycache__" in path.parts or path.name == "__init__.py":
            continue
        if path.suffix == ".py":
            paths.setdefault(path.stem, []).append(path.relative_to(package).as_posix())
        elif path.is_dir() and (path / "__init__.py").exists():
            paths.setdefault(path.name, []).append(path.relative_to(package).as_posix() + "/")
    return {name: sorted(found) for name, found in paths.items() if len(found) > 1}


def test_no_two_modules_share_a_name():
    shared = modules_sharing_a_name(PACKAGE_DIR)
    assert not shared, f"module names used more than once: {shared}"


def test_the_name_check_catches_a_shared_name(tmp_path):
    for name in ("a/__init__.py", "a/model.py", "b/__init__.py", "b/model.py", "c/__init__.py", "c/a.py", "d.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf8")
    assert modules_sharing_a_name(tmp_path) == {"model": ["a/model.py", "b/model.py"], "a": ["a/", "c/a.py"]}


def test_no_module_imports_another_modules_private_names():
    found = private_imports(PACKAGE_DIR)
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_the_checker_catches_a_private_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def _helper():\n    return 1\n")
    (package / "b.py").write_text("from .a import _helper\nfrom . import a\n")
    assert private_imports(package) == ["pkg.b: _helper from pkg.a (line 1)"]



def test_the_checker_reads_relative_late_and_submodule_imports(tmp_path):
    edges = import_edges(write_fake_package(tmp_path))
    assert edges == [
        Edge("fake.app", "fake.app.command", 2),
        Edge("fake.app.command", "fake.app", 1),
        Edge("fake.app.command", "fake.top", 2),
        Edge("fake.base", "fake.plain", 2),  # `from . import plain`: the module, not the package
        Edge("fake.late", "fake.top", 5),  # inside a function
        Edge("fake.sub", "fake.sub.a", 1),
        Edge("fake.sub.a", "fake.sub.b", 1),
        Edge("fake.sub.b", "fake.sub.a", 1),
        Edge("fake.top", "fake.base", 1),  # a star import depends on the module
    ]


def test_the_checker_catches_an_upward_edge_and_cycles(tmp_path):
    root = write_fake_package(tmp_path)
    edges = import_edges(root)
    layer, problems = module_layers(root, FAKE_LAYERS)
    assert problems == []
    assert upward_edges(edges, layer) == ["fake.late -> fake.top (line 5)"]
    assert import_cycles(edges) == [["fake.app", "fake.app.command"], ["fake.sub.a", "fake.sub.b"]]
    assert import_cycles(edges, {"fake.app"}) == [["fake.sub.a", "fake.sub.b"]]


def test_the_checker_catches_an_import_out_of_a_package(tmp_path):
    edges = import_edges(write_fake_package(tmp_path))
    assert foreign_imports(edges, "fake.app", ["fake.base"]) == ["fake.app.command -> fake.top (line 2)"]
    assert foreign_imports(edges, "fake.app", ["fake.top"]) == []
    assert foreign_imports(edges, "fake.sub", []) == []  # imports inside the package are its own


def test_the_checker_catches_a_bad_declaration(tmp_path):
    root = write_fake_package(tmp_path)
    _, problems = module_layers(root, [("low", ["__init__.py", "base.py", "base.py", "sub/a.py", "gone.py"]),
                                       ("high", ["sub/", "app/", "top.py"])])
    assert problems == [
        "room gone.py (layer 0) names no module of fake",
        "fake.base is in more than one room: base.py, base.py",
        "fake.late is in no layer: add it to a room of LAYERS and of docs/architecture.md",
        "fake.plain is in no layer: add it to a room of LAYERS and of docs/architecture.md",
        "fake.sub.a is in more than one room: sub/a.py, sub/",
    ]
