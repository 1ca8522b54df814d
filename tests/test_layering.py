"""The import arrows of CONTRIBUTING.md's "Layers": runtime/ never imports a kernel module (a module that
registers an op), no kernel module imports another, and no module of the package (ops/, runtime/, delegates/,
tools/, verify/, ...) imports a private (underscore) name of an ops/ module."""

from __future__ import annotations

import ast
import pathlib

import litert_py.ops  # noqa: F401  (registers every kernel)
from litert_py.ops import registry

PACKAGE = pathlib.Path(litert_py.ops.__file__).resolve().parents[1]


def _module_name(path: pathlib.Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def _relative_imports(path: pathlib.Path):
    """(absolute module name, imported names) of every ``from ... import`` inside litert_py in ``path``."""
    module = _module_name(path)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.removesuffix(".__init__")
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target == "litert_py" or target.startswith("litert_py."):
            yield target, [a.name for a in node.names]


def _kernel_modules() -> set[str]:
    entries = list(registry._BUILTIN.values()) + list(registry._CUSTOM.values())
    # the package's own: other tests register custom ops of their own modules in the same process
    return {e.prepare.__module__ for e in entries} & set(map(_module_name, PACKAGE.rglob("*.py")))


def test_runtime_imports_no_kernel_module():
    kernels = _kernel_modules()
    assert "litert_py.ops.pooling" in kernels  # the registry was read
    bad = []
    for path in sorted((PACKAGE / "runtime").rglob("*.py")):
        for target, names in _relative_imports(path):
            modules = {target} | {f"{target}.{n}" for n in names}
            bad += [f"{path.name}: {m}" for m in sorted(modules & kernels)]
    assert not bad, bad


def test_no_private_kernel_names_imported_anywhere_in_the_package():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for target, names in _relative_imports(path):
            if target.startswith("litert_py.ops"):
                bad += [f"{path.relative_to(PACKAGE)}: {target}.{n}" for n in names if n.startswith("_")]
    assert not bad, bad


def _module_path(module: str) -> pathlib.Path:
    parts = module.split(".")[1:]
    path = PACKAGE.joinpath(*parts)
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_no_kernel_module_imports_another():
    """A kernel module takes what it shares with a sibling from a non-registering module (quant, ops/common.py,
    a family's common module), never from another kernel module, so each kernel can be read and changed alone."""
    kernels = _kernel_modules()
    assert {"litert_py.ops.pooling", "litert_py.ops.conv.transpose"} <= kernels  # the registry was read
    bad = []
    for kernel in sorted(kernels):
        for target, names in _relative_imports(_module_path(kernel)):
            modules = {target} | {f"{target}.{n}" for n in names}
            bad += [f"{kernel} -> {m}" for m in sorted((modules & kernels) - {kernel})]
    assert not bad, bad
