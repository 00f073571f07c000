"""Import extraction (through chunk_file and directly) and resolution."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from ctxls.index.chunker import chunk_file
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.imports import MAX_TS_CONFIG_BYTES, ImportChange, ImportResolver, extract_imports
from ctxls.index.model import ImportRef


def source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def specs(path: str, text: str) -> list[tuple[str, int]]:
    return [(ref.spec, ref.line) for ref in chunk_file(path, text).imports]


# --- Extraction -------------------------------------------------------------


def test_python_import_forms() -> None:
    text = source(
        """
        from __future__ import annotations
        import os.path as osp, json
        from . import views, models as m
        from ..core.utils import (
            slugify,
            Timer,
        )
        from .settings import *
        from pkg import sub


        def lazy():
            import numpy.linalg
            return numpy
        """
    )
    assert specs("pkg/app/urls.py", text) == [
        ("os.path", 1),
        ("json", 1),
        (".:views", 2),
        (".:models", 2),
        ("..core.utils:slugify", 4),
        ("..core.utils:Timer", 5),
        (".settings", 7),
        ("pkg:sub", 8),
        ("numpy.linalg", 12),
    ]


def test_javascript_import_forms() -> None:
    text = source(
        """
        import React from "react";
        import "./polyfills";
        import { a, b } from './lib/ab';
        export * from "./barrel";
        export { c } from "./c";
        export const local = 1;
        const fs = require("fs");
        const util = require('./util');
        const later = () => import("./lazy");
        notRequire("./nope");
        obj.require("./nope-either");
        """
    )
    assert specs("src/index.js", text) == [
        ("react", 0),
        ("./polyfills", 1),
        ("./lib/ab", 2),
        ("./barrel", 3),
        ("./c", 4),
        ("fs", 6),
        ("./util", 7),
        ("./lazy", 8),
    ]


@pytest.mark.parametrize("path", ["src/app.ts", "src/app.tsx"])
def test_typescript_import_forms(path: str) -> None:
    text = source(
        """
        import type { User } from "./types";
        import fs = require("fs");
        export type { Role } from "./roles";
        export * as api from "./api";
        """
    )
    assert specs(path, text) == [("./types", 0), ("fs", 1), ("./roles", 2), ("./api", 3)]


def test_extract_imports_accepts_text_and_ignores_other_languages() -> None:
    assert extract_imports("python", "import a.b\n") == [ImportRef("a.b", 0)]
    assert extract_imports("javascript", "import x from './x';") == [ImportRef("./x", 0)]
    assert extract_imports("go", 'import "fmt"') == []
    assert chunk_file("main.go", 'package main\nimport "fmt"\n').imports == []


def test_imports_survive_syntax_errors() -> None:
    text = "import os\ndef broken(:\n    pass\nfrom a import b\n"
    assert specs("pkg/x.py", text) == [("os", 0), ("a:b", 3)]


# --- Python resolution ------------------------------------------------------

PYTHON_TREE = [
    "README.md",
    "src/shop/__init__.py",
    "src/shop/models.py",
    "src/shop/views.py",
    "src/shop/api/__init__.py",
    "src/shop/api/handlers.py",
    "src/shop/api/serializers.py",
    "src/shop/utils/__init__.py",
    "src/shop/utils/log.py",
    "src/shop/typing.pyi",
    "tests/conftest.py",
    "tests/helpers.py",
    "tests/test_views.py",
    "scripts/helpers.py",
    "scripts/run.py",
]


def resolve(paths: list[str], importer: str, spec: str, language: str = "python") -> str | None:
    return ImportResolver(paths).resolve(importer, ImportRef(spec, 0), language)


@pytest.mark.parametrize(
    ("importer", "spec", "expected"),
    [
        # src layout: absolute modules are found by suffix
        ("tests/test_views.py", "shop.views", "src/shop/views.py"),
        ("tests/test_views.py", "shop", "src/shop/__init__.py"),
        ("tests/test_views.py", "shop.api.handlers", "src/shop/api/handlers.py"),
        # from a import b: the submodule first, then the module
        ("tests/test_views.py", "shop.api:handlers", "src/shop/api/handlers.py"),
        ("tests/test_views.py", "shop.api:Handler", "src/shop/api/__init__.py"),
        ("tests/test_views.py", "shop.models:Order", "src/shop/models.py"),
        ("tests/test_views.py", "shop:typing", "src/shop/typing.pyi"),
        # relative imports
        ("src/shop/api/handlers.py", ".:serializers", "src/shop/api/serializers.py"),
        ("src/shop/api/handlers.py", ".serializers:OrderSerializer", "src/shop/api/serializers.py"),
        ("src/shop/api/handlers.py", "..:models", "src/shop/models.py"),
        ("src/shop/api/handlers.py", "..models:Order", "src/shop/models.py"),
        ("src/shop/api/handlers.py", "..utils.log:get_logger", "src/shop/utils/log.py"),
        ("src/shop/api/handlers.py", "..:VERSION", "src/shop/__init__.py"),
        ("src/shop/api/__init__.py", ".handlers", "src/shop/api/handlers.py"),
        ("src/shop/api/handlers.py", ".....:too_far", None),
        # a module inside a package is not importable by its bare name
        ("scripts/run.py", "log", None),
        ("scripts/run.py", "utils.log", None),
        # several top-level `helpers` modules: the nearest wins
        ("scripts/run.py", "helpers", "scripts/helpers.py"),
        ("tests/test_views.py", "helpers:make_order", "tests/helpers.py"),
        # external modules, self-imports
        ("tests/test_views.py", "os.path", None),
        ("tests/test_views.py", "django.db:models", None),
        ("tests/helpers.py", "helpers", None),  # a namesake of an external module
        ("src/shop/api/__init__.py", ".:Handler", None),
    ],
)
def test_python_resolution(importer: str, spec: str, expected: str | None) -> None:
    assert resolve(PYTHON_TREE, importer, spec) == expected


def test_python_flat_layout_and_stub_priority() -> None:
    paths = ["app/__init__.py", "app/core.py", "app/core.pyi", "app/main.py"]
    assert resolve(paths, "app/main.py", "app.core") == "app/core.py"
    assert resolve(paths, "app/main.py", "app:core") == "app/core.py"
    assert resolve(paths, "app/main.py", "core") is None  # `app` is a package


def test_python_repository_root_that_is_itself_a_package() -> None:
    # Like this project: the repository root is the `ctxls` package.
    paths = ["__init__.py", "index/__init__.py", "index/model.py", "daemon/__init__.py", "daemon/server.py"]
    assert resolve(paths, "daemon/server.py", "ctxls.index.model:Chunk") == "index/model.py"
    assert resolve(paths, "daemon/server.py", "ctxls:index") == "index/__init__.py"
    assert resolve(paths, "daemon/server.py", "..index.model:Chunk") == "index/model.py"
    assert resolve(paths, "daemon/server.py", "requests") is None


def test_python_resolution_ignores_other_languages() -> None:
    assert resolve(PYTHON_TREE, "src/main.go", "shop.views", "go") is None


# --- JavaScript / TypeScript resolution -------------------------------------

JS_TREE = [
    "package.json",
    "src/index.ts",
    "src/app.tsx",
    "src/lib/format.ts",
    "src/lib/date.js",
    "src/lib/legacy.cjs",
    "src/lib/types.d.ts",
    "src/components/index.ts",
    "src/components/Button.tsx",
    "src/components/Button.css",
    "src/esm/util.ts",
    "src/esm/main.ts",
    "web/main.jsx",
    "web/widgets/index.jsx",
]


@pytest.mark.parametrize(
    ("importer", "spec", "expected"),
    [
        ("src/index.ts", "./lib/format", "src/lib/format.ts"),
        ("src/index.ts", "./lib/date", "src/lib/date.js"),
        ("src/index.ts", "./lib/legacy", "src/lib/legacy.cjs"),
        ("src/index.ts", "./lib/types", "src/lib/types.d.ts"),
        ("src/index.ts", "./lib/format.ts", "src/lib/format.ts"),
        ("src/index.ts", "./components", "src/components/index.ts"),
        ("src/app.tsx", "./components/Button", "src/components/Button.tsx"),
        ("src/components/Button.tsx", "./Button.css", "src/components/Button.css"),
        ("src/components/Button.tsx", "../lib/format", "src/lib/format.ts"),
        ("src/lib/format.ts", "../components", "src/components/index.ts"),
        ("src/esm/main.ts", "./util.js", "src/esm/util.ts"),  # TypeScript ESM names the output
        ("web/main.jsx", "./widgets", "web/widgets/index.jsx"),
        ("web/main.jsx", "../src/lib/date", "src/lib/date.js"),
        ("src/index.ts", "react", None),
        ("src/index.ts", "@scope/pkg/sub", None),
        ("src/index.ts", "./missing", None),
        ("src/index.ts", "../../outside", None),
        ("src/components/index.ts", ".", None),  # itself
    ],
)
def test_javascript_resolution(importer: str, spec: str, expected: str | None) -> None:
    language = "tsx" if importer.endswith(".tsx") else "typescript" if importer.endswith(".ts") else "javascript"
    assert resolve(JS_TREE, importer, spec, language) == expected


def test_barrel_re_exports_resolve_to_their_modules() -> None:
    barrel = source(
        """
        export * from "./Button";
        export { format } from "../lib/format";
        export * as dates from "../lib/date";
        """
    )
    resolver = ImportResolver(JS_TREE)
    importer = "src/components/index.ts"
    targets = [resolver.resolve(importer, ref, "typescript") for ref in chunk_file(importer, barrel).imports]
    assert targets == ["src/components/Button.tsx", "src/lib/format.ts", "src/lib/date.js"]


def test_end_to_end_python_import_graph() -> None:
    files = {
        "src/shop/__init__.py": "",
        "src/shop/models.py": "class Order:\n    pass\n",
        "src/shop/views.py": "from .models import Order\nfrom shop import models\nimport json\n",
    }
    resolver = ImportResolver(files)
    parsed = chunk_file("src/shop/views.py", files["src/shop/views.py"])
    targets = [resolver.resolve("src/shop/views.py", ref, parsed.language) for ref in parsed.imports]
    assert targets == ["src/shop/models.py", "src/shop/models.py", None]


UPDATE_TREE = [
    "pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/sub/__init__.py", "pkg/sub/deep.py",
    "pkg/sub/deep.pyi", "scripts/run.py", "scripts/util.py", "lib/util.py", "top.py",
    "web/main.ts", "web/x.ts", "web/helpers/index.ts", "web/helpers/fmt.ts",
]
UPDATE_IMPORTS = [  # (importer, spec, language)
    ("pkg/a.py", "pkg.b:helper", "python"), ("pkg/a.py", "pkg.c:helper", "python"),
    ("pkg/a.py", "pkg:c", "python"), ("pkg/a.py", ".:c", "python"), ("pkg/a.py", ".", "python"),
    ("pkg/sub/deep.py", "..:b", "python"), ("pkg/sub/deep.py", "..:nothing", "python"),
    ("scripts/run.py", "util", "python"), ("top.py", "deep", "python"), ("top.py", "sub.deep", "python"),
    ("top.py", "anything.pkg.b", "python"), ("web/main.ts", "./helpers", "typescript"),
    ("web/main.ts", "./y.js", "typescript"), ("web/main.ts", ".", "typescript"),
    ("web/helpers/fmt.ts", "..", "typescript"), ("web/helpers/fmt.ts", "./z/..", "typescript"),
]


@pytest.mark.parametrize(("added", "removed"), [
    (["pkg/c.py"], ["pkg/b.py"]),                         # a module made, one deleted
    (["pkg/c/__init__.py"], []),                          # a package made
    ([], ["pkg/sub/__init__.py"]),                        # a package's folder no longer one
    (["__init__.py"], []),                                # the root becomes a package
    ([], ["pkg/sub/deep.py", "scripts/util.py"]),         # stub and far copy take over
    (["web/y.ts", "web/index.ts"], ["web/helpers/index.ts"]),
])
def test_an_updated_resolver_resolves_as_a_new_one_and_names_every_import_it_changes(
        added: list[str], removed: list[str]) -> None:
    """What the indexer re-resolves after files came or went (crash probe: an
    unchanged importer of a deleted or new file kept its old target): the
    resolver updated in place answers as one made from the new listing, and
    every import whose answer changed is one the change says may change."""
    resolver = ImportResolver(UPDATE_TREE)
    ref = lambda spec: ImportRef(spec, 0)  # noqa: E731
    before = [resolver.resolve(importer, ref(spec), lang) for importer, spec, lang in UPDATE_IMPORTS]
    change = resolver.update(added=added, removed=removed)
    fresh = ImportResolver((set(UPDATE_TREE) | set(added)) - set(removed))
    after = [fresh.resolve(importer, ref(spec), lang) for importer, spec, lang in UPDATE_IMPORTS]
    assert [resolver.resolve(importer, ref(spec), lang)
            for importer, spec, lang in UPDATE_IMPORTS] == after
    assert resolver.paths == fresh.paths
    moved = [spec for (_, spec, _), old, new in zip(UPDATE_IMPORTS, before, after) if old != new]
    assert moved, "the change moves no import: it tests nothing"
    assert [spec for spec in moved if not change.may_change(spec)] == []


def test_a_change_names_only_the_imports_that_may_resolve_to_what_changed() -> None:
    change = ImportResolver(UPDATE_TREE).update(added=["pkg/c.py"])
    assert change.may_change("pkg.c:helper") and change.may_change(".:c") and change.may_change("..")
    assert not change.may_change("pkg.b:helper") and not change.may_change("./helpers")
    assert not ImportResolver(UPDATE_TREE).update(added=["pkg/a.py"])  # listed already


def test_a_closed_buffer_of_a_buffers_only_engine_unresolves_the_imports_of_it(tmp_path) -> None:
    """An engine for buffers outside every folder dropped a closed buffer's
    rows behind the indexer's back: an import of it still resolved to a
    file that no longer was anywhere."""
    from pathlib import Path

    from ctxls.index.engine import Engine, EngineOptions

    def targets(engine: Engine, path: str) -> list[str | None]:
        return [row[0] for row in engine.store.reader().execute(
            "SELECT i.target FROM imports i JOIN files f ON f.id = i.file_id WHERE f.path = ?",
            (path,))]

    engine = Engine(Path("/"), EngineOptions(), private_store=True)
    try:
        folder = str(tmp_path).lstrip("/")
        engine.set_buffer(f"{folder}/helpers.py", "def helper():\n    return 1\n")
        engine.set_buffer(f"{folder}/main.py", "from helpers import helper\n\nhelper()\n")
        assert targets(engine, f"{folder}/main.py") == [f"{folder}/helpers.py"]
        engine.close_buffer(f"{folder}/helpers.py")
        assert targets(engine, f"{folder}/main.py") == [None]
        assert engine.store.file_state(f"{folder}/helpers.py") is None
    finally:
        engine.close()


ALIAS_TREE = {
    "tsconfig.json": """{
      // TypeScript reads comments and trailing commas here
      "extends": "./configs/base",
      "compilerOptions": {
        "paths": {
          "@lib/*": ["src/missing/*", "src/lib/*"],   /* tried in order */
          "@lib/cart/*": ["src/cart/*"],
          "@tax": ["src/lib/tax.ts"],
          "@up/*": ["../*"],
          "@abs/*": ["/etc/*"],
        },
      },
    }""",
    "configs/base.json": '{"compilerOptions": {"baseUrl": ".."}}',
    "src/lib/cart.ts": "", "src/lib/tax.ts": "", "src/lib/index.ts": "", "src/cart/line.ts": "",
    "src/main.ts": "", "src/util.ts": "",
    "web/jsconfig.json": '{"compilerOptions": {"paths": {"#/*": ["./*"]}}}',
    "web/app/view.js": "", "web/app/model.js": "",
}


def alias_repo(root, files: dict[str, str]) -> list[str]:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return [path for path in files if not path.endswith(".json")]


@pytest.mark.parametrize(("importer", "spec", "expected"), [
    ("src/main.ts", "@lib/cart", "src/lib/cart.ts"),    # the second target: the first has none
    ("src/main.ts", "@lib/cart/line", "src/cart/line.ts"),  # the longest prefix wins
    ("src/main.ts", "@tax", "src/lib/tax.ts"),          # an exact pattern
    ("src/main.ts", "src/util", "src/util.ts"),         # baseUrl (the root, set by the base)
    ("src/main.ts", "src/lib", "src/lib/index.ts"),
    ("src/main.ts", "@up/outside", None),               # a target outside the repository
    ("src/main.ts", "@abs/passwd", None),
    ("src/main.ts", "react", None),
    ("web/app/view.js", "#/app/model", "web/app/model.js"),  # the nearest config: web's jsconfig
    ("web/app/view.js", "@lib/cart", None),
])
def test_a_bare_spec_resolves_through_the_nearest_tsconfig_paths(
        tmp_path, importer: str, spec: str, expected: str | None) -> None:
    """`import { cartTotal } from "@lib/cart"` under tsconfig.json's
    `"paths": {"@lib/*": ["src/lib/*"]}` resolved to nothing: bare specs
    were all taken for packages. They resolve as TypeScript resolves them,
    reading the config as data, never to a file outside the repository."""
    paths = alias_repo(tmp_path, ALIAS_TREE)
    language = "javascript" if importer.endswith(".js") else "typescript"
    assert ImportResolver(paths, root=tmp_path).resolve(importer, ImportRef(spec, 0), language) == expected
    assert ImportResolver(paths).resolve(importer, ImportRef(spec, 0), language) is None  # no root


def test_a_tsconfig_that_cannot_be_read_as_data_aliases_nothing(tmp_path) -> None:
    """A config leading out of the repository by a link, one over the size
    bound, one that is not JSON, and an `extends` of a file outside: none
    is followed, and none stops the repository's other imports resolving."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "tsconfig.json").write_text('{"compilerOptions": {"paths": {"@x/*": ["src/*"]}}}')
    root = tmp_path / "repo"
    paths = alias_repo(root, {"linked/src/a.ts": "", "linked/main.ts": "", "big/src/a.ts": "",
                              "big/main.ts": "", "bad/src/a.ts": "", "bad/main.ts": "",
                              "far/src/a.ts": "", "far/main.ts": "", "bad/tsconfig.json": '{"a": /* }',
                              "good/src/a.ts": "", "good/main.ts": "", "good/tsconfig.json":
                              '{"compilerOptions": {"paths": {"@x/*": ["src/*"]}}}'})
    (root / "linked/tsconfig.json").symlink_to(outside / "tsconfig.json")
    (root / "big/tsconfig.json").write_text(
        '{"compilerOptions": {"paths": {"@x/*": ["src/*"]}}}' + " " * MAX_TS_CONFIG_BYTES)
    (root / "far/tsconfig.json").write_text('{"extends": "../../outside/tsconfig.json"}')
    resolver = ImportResolver(paths, root=root)
    assert resolver.resolve("good/main.ts", ImportRef("@x/a", 0), "typescript") == "good/src/a.ts"
    for folder in ("linked", "big", "bad", "far"):
        assert resolver.resolve(f"{folder}/main.ts", ImportRef("@x/a", 0), "typescript") is None
        assert resolver.resolve(f"{folder}/main.ts", ImportRef("./src/a", 0), "typescript") \
            == f"{folder}/src/a.ts"


def test_a_changed_tsconfig_resolves_the_bare_imports_again(tmp_path) -> None:
    """What the indexer re-resolves: a pass's resolver compares each
    folder's config with what the last pass's read (tsconfig.json is not an
    indexed file, so no write says it changed); a config written, made or
    removed (when indexed) changes every bare import as well."""
    paths = alias_repo(tmp_path, {"tsconfig.json": '{"compilerOptions": {"paths": {"@/*": ["a/*"]}}}',
                                  "a/x.ts": "", "b/x.ts": "", "main.ts": ""})
    ref = ImportRef("@/x", 0)
    first = ImportResolver(paths, root=tmp_path)
    assert first.alias_change(None).everything  # a process's first pass: read before by anyone
    assert first.resolve("main.ts", ref, "typescript") == "a/x.ts"
    same = ImportResolver(paths, root=tmp_path)
    assert not same.alias_change(first)
    (tmp_path / "tsconfig.json").write_text('{"compilerOptions": {"paths": {"@/*": ["b/*"]}}}')
    moved = ImportResolver(paths, root=tmp_path)
    assert moved.alias_change(same).everything
    assert moved.resolve("main.ts", ref, "typescript") == "b/x.ts"
    (tmp_path / "tsconfig.json").write_text('{"compilerOptions": {}}')
    assert moved.update(added=["tsconfig.json"]).everything  # written again, says otherwise
    assert moved.resolve("main.ts", ref, "typescript") is None
    assert not moved.update(added=["tsconfig.json"])  # written again, says the same
    assert ImportResolver(paths).update(added=["tsconfig.json"]).everything  # made: nearest moves
    (tmp_path / "tsconfig.json").unlink()
    assert ImportResolver(paths, root=tmp_path).alias_change(None) == ImportChange()


def test_a_tsconfig_path_alias_is_an_import_edge_and_follows_the_tsconfig(tmp_path: Path) -> None:
    """`import { cartTotal } from "@lib/cart"` under tsconfig.json's
    `"paths": {"@lib/*": ["src/lib/*"]}` had no edge in ctxls/related (the
    resolver read no tsconfig); a changed tsconfig moves the edge, on the
    file's own re-read and on the next pass."""
    root = tmp_path / "repo"
    (root / "src/lib").mkdir(parents=True)
    (root / "src/v2").mkdir()
    config = root / "tsconfig.json"
    config.write_text('{\n  // aliases\n  "compilerOptions": {"paths": {"@lib/*": ["src/lib/*"],},},\n}\n')
    (root / "src/lib/cart.ts").write_text("export const cartTotal = 1;\n")
    (root / "src/v2/cart.ts").write_text("export const cartTotal = 2;\n")
    (root / "src/main.ts").write_text('import { cartTotal } from "@lib/cart";\nexport const t = cartTotal;\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    engine = Engine(root, EngineOptions(embeddings=False))
    try:
        engine.index()
        targets = lambda: [r.path for r in engine.related("src/main.ts", "out")[0]]  # noqa: E731
        assert targets() == ["src/lib/cart.ts"]
        config.write_text('{"compilerOptions": {"paths": {"@lib/*": ["src/v2/*"]}}}\n')
        engine.file_changed_on_disk("tsconfig.json")
        assert targets() == ["src/v2/cart.ts"]
        config.write_text('{"compilerOptions": {"paths": {"@lib/*": ["../outside/*"]}}}\n')
        engine.index()
        assert targets() == []
    finally:
        engine.close()
