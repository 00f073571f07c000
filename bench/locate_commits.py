"""Locate's training, dev and test data: fix commits mined from the git
history of many projects, split by project.

A task is one non-merge commit whose message describes a fix or a change of
behaviour in prose (trailers, issue and PR references, sign-offs and links
stripped; at least :data:`MIN_WORDS` words left), its text that message, and
its gold files the first-party source files it modified (ctxls's own
classifiers: ``ctxls.index.paths`` and the language table; 1 to
:data:`MAX_GOLD`). Commits that add, delete or rename source files, touch
more than :data:`MAX_FILES` files, or whose subject says formatting, lint,
renaming, refactoring, a dependency bump, a revert or a release are dropped.
At most :data:`TASKS_PER_PROJECT` per project, spread evenly over the newest
:data:`SCAN` commits of the pinned head (so a working tree moves little).
The split is by a hash of the project name (:func:`split_of`), never by task.

Only the git history is read: no issue thread, no benchmark's annotations.

``--mine`` writes :data:`TASKS_FILE` from the ``fetch``ed snapshots (bare git
dirs under /work/.mirror; ``fetch github:owner/name``). ``--dump`` walks each
project's tasks on one working tree (``git_walk.py``: parent commit to parent
commit in commit-time order, re-indexed incrementally, embeddings off) and
writes, per task, locate's evidence for every candidate file and today's
``Engine.locate`` top 10 to ``<data>/features/<project>.jsonl`` (the format:
:data:`README`); a re-run resumes. Each candidate's signals include its
git-history features (index/locate_history.py), read on the tree at the
parent commit; ``--history`` sets them, from the snapshot at the parent
commit, in rows dumped without them. ``--evaluate`` reports today's Acc@k and
MRR on dev and test from those files.

``--with-tests`` does the same for issue-like texts (:data:`WITH_TESTS_FILE`,
:data:`WITH_TESTS_DIR`): each task whose commit also adds a test, its text
the commit's subject and the first block of test code the commit adds
(:func:`reproduction`: the regression test that shows the fault, as an
issue's example does), its gold the same files; kind "fix-with-test".
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import gzip
import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Container, Iterator, NamedTuple

import numpy as np

from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.languages import chunk_kind_for_path, language_for_path
from ctxls.index.locate_history import HISTORY_FEATURES, git_base, read_history
from ctxls.index.locate_scorer import rank, text_terms
from ctxls.index.paths import (is_example_path, is_generated_path, is_test_path, is_vendored_path,
                               says_generated)

from git_walk import Blobs, attach_tree, commit_times, git, reindexed, snapshot_dir
from locate import KS, metrics


class Repo(NamedTuple):
    name: str  # owner/name on GitHub (its snapshot: fetch github:owner/name)
    language: str  # its main language (most first-party source files at the head)
    head: str  # the newest commit read: tasks are mined from its history


# Projects in no other set of bench/projects.md (nor reserved, nor SWE-bench's
# family), 50 to 2,500 files, 57 of 140 Python, the rest in 26 other languages.
PROJECTS = (
    Repo("htop-dev/htop", "c", "1a4504c0c6a74ecd7f2eb1c17c22750c55f555ff"),
    Repo("jqlang/jq", "c", "579e6f76cffd7643ba4002a2c3618a5ea710589a"),
    Repo("fmtlib/fmt", "cpp", "60ccad511fd680cb91d8b60a315759f71c67bef9"),
    Repo("gabime/spdlog", "cpp", "62302019babd8fdf63c1c6dc4c9faa48d441a7f0"),
    Repo("nlohmann/json", "cpp", "199dea11b17c533721b26249e2dcaee6ca1d51d3"),
    Repo("AutoMapper/AutoMapper", "csharp", "4b9633f60ee386cf0efc69b967e04fa28405cf3e"),
    Repo("JamesNK/Newtonsoft.Json", "csharp", "09bb545d72969ad7fb4ea07db0d5c34f4fc07877"),
    Repo("serilog/serilog", "csharp", "60935b4d7abad71cf6157b45a10f5c3c65ead527"),
    Repo("elixir-ecto/ecto", "elixir", "c624abf4297b27589a5a7351b55feb2316f61e1c"),
    Repo("elixir-tesla/tesla", "elixir", "556014d132eef1c9e4e38e9d2378a45f0c91b515"),
    Repo("rrrene/credo", "elixir", "6d07d005f4b6d635aff9dcc6f8fdbf0680beb89f"),
    Repo("BurntSushi/toml", "go", "d733fc535e4a9f3c454e421a87b90ade5d49bf31"),
    Repo("charmbracelet/bubbletea", "go", "73b6d91ac1c3854dd4af046ab5f9e51d3b3b4290"),
    Repo("gofiber/fiber", "go", "c344047e102861ac2b7f0259ea3dd3af4b03ad63"),
    Repo("jesseduffield/lazygit", "go", "ea916395469808d37d726ae183fa40fd575a9d8a"),
    Repo("junegunn/fzf", "go", "956562daaa82ddf55ea8f7aeab56883377b742c6"),
    Repo("labstack/echo", "go", "05489dc1730161df26b72d1ae2a3ba6fb8178fc7"),
    Repo("prometheus/node_exporter", "go", "a7dcc3a01545180d4f2087db70994cbc3abfed13"),
    Repo("rs/zerolog", "go", "13966551e7cc9f174723bddde692f0f0f9a833aa"),
    Repo("stretchr/testify", "go", "12f8b5612e125f337c4589e198771e5f8970f160"),
    Repo("apache/commons-text", "java", "5a23e10056646febd4d43527a8c5b930ea540c78"),
    Repo("google/guice", "java", "621416a2408952eec8007e06e81f4dc21baa8ab0"),
    Repo("mockito/mockito", "java", "ee8a330da0218f32d5964acdeaa3ac39e2c6ce14"),
    Repo("square/retrofit", "java", "0b118105fe8436791436b8bc9c95b9aa2cfd3bdd"),
    Repo("chartjs/Chart.js", "javascript", "cb02e1d207bd4c4c40b20c259017f85f26f1e30a"),
    Repo("iamkun/dayjs", "javascript", "0f6c19e3b63bcc3ff74917cb3a60125020c75648"),
    Repo("jashkenas/coffeescript", "javascript", "817c39a13065a900725943c33a79252a69d779e2"),
    Repo("socketio/socket.io", "javascript", "d2d753fed4435015c2d83fe62e676b44e07fa3f7"),
    Repo("vitejs/vite", "javascript", "a98c8d95d552c6fa98ab66fb810f5b39ad5abf49"),
    Repo("yargs/yargs", "javascript", "2a4378bdc2eac9cf7d0cdfe0a52b1b25f779806a"),
    Repo("InsertKoinIO/koin", "kotlin", "fff5291f333c04fe5d6d9447f72740647d40d186"),
    Repo("Kotlin/kotlinx.serialization", "kotlin", "370c4e3780066b82f746cf38e4733cbe62c94f74"),
    Repo("square/okhttp", "kotlin", "1682d9bac8c03dffde2969b0b74d47649d0dbb52"),
    Repo("square/okio", "kotlin", "4164f2976ac7174f3d35d52150e8ffbdbe0acbec"),
    Repo("lewis6991/gitsigns.nvim", "lua", "31d6fb2d618bca1482b9f274751ead5f03461408"),
    Repo("luarocks/luarocks", "lua", "2d2cc8eff2f03c23d142f8059146fb241dcf56b5"),
    Repo("nvim-telescope/telescope.nvim", "lua", "7d324792b7943e4aa16ad007212e6acc6f9fe335"),
    Repo("composer/composer", "php", "eba7baa59eb1b59246cf9800b0120fe78915b6ac"),
    Repo("guzzle/guzzle", "php", "2779e868a00289e1b1fd854af030c43a06f4bcb4"),
    Repo("Seldaek/monolog", "php", "57eb1028342134e701e77c617565d51b6e5a2a53"),
    Repo("slimphp/Slim", "php", "038fd5713d5a41636fdff0e8dcceedecdd17fc17"),
    Repo("beetbox/beets", "python", "07f39c5204997a356fd98b7e88ba9b185efb2e66"),
    Repo("benoitc/gunicorn", "python", "65ac1a3a4c0aa00960968c720d6e6bd2ac32f1b9"),
    Repo("borgbackup/borg", "python", "fc74d5f643d17d5341e303cd5ed4ddeb425660f0"),
    Repo("celery/kombu", "python", "9ee8595b835c77b4f04cfb54b40b5d446f985a35"),
    Repo("certbot/certbot", "python", "f769e35e77f1fa21a75cd5418641502dad8a37c5"),
    Repo("conan-io/conan", "python", "814cbf12cc56cbc4a87405b5945a4f16968f9555"),
    Repo("dask/dask", "python", "817e5ffc1208346630b111860571024b0c6ec9bd"),
    Repo("encode/uvicorn", "python", "e6c7ce791fc634b6eedee40e0d0207faa8a9aefd"),
    Repo("falconry/falcon", "python", "ce0a35b8fd02747cc72710202886874906b0d47a"),
    Repo("getsentry/sentry-python", "python", "064542dd2cbdbe0b11f1cda7f47d7d2920b0c38b"),
    Repo("holoviz/panel", "python", "45cb9c132ff3ad52907ef434dd6ddb5d7c7354ad"),
    Repo("ipython/ipython", "python", "7f0ee55684f08f5af18190aa58d4bb3018fb20d2"),
    Repo("joke2k/faker", "python", "8ad78a632a4116e6392e6d5743524c683a2e02a1"),
    Repo("jupyter/nbconvert", "python", "78ed30837a607deab7cf0a12dca072bf3f63417a"),
    Repo("kedro-org/kedro", "python", "d58a0b140250ced1917f2c54888b594995594be0"),
    Repo("Kozea/WeasyPrint", "python", "62c06ca73f02e7b1f5f1e3c73da2b08952afba66"),
    Repo("locustio/locust", "python", "407343d0f5ab84a32f41f6f9a7c991188d10a55a"),
    Repo("mesonbuild/meson", "python", "cd1a097e10d3a16062772c985a0dfdd6f5d824bf"),
    Repo("mkdocs/mkdocs", "python", "2862536793b3c67d9d83c33e0dd6d50a791928f8"),
    Repo("nltk/nltk", "python", "f2a92bd7e360e39a4439e4d97540fd68f2721451"),
    Repo("optuna/optuna", "python", "1d8ce7bb6f3c7274a7a31a0a007991995085baa7"),
    Repo("paramiko/paramiko", "python", "8697158113a3eab25ed1d1d541ebe2cad10169a7"),
    Repo("pexpect/pexpect", "python", "fc8f062518b40bd0862aae870cdedf5d9c0c7fc3"),
    Repo("pre-commit/pre-commit", "python", "a9bba55a3f74068b53f4bd4d831d7e05e34eae6c"),
    Repo("prompt-toolkit/python-prompt-toolkit", "python", "583b3412c792a5cc9f01adde603679f3824a88f3"),
    Repo("psf/black", "python", "8947c48ef2077c3a301b03c1e814dc2e3f78436e"),
    Repo("psycopg/psycopg", "python", "c079c37c959a89a8684a3d3858cbaff7e5543e71"),
    Repo("PyCQA/isort", "python", "0cba6f6111a07cc05b167008dda0727ecca907c5"),
    Repo("PyGithub/PyGithub", "python", "5cdf6ab395c52efb652d0bc1f28fdf2e452b1b41"),
    Repo("pyinstaller/pyinstaller", "python", "b3b542a75455a37f02dae0c2faeaf3c6ff5c6989"),
    Repo("Pylons/pyramid", "python", "5b13e4a61b479be17c1d97ab504154595813a8f8"),
    Repo("pypa/hatch", "python", "ed8e30bebf98f2fe4d70c18a32a50a8160c391cb"),
    Repo("pypa/pip", "python", "6d309205789d368b2749d93fd6193d584811efd5"),
    Repo("pypa/setuptools", "python", "7d531288b7c8708d4cc186213da93eaf5d11833d"),
    Repo("pypa/virtualenv", "python", "df94b342b732f96859595104bebbcfa74a88616b"),
    Repo("python-attrs/cattrs", "python", "82b02c07ca535a1ba656b935767d819eac9d383b"),
    Repo("python-babel/babel", "python", "6ba6701e790f2f4b482ab5919cdf79f9cfef259b"),
    Repo("python-gitlab/python-gitlab", "python", "00e380267b2408f77a23fccfaa1d64ba0bc38cac"),
    Repo("python-pillow/Pillow", "python", "4e5f09f533dbd0d87d39951f48b62f4d1a421cba"),
    Repo("python-poetry/poetry", "python", "f46702336862f30050d5c641d5ed6f7568ded793"),
    Repo("python-telegram-bot/python-telegram-bot", "python", "1183d401f8358d8103de9da116156c0f4bcdf602"),
    Repo("python/mypy", "python", "8b3e7d8b9f63543374e53d1c389ea443dd65bc46"),
    Repo("Rapptz/discord.py", "python", "1add8a0b40577186431cdb5f63f97affadab285b"),
    Repo("sanic-org/sanic", "python", "785d77f8fe208576a48d339bd81d866021154092"),
    Repo("SCons/scons", "python", "bac715f2e7e75ec439d4952e95cac7553bb60543"),
    Repo("scrapy/scrapy", "python", "11079cb1c85b9e75a39a7269943c69d1a975d485"),
    Repo("spotify/luigi", "python", "715f65c4a56a908ef0a1df4df6fc33b8420e2e6c"),
    Repo("sqlalchemy/alembic", "python", "20e58db01cad3432c24734e11b893303cdb687a4"),
    Repo("sqlfluff/sqlfluff", "python", "e8e8c5d24dee8371acb94177fd8a7a86a783151c"),
    Repo("statsmodels/statsmodels", "python", "82c59e378bdfb5ae324006c477954879ad3e24be"),
    Repo("streamlink/streamlink", "python", "5376d2e8851bd523e390a2141360afddccb5adba"),
    Repo("Textualize/textual", "python", "1d99508b928a771b51e1a527319c6b87dcff9e05"),
    Repo("tortoise/tortoise-orm", "python", "3829267adeab10482fd1f089bafa9d3b748913f3"),
    Repo("tox-dev/tox", "python", "ccb12fc2e1bb9df0da860be4af175e9b97949fbc"),
    Repo("tqdm/tqdm", "python", "f6a30fab726ab8e794a9db88b4392ce207760937"),
    Repo("urwid/urwid", "python", "4a973ebb047a6c6a639ba6e6d7de794e44686afe"),
    Repo("yt-dlp/yt-dlp", "python", "81ecd58b1394793e6da9998cc19fdb45657f1685"),
    Repo("jekyll/jekyll", "ruby", "202df571314ba1d18e9fccd81d12aaad4a703c38"),
    Repo("rack/rack", "ruby", "8bf4eb078498edc9105fb04add80d89c5340e60b"),
    Repo("rubocop/rubocop", "ruby", "3a42c622171794510e03999c8d55129b73c5dc8f"),
    Repo("ruby-grape/grape", "ruby", "eb03d4ad982d4feec1f1b3aaf4f48a66e65f28c0"),
    Repo("sinatra/sinatra", "ruby", "cb22afd7902b566b6eaba6c4ea89739494a65d12"),
    Repo("ajeetdsouza/zoxide", "rust", "e3ef7c9b41e38aff62dd68fcb920a9765e46aa71"),
    Repo("alacritty/alacritty", "rust", "bdb72b32eeb074e3a0b8559d8ccac458237474a3"),
    Repo("BurntSushi/ripgrep", "rust", "3fce3b5bb0236da2df6d99672afb8a719642eca7"),
    Repo("sharkdp/bat", "rust", "2ba8db9c14e5794572f5ea338c2b90404c9769cb"),
    Repo("sharkdp/fd", "rust", "ee20f426ddf338ac7ead5c5f00ea49258005caaf"),
    Repo("starship/starship", "rust", "6f33dcec91b758ccbae4ed850eaa6feabff798f9"),
    Repo("tokio-rs/tracing", "rust", "f40ccdaa03cf114c7ee1ef14949207626bf6be57"),
    Repo("com-lihaoyi/fastparse", "scala", "385431ec271b411505a9458bf8f85d489a9b001b"),
    Repo("pureconfig/pureconfig", "scala", "e096cf16a3a7ae1d1d8d39bb3313d30a57705cdd"),
    Repo("typelevel/cats", "scala", "7f2dce5162074c0a0ebc597b89b6cd25e5fe0536"),
    Repo("apple/swift-argument-parser", "swift", "2f77f2fccb6e84fecff338c37b199e33e7dfd119"),
    Repo("Moya/Moya", "swift", "10a9dd1577c4de5135a29f99410863d2e9ee034a"),
    Repo("Swinject/Swinject", "swift", "b685b549fe4d8ae265fc7a2f27d0789720425d69"),
    Repo("markedjs/marked", "typescript", "681373ccc058b5dc93c1f63291d755d7d714c2fa"),
    Repo("pmndrs/zustand", "typescript", "f094eebe9bd3b4b0d77b997f69ab1d273f69a877"),
    Repo("typeorm/typeorm", "typescript", "281bfba42a5813b106bcf5ba79bc7f7251bd1e73"),
    Repo("vuejs/core", "typescript", "e2bede96134f757aad5c5b33ac9be055022dbfc8"),
    # Added 2026-12-06: languages the index reads definitions of that no project above is in.
    Repo("babashka/babashka", "clojure", "e30bea13e264bb05d20a2c1803fb3f0ed4b81693"),
    Repo("clj-kondo/clj-kondo", "clojure", "3604f4bbb4957971583a64d134eeed2b8c2a7e5a"),
    Repo("cfug/dio", "dart", "6ad2f90aa36e6348940f68bda12e6b42f1ec7c0c"),
    Repo("jonataslaw/getx", "dart", "e3c8fa04ae65ebf7ff0128dbeb2dc91d4dafa429"),
    Repo("erlang/rebar3", "erlang", "e8147e32210ad864966a718d148db163c7830f72"),
    Repo("processone/ejabberd", "erlang", "61bf7a9cc9727f48f8069bb88b6253165065a121"),
    Repo("fsprojects/FSharpPlus", "fsharp", "0d3f93cf20c7a810bbdc7658dda1d62c8f354f4c"),
    Repo("giraffe-fsharp/Giraffe", "fsharp", "18e1be3ed33e49096d565e6f48c85e3cbee51960"),
    Repo("haskell/aeson", "haskell", "40b03e5334b0571b986528b635fb874a86b31725"),
    Repo("PostgREST/postgrest", "haskell", "4834678902681402a56c490f29947826e7ed5308"),
    Repo("FluxML/Flux.jl", "julia", "3f2f828b523d7ea202cc9295ab4f174f2f45e3f2"),
    Repo("JuliaLang/Pkg.jl", "julia", "e52498951d1169fca898632ba14741c3883b1b4e"),
    Repo("CocoaLumberjack/CocoaLumberjack", "objc", "44f4f2669d026430b3335e9c23fb83c5ad00f2e7"),
    Repo("SnapKit/Masonry", "objc", "8bd77ea92bbe995e14c454f821200b222e5a8804"),
    Repo("mirage/irmin", "ocaml", "7a09a06fff67bc4981faca36a332c51fc16e819e"),
    Repo("libwww-perl/libwww-perl", "perl", "65c6384c3d9e8a4f88a7fbe84307895dc78ccceb"),
    Repo("PerlDancer/Dancer2", "perl", "21bc21d9456edb5acc36e7d3a7f9443b23abac71"),
    Repo("r-lib/devtools", "r", "04a24d6da9e655d39400253364a00be53ee0cffa"),
    Repo("r-lib/httr2", "r", "bdfff989823e4ae9ff83cd532798d9d7ecc1089f"),
    Repo("tigerbeetle/tigerbeetle", "zig", "52ad553f96355e63516ecfc8db25540c17c1c0c7"),
)

# SWE-bench's family of projects: never mined (an outside measurement uses them).
SWE_BENCH_FAMILY = frozenset({"django", "sympy", "scikit-learn", "matplotlib", "astropy", "sphinx",
                              "pytest", "requests", "flask", "xarray", "pylint", "seaborn"})

HERE = Path(__file__).resolve().parent
TASKS_FILE = HERE / "locate_commits" / "tasks.jsonl.gz"
# The walk's trees, stores and feature files: large, shared with the scorer's trainer;
# under bench/.cache so that they outlive a session's scratch space.
DATA_DIR = HERE / ".cache" / "locate_commits"

# Issue-like texts: a fix's subject and the test code it adds (--with-tests).
WITH_TESTS_FILE = HERE / "locate_commits" / "tasks-with-tests.jsonl.gz"
WITH_TESTS_DIR = DATA_DIR.parent / "locate_commits_with_tests"
REPRODUCTION_MIN_LINES = 3  # non-blank added lines but imports: shorter blocks are tweaks
# A line that only brings a name in, in the languages of PROJECTS: a block of
# them (a test file's header) shows no fault.
_IMPORT_LINE = re.compile(
    r"^\ufeff?\s*(?:import\b|from\s+[\w.]+\s+import\b|using\s+(?:static\s+)?[\w.]+(?:\s*=\s*[\w.]+)?\s*;"
    r"|#\s*(?:include|import)\b|@testable\s+import\b|require(?:_relative)?\b|use\s+[\w:\\]+.*;\s*$"
    r"|package\s+[\w.]+|open\s+[\w.]+\s*$|extern\s+crate\b|(?:const|let|var)\s+\w+\s*=\s*require\("
    r"|library\(|alias\s+[\w.]+\s*$|\(?\s*\"[\w./-]+\"\s*\)?\s*$|\)\s*$)")
REPRODUCTION_MAX_LINES = 25
REPRODUCTION_MAX_CHARS = 1500

SCAN = 1200  # newest non-merge commits read per project
TASKS_PER_PROJECT = 25
MAX_FILES = 12  # files a commit may touch
MAX_GOLD = 4
MIN_WORDS = 6
MAX_TEXT_CHARS = 2000
KEEP_CANDIDATES = 100  # candidates kept per task, by today's score (gold files always)
TRAIN, DEV, TEST = "train", "dev", "test"


def split_of(project: str) -> str:
    """60 % train, 20 % dev, 20 % test, by a hash of the project's name."""
    bucket = int(hashlib.sha256(project.encode()).hexdigest()[:8], 16) % 10
    return TRAIN if bucket < 6 else DEV if bucket < 8 else TEST


# -- the text -----------------------------------------------------------------------------------

# Trailers (Signed-off-by, Co-authored-by, Reviewed-by, Change-Id, ...) and
# reference-only lines ("Fixes #12", "Closes: https://...").
_TRAILER = re.compile(r"^\s*[A-Za-z][\w -]*?[- ](?:by|id|Id|ID)\s*:.*$", re.M)
_REFERENCE_LINE = re.compile(
    r"^\s*(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?|refs?|see(?: also)?|related(?: to)?|part of|issues?"
    r"|pr|bug|backport(?: of)?)\b\s*:?\s*(?:(?:[\w.-]+/[\w.-]+)?#\d+|gh-\d+|https?://\S+)[\s,.]*$",
    re.I | re.M)
_REFERENCE_PHRASE = re.compile(r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s+(?:[\w.-]+/[\w.-]+)?#\d+",
                               re.I)
_REFERENCE = re.compile(r"\(\s*(?:[\w.-]+/[\w.-]+)?#\d+\s*\)|(?:[\w.-]+/[\w.-]+)?#\d+\b|\bgh-\d+\b"
                        r"|https?://\S+|\[(?:skip ci|ci skip)\]|\(cherry picked from commit \w+\)", re.I)
_WORD = re.compile(r"[A-Za-z]{2,}")
_EMPTY_BRACKETS = re.compile(r"\[[\s,]*\]|\([\s,]*\)")
_TOOL_LINE = re.compile(r"^\s*(?:[*-]\s*)?(?:(?:Update|Create|Delete)\s+[\w./-]+\.\w+"
                        r"|Apply suggestions? from code review|Merge branch \S+.*)\s*$", re.I)


def clean_message(message: str) -> str:
    """The prose of a commit message: subject and body without trailers,
    issue/PR references, links and blank runs, cut to MAX_TEXT_CHARS."""
    text = _TRAILER.sub("", message)
    text = _REFERENCE_LINE.sub("", text)
    text = _REFERENCE_PHRASE.sub("", text)
    text = _REFERENCE.sub("", text)
    text = _EMPTY_BRACKETS.sub("", text)
    lines, seen = [], set()
    for line in (line.rstrip() for line in text.splitlines()):
        # Lines a removed reference left with nothing but punctuation, a squashed
        # branch's repeated and review-tool lines ("Update src/app/File.kt": it names the gold).
        if line.strip() and (not _WORD.search(line) or _TOOL_LINE.match(line) or line in seen):
            continue
        seen.add(line)
        lines.append(line)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return text[:MAX_TEXT_CHARS].strip()


# A subject that says the commit is not a code fix (or is one no text could locate).
_NOT_A_FIX = re.compile(
    r"^(?:revert|merge|release|bump|prepare|version|v?\d+\.\d+)\b"
    r"|^(?:chore|style|build|ci|docs?|tests?|refactor|perf|release|deps)(?:\(.*?\))?!?:"
    r"|\b(?:re-?format\w*|formatting|format code|code style|lint(?:s|ing|er)?|whitespace|typos?|spelling"
    r"|renam(?:e|es|ed|ing)|refactor\w*|clean ?ups?|dependabot|dependenc(?:y|ies)|bump(?:s|ed)?"
    r"|upgrade[sd]?|changelog|readme|documentation|docstrings?|pre-commit|autoupdate|pyupgrade"
    r"|translations?|type hints?|type annotations?|typing|license|copyright|release notes)\b",
    re.I)
# Words of a fix or a change of behaviour.
_FIX = re.compile(
    r"\b(?:fix(?:e[sd]|ing)?|bugs?|crash(?:es|ed|ing)?|errors?|fail(?:s|ed|ure|ures|ing)?|incorrect(?:ly)?"
    r"|wrong(?:ly)?|broken|breaks?|regressions?|issues?|problems?|handle[sd]?|prevent(?:s|ed)?|avoid(?:s|ed)?"
    r"|ensure[sd]?|respect(?:s|ed)?|correct(?:ly|ed|s)?|missing|should|instead|no longer|don'?t|do not"
    r"|doesn'?t|exceptions?|raise[sd]?|leaks?|hangs?|race|deadlock|invalid|unexpected(?:ly)?)\b", re.I)


def describes_a_change(subject: str, text: str) -> bool:
    """The message says in prose what changed: a subject not of formatting,
    a release, a bump, …, and at least MIN_WORDS words."""
    return _NOT_A_FIX.search(subject) is None and len(_WORD.findall(text)) >= MIN_WORDS


def describes_a_fix(subject: str, text: str) -> bool:
    return describes_a_change(subject, text) and _FIX.search(text) is not None


# -- the gold files ------------------------------------------------------------------------------

# Build descriptions: in the language table, not the product's code.
_BUILD_LANGUAGES = frozenset({"make", "cmake", "dockerfile", "starlark"})


def is_gold_candidate(path: str) -> bool:
    """A first-party source file: code in the language table, not a test,
    vendored, generated, documentation, example, build file or dot-folder file."""
    language = language_for_path(path)
    return (language is not None and language not in _BUILD_LANGUAGES
            and chunk_kind_for_path(path) == "code" and not path.startswith(".") and "/." not in path
            and not (is_test_path(path) or is_vendored_path(path) or is_generated_path(path)
                     or is_example_path(path)))


def gold_files(changes: list[tuple[str, str]], generated: Container[str] = ()) -> list[str] | None:
    """The gold files of a commit's (status, path) changes, or None when the
    commit is not a task: a rename anywhere, a source file added or deleted,
    too many files, or no / too many source files modified. ``generated``:
    paths whose text says a program wrote them (compiled output committed
    beside its source), never gold."""
    if len(changes) > MAX_FILES or any(status[0] in "RC" for status, _ in changes):
        return None
    source = [(status, path) for status, path in changes
              if is_gold_candidate(path) and path not in generated]
    if any(status != "M" for status, _ in source):
        return None
    gold = sorted(path for _, path in source)
    return gold if 1 <= len(gold) <= MAX_GOLD else None


def generated_files(git_dir: Path, specs: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Those of ``specs`` (commit, path) whose text at that commit says a
    program wrote it (``paths.says_generated``: what the store's
    ``files.generated`` holds); a blob the snapshot lacks says nothing. Each
    distinct blob is read once."""
    if not specs:
        return set()
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch-check"],
                             input="".join(f"{c}:{p}\n" for c, p in specs), capture_output=True,
                             text=True, errors="replace", check=True).stdout.splitlines()
    blob_of = {spec: line.split()[0] for spec, line in zip(specs, listing)
               if line.split()[1:2] == ["blob"]}
    blobs = Blobs(git_dir)
    try:
        marked = {blob for blob in set(blob_of.values()) if says_generated(blobs.read_object(blob) or "")}
    finally:
        blobs.close()
    return {spec for spec, blob in blob_of.items() if blob in marked}


def relabelled(row: dict) -> dict | None:
    """A dumped task as today's miner labels it: the gold files
    ``is_gold_candidate`` still counts (the path classifier may have learned
    a test or example folder since the dump), or None when none is left (no task)."""
    gold = [path for path in row["gold"] if is_gold_candidate(path)]
    if len(gold) == len(row["gold"]):
        return row
    return dict(row, gold=gold, candidates=[dict(c, gold=c["path"] in gold)
                                           for c in row["candidates"]]) if gold else None


# -- mining ---------------------------------------------------------------------------------------

def commits(git_dir: Path, head: str, limit: int) -> list[dict]:
    """The newest ``limit`` non-merge commits of ``head``, newest first:
    commit, parents, time, message and (status, path) changes."""
    # No rename detection: it reads blobs, and a snapshot lacks those of 4 MiB and more
    # (a rename shows as a deletion and an addition, which gold_files drops alike).
    out = git(git_dir, "log", "--no-merges", "--no-renames", f"-n{limit}", "--name-status",
              "--format=%x1e%H%x1f%P%x1f%ct%x1f%B%x1f", head)
    found = []
    for record in out.split("\x1e")[1:]:
        commit, parents, when, message, files = record.split("\x1f")
        changes = []
        for line in files.strip("\n").splitlines():
            parts = line.split("\t")
            if len(parts) >= 2:
                changes.append((parts[0], parts[-1]))
        found.append({"commit": commit, "parents": parents.split(), "time": int(when),
                      "message": message, "changes": changes})
    return found


def spread(items: list, k: int) -> list:
    """``k`` items evenly spaced over ``items`` (all of them if no more)."""
    if len(items) <= k:
        return list(items)
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)]


def messages(git_dir: Path, head: str, scan: int) -> Iterator[tuple[dict, str, str]]:
    """The newest ``scan`` non-merge commits of ``head`` with one parent:
    (commit, subject, cleaned message)."""
    for c in commits(git_dir, head, scan):
        if len(c["parents"]) == 1:
            yield c, (c["message"].strip().splitlines() or [""])[0], clean_message(c["message"])


def mine(repo: Repo, git_dir: Path, scan: int = SCAN, per_project: int = TASKS_PER_PROJECT) -> list[dict]:
    """The project's tasks, oldest first."""
    fixes = [(c, text) for c, subject, text in messages(git_dir, repo.head, scan)
             if describes_a_fix(subject, text) and len(c["changes"]) <= MAX_FILES]
    # A modified file's text as the fix left it may say a program wrote it.
    marked = generated_files(git_dir, [(c["commit"], path) for c, _ in fixes
                                       for status, path in c["changes"]
                                       if status == "M" and is_gold_candidate(path)])
    found = []
    for c, text in fixes:
        gold = gold_files(c["changes"], {path for commit, path in marked if commit == c["commit"]})
        if gold is None:
            continue
        found.append({"project": repo.name, "language": repo.language, "commit": c["commit"],
                      "parent": c["parents"][0], "time": c["time"], "text": text, "gold": gold,
                      "split": split_of(repo.name), "kind": "fix-description"})
    return spread(sorted(found, key=lambda t: (t["time"], t["commit"])), per_project)


def reproduction(git_dir: Path, task: dict) -> str | None:
    """The first block of test code ``task``'s commit adds (at least
    REPRODUCTION_MIN_LINES non-blank lines besides imports, cut at REPRODUCTION_MAX_LINES and
    REPRODUCTION_MAX_CHARS), or None: it adds none, or the snapshot lacks a blob."""
    try:
        changed = git(git_dir, "diff", "--no-renames", "--name-only", task["parent"], task["commit"])
        tests = [path for path in changed.splitlines() if is_test_path(path)]
        if not tests:
            return None
        diff = git(git_dir, "diff", "-U0", "--no-renames", task["parent"], task["commit"], "--", *tests)
    except subprocess.CalledProcessError:
        return None
    block: list[str] = []
    for line in [*diff.splitlines(), ""]:
        if line.startswith("+") and not line.startswith("+++"):
            block.append(line[1:])
            continue
        if sum(1 for added in block if added.strip() and not _IMPORT_LINE.match(added)) >= REPRODUCTION_MIN_LINES:
            return "\n".join(block[:REPRODUCTION_MAX_LINES]).strip("\n")[:REPRODUCTION_MAX_CHARS]
        block = []
    return None


def with_tests(tasks: list[dict], git_dir_of: Callable[[str], Path] = snapshot_dir) -> list[dict]:
    """The issue-like tasks: each task whose commit adds test code, its text
    the subject and that code (see the module's docstring)."""
    out = []
    for task in tasks:
        code = reproduction(git_dir_of(task["project"]), task)
        if code is not None:
            subject = task["text"].splitlines()[0]
            out.append(dict(task, text=f"{subject}\n\n{code}", kind="fix-with-test"))
    return out


def write_tasks(tasks: list[dict], path: Path = TASKS_FILE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # mtime 0: the same tasks give the same bytes.
    with gzip.GzipFile(path, "wb", mtime=0) as out:
        for task in tasks:
            out.write((json.dumps(task, sort_keys=True) + "\n").encode())


def read_tasks(path: Path = TASKS_FILE) -> list[dict]:
    with gzip.open(path, "rt") as lines:
        return [json.loads(line) for line in lines]


# -- the feature dumps ----------------------------------------------------------------------------

README = """\
# locate_commits: per-candidate feature dumps

Written by `bench/locate_commits.py --dump` (ctxls); tasks are
`bench/locate_commits/tasks.jsonl.gz` (fix commits, split by project).

- `features/<owner+name>.jsonl`: one JSON line per task, answered on the
  task's parent commit (the code before the fix), embeddings off:
  - `project` (owner/name), `language`, `split` (train / dev / test, by project),
    `kind` ("fix-description"), `commit` (the fix), `parent`, `text` (the
    cleaned commit message: the query), `gold` (the source files it modified);
  - `candidates`: up to 100 files by today's locate score, plus every gold
    file with any evidence: `{path, score (today's), signals {signal: 0..1},
    test_or_doc, gold}` (signals are `Locator.evidence(conn, text)`'s, with
    the git-history features `history`, `hist_*` beside them; `history_head`:
    the commit whose history was read, the parent);
  - `gold_no_evidence`: gold files no signal points at (the recall ceiling),
    `gold_not_indexed`: gold files not in the index at all;
  - `locate_top10`: today's `Engine.locate(text, 10)` paths (the baseline);
  - `reindex_s`, `changed` (files the incremental index pass changed),
    `evidence_ms`.
- `trees/`, `db/`: the working trees and index stores of the walk (a re-run resumes).
- `dump.log`: the walk's progress. A run answers only the tasks not yet in a
  project's file: after locate's evidence changes, remove `features/` and run
  `--dump` again (the stores re-index incrementally).
- Baseline: `python bench/locate_commits.py --evaluate` (Acc@k: every gold
  file in today's top k; MRR of the first gold file).
"""


def features_path(repo: str, data_dir: Path = DATA_DIR) -> Path:
    return data_dir / "features" / f"{repo.replace('/', '+')}.jsonl"


def answer(engine: Engine, task: dict) -> dict:
    """One task's feature record (see README)."""
    conn = engine.store.reader()
    started = time.perf_counter()
    files = engine.locator.evidence(conn, task["text"])
    evidence_ms = (time.perf_counter() - started) * 1000
    gold = set(task["gold"])
    signals = {path: evidence.scorer_inputs() for path, evidence in files.items()}
    scores = {scored.path: scored.score for scored in rank(engine.locator.scorer, signals, len(signals),
                                                         terms=text_terms(task["text"]))}
    kept = list(scores)[:KEEP_CANDIDATES]
    kept += [path for path in task["gold"] if path in files and path not in kept]
    candidates = [{"path": path, "score": round(scores[path], 5),
                   "signals": {s: round(v, 5) for s, v in sorted(signals[path].items())},
                   "test_or_doc": files[path].test_or_doc, "gold": path in gold} for path in kept]
    return {key: task[key] for key in ("project", "language", "split", "kind", "commit", "parent",
                                       "text", "gold")} | {
        "candidates": candidates,
        "gold_no_evidence": [g for g in task["gold"] if g not in files],
        "gold_not_indexed": [g for g in task["gold"] if engine.store.file_state(g) is None],
        "locate_top10": [f.path for f in engine.locate(task["text"], 10)],
        "evidence_ms": round(evidence_ms, 1), "history_head": engine.locator.history.current().head}


def dump(repo: str, tasks: list[dict], git_dir: Path, data_dir: Path = DATA_DIR) -> int:
    """Answer the project's tasks not yet in its feature file, parent commit by
    parent commit in commit-time order, on one tree re-indexed incrementally
    (``git_dir``: the project's history). Returns how many were answered."""
    out = features_path(repo, data_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {json.loads(line)["commit"] for line in out.read_text().splitlines()} if out.exists() else set()
    todo = [t for t in tasks if t["project"] == repo and t["commit"] not in done]
    if not todo:
        return 0
    slug = repo.replace("/", "+")
    move = attach_tree(git_dir, data_dir / "trees" / slug)
    times = commit_times(git_dir, (t["parent"] for t in todo))
    todo.sort(key=lambda t: (times[t["parent"]], t["commit"]))
    (data_dir / "db").mkdir(parents=True, exist_ok=True)
    engine = Engine(data_dir / "trees" / slug,
                    EngineOptions(db_path=str(data_dir / "db" / f"{slug}.db"), embeddings=False))
    answered = 0
    try:
        def checkout(task: dict) -> bool:
            try:
                move(task["parent"])
                return True
            except subprocess.CalledProcessError as error:  # e.g. a blob the snapshot lacks
                print(f"{repo} {task['parent'][:10]}: not checked out ({error.stderr.strip()[:200]})",
                      file=sys.stderr, flush=True)
                return False

        for task, stats, reindex_s in reindexed(engine, todo, checkout):
            line = answer(engine, task)
            line.update(reindex_s=round(reindex_s, 2), changed=stats.added + stats.updated + stats.removed)
            with out.open("a") as sink:
                sink.write(json.dumps(line) + "\n")
            answered += 1
            print(f"{repo} {task['commit'][:10]}: re-index {reindex_s:.1f}s ({line['changed']} files), "
                  f"evidence {line['evidence_ms']:.0f} ms", flush=True)
    finally:
        engine.close()
    return answered


def rewrite_rows(path: Path, rows: list[dict]) -> None:
    """A feature file's rows written whole, in place of the old file at once."""
    part = path.with_suffix(".part")
    part.write_text("".join(json.dumps(r) + "\n" for r in rows))
    part.replace(path)


def add_history(path: Path) -> int:
    """Sets the git-history features (index/locate_history.py) of every
    candidate of a feature file whose rows lack them, read from the project's
    snapshot at the task's parent commit (what the walk's tree has as HEAD:
    the same function, the same commits); rewrites the file. Returns how many
    rows were set."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    todo = [r for r in rows if r.get("history_head") != r["parent"]
            or any(h not in c["signals"] for c in r["candidates"][:1] for h in HISTORY_FEATURES)]
    if not todo:
        return 0
    base = git_base(git_dir=snapshot_dir(rows[0]["project"]))
    for row in todo:
        history = read_history(base, row["parent"], relative=False)
        annotated = history.annotate(row["text"], [c["path"] for c in row["candidates"]])
        for c in row["candidates"]:
            c["signals"] = {s: v for s, v in c["signals"].items() if s not in HISTORY_FEATURES} | {
                s: round(v, 5) for s, v in annotated[c["path"]].items()}
        row["history_head"] = history.head
    rewrite_rows(path, rows)
    return len(todo)


def add_generated(path: Path) -> int:
    """Sets each candidate's ``generated`` (the store's ``files.generated``:
    its text at the task's parent says a program wrote it) in a feature file,
    read from the project's snapshot with the store's function, for rows
    dumped before the store kept it; rewrites the file. Returns how many
    candidates are marked."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows:
        return 0
    marked = generated_files(snapshot_dir(rows[0]["project"]),
                             [(r["parent"], c["path"]) for r in rows for c in r["candidates"]])
    for row in rows:
        for c in row["candidates"]:
            c["signals"].pop("generated", None)
            if (row["parent"], c["path"]) in marked:
                c["signals"]["generated"] = 1.0
    rewrite_rows(path, rows)
    return len(marked)


def semantic_path(repo: str, model: str, data_dir: Path = DATA_DIR, pool: int | None = None) -> Path:
    """Where ``add_semantic`` writes (``pool``: a pool size other than the product's)."""
    folder = f"semantic-{model}" + (f"-pool{pool}" if pool else "")
    return data_dir / folder / f"{repo.replace('/', '+')}.jsonl"


def add_semantic(path: Path, model: str, git_dir: Path | None = None, data_dir: Path = DATA_DIR,
                 pool: int | None = None) -> int:
    """Locate's ``semantic`` signal for each task of a feature file, as the
    product computes it with ``model``'s vectors (``LocateSignals.
    _semantic_evidence``): the text's title and opening prose against the code
    chunks of the best ``semantic_pool`` files by the shipped scorer, the
    chunks being the chunker's of each file at the parent commit. Written
    beside the dumps (``semantic_path``), so they stay embeddings-off; the
    trainer reads them with ``--semantic``. ``pool``: another pool size than
    ``SignalConfig.semantic_pool`` (a measurement). Returns how many tasks were added."""
    from ctxls.index.chunker import chunk_file
    from ctxls.index.embed_text import embedding_text
    from ctxls.index.embeddings import load_embedder
    from ctxls.index.locate_scorer import shipped_scorer
    from ctxls.index.locate_signals import SignalConfig
    from ctxls.index.locate_text import read_issue, semantic_query

    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = semantic_path(rows[0]["project"], model, data_dir, pool) if rows else None
    if out is None:
        return 0
    done = set()
    if out.exists():
        done = {json.loads(line)["commit"] for line in out.read_text().splitlines() if line.strip()}
    todo = [r for r in rows if r["commit"] not in done]
    if not todo:
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    config, scorer, embedder = SignalConfig(), shipped_scorer(), load_embedder(model)
    if pool:
        config = dataclasses.replace(config, semantic_pool=pool)
    blobs = Blobs(git_dir or snapshot_dir(rows[0]["project"]))
    # A chunk's vector by its embedding text: a file edited between two
    # commits keeps most of its chunks' texts, so most are embedded once.
    vectors: dict[str, np.ndarray] = {}
    try:
        for row in todo:
            inputs = {c["path"]: c["signals"] for c in row["candidates"]}
            best = [s.path for s in rank(scorer, inputs, config.semantic_pool, terms=text_terms(row["text"]))]
            query = embedder.embed_query(semantic_query(read_issue(row["text"]), config.semantic_query_words))
            aggregated: dict[str, float] = {}
            for file in best:
                text = blobs.read(row["parent"], file)
                if text is None:
                    continue
                texts = [embedding_text(file, c.symbol, c.text)
                         for c in chunk_file(file, text).chunks if c.kind == "code"]
                if not texts:
                    continue
                new_texts = list(dict.fromkeys(t for t in texts if t not in vectors))
                if new_texts:
                    vectors.update(zip(new_texts, embedder.embed(new_texts)))
                file_vectors = np.stack([vectors[t] for t in texts])
                scores = sorted(np.maximum(file_vectors @ query, 0.0).tolist(), reverse=True)
                aggregated[file] = sum(share * s for share, s in zip(config.chunk_shares, scores))
            top = max(aggregated.values(), default=0.0) or 1.0
            line = {"commit": row["commit"], "model": model,
                    "semantic": {p: round(v / top, 5) for p, v in aggregated.items()},
                    "aggregated": {p: round(v, 5) for p, v in aggregated.items()}}  # before scaling
            with out.open("a") as sink:
                sink.write(json.dumps(line) + "\n")
    finally:
        blobs.close()
    return len(todo)


@functools.cache
def tracked_files(repo: Repo) -> int:
    return len(git(snapshot_dir(repo.name), "ls-tree", "-r", "--name-only", repo.head).splitlines())


def dump_order(repos: list[Repo]) -> list[Repo]:
    """Dev and test projects first, then train; within each, rounds over the
    languages (three Python projects a round, one of each other language),
    smaller trees first: a run stopped early still covers every language."""
    def rounds(group: list[Repo]) -> list[Repo]:
        by_language: dict[str, list[Repo]] = collections.defaultdict(list)
        for repo in sorted(group, key=tracked_files):
            by_language[repo.language].append(repo)
        keyed = [((i // (3 if language == "python" else 1), language != "python", tracked_files(repo)), repo)
                 for language, members in by_language.items() for i, repo in enumerate(members)]
        return [repo for _, repo in sorted(keyed, key=lambda kr: kr[0])]

    return (rounds([r for r in repos if split_of(r.name) in (DEV, TEST)])
            + rounds([r for r in repos if split_of(r.name) == TRAIN]))


# -- the baseline -----------------------------------------------------------------------------------

def ranking_of(row: dict) -> list[str]:
    """Today's order: Engine.locate's top 10, then the kept candidates by score."""
    rest = sorted((c for c in row["candidates"] if c["path"] not in row["locate_top10"]),
                  key=lambda c: (-c["score"], c["path"]))
    return row["locate_top10"] + [c["path"] for c in rest if c["score"] > 0]


def baseline(rows: list[dict]) -> dict:
    """Acc@k (every gold file in the top k) and MRR (first gold file) per
    split, per split and language, and how many gold files had no evidence."""
    groups: dict[str, list[dict]] = collections.defaultdict(list)
    for row in rows:
        groups[row["split"]].append(row)
        groups[f"{row['split']} / {row['language']}"].append(row)
    figures = {}
    for name, group in sorted(groups.items()):
        m = metrics([(ranking_of(r), r["gold"]) for r in group])
        gold = sum(len(r["gold"]) for r in group)
        m.update(projects=len({r["project"] for r in group}), gold_files=gold,
                 gold_no_evidence=sum(len(r["gold_no_evidence"]) for r in group),
                 gold_not_indexed=sum(len(r["gold_not_indexed"]) for r in group),
                 tasks_with_all_gold_evidenced=sum(1 for r in group if not r["gold_no_evidence"]))
        figures[name] = m
    return figures


def read_features(splits: tuple[str, ...]) -> list[dict]:
    rows = []
    for path in sorted((DATA_DIR / "features").glob("*.jsonl")):
        rows += [row for row in map(relabelled, map(json.loads, path.read_text().splitlines()))
                 if row is not None and row["split"] in splits]
    return rows


RESULT_FILE = HERE / "results" / "locate_commits-baseline.json"
# Issue 36's goals on the project-disjoint test, fix descriptions.
GOALS = {"acc@1": 60.0, "acc@5": 85.0}


def result(figures: dict, answered: int, planned: int) -> dict:
    """bench/results/'s record of a baseline run (see bench/results/README.md)."""
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    with open("/proc/loadavg") as load:
        load_average = load.read().split()[0]
    rows, by_language = [], []
    for name, m in figures.items():
        what = f"{name} ({m['n']} tasks, {m['projects']} projects)"
        if " / " in name and not name.endswith(" / python"):  # the page keeps one line for these
            by_language.append(f"{name} {m['acc@1']}/{m['acc@5']}")
            continue
        rows.append({"target": f"locate Acc@1 / @3 / @5 / @10 · MRR on {what}",
                     "value": " / ".join(str(m[f"acc@{k}"]) for k in KS) + f" · {m['mrr']} "
                              f"(gold files with no evidence: {m['gold_no_evidence']} of "
                              f"{m['gold_files']})", "goal": None, "met": None})
        if name == TEST:
            rows += [{"target": f"locate {key.replace('acc', 'Acc')} on {what}", "value": m[key],
                      "goal": f">= {goal}", "met": m[key] >= goal} for key, goal in GOALS.items()]
    return {"section": "Locate on fix commits (baseline)", "issue": 36, "area": "Locate",
            "date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": commit + ("+dirty" if dirty else ""),
            "command": "python bench/locate_commits.py --evaluate (after --mine and --dump)",
            "machine": f"2 cores, loaded (load average {load_average})",
            "rows": rows,
            "notes": (f"Today's Engine.locate (embeddings off) on the dev and test projects' fix commits "
                      f"(texts: cleaned commit messages; gold: the source files modified), "
                      f"{answered} of the {planned} dev/test tasks answered so far; Acc@k: every gold "
                      f"file in the top k; MRR of the first gold file. Acc@1/Acc@5 per split and "
                      f"language: {'; '.join(by_language)}.")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mine", action="store_true", help=f"mine the tasks into {TASKS_FILE}")
    parser.add_argument("--dump", action="store_true", help=f"write the feature dumps under {DATA_DIR}")
    parser.add_argument("--project", action="append",
                        help="only this owner/name (repeatable); --mine keeps the other projects' tasks")
    parser.add_argument("--splits", default="dev,test,train", help="--dump: these splits' projects")
    parser.add_argument("--history", action="store_true",
                        help="set the git-history features of dumped rows that lack them")
    parser.add_argument("--generated", action="store_true",
                        help="set each dumped candidate's generated mark (its text at the parent says so)")
    parser.add_argument("--semantic", metavar="MODEL",
                        help="write locate's semantic signal with MODEL's vectors beside the dumps")
    parser.add_argument("--semantic-pool", type=int, help="--semantic: this many best files, not the product's")
    parser.add_argument("--evaluate", action="store_true", help="today's Acc@k and MRR on dev and test")
    parser.add_argument("--with-tests", action="store_true",
                        help=f"the issue-like tasks: --mine writes {WITH_TESTS_FILE.name} from the tasks, "
                             f"--dump, --history and --semantic use {WITH_TESTS_DIR}")
    args = parser.parse_args()
    chosen = [r for r in PROJECTS if not args.project or r.name in args.project]
    if args.project and len(chosen) != len(args.project):
        parser.error(f"--project: not in PROJECTS: {sorted(set(args.project) - {r.name for r in chosen})}")
    # --with-tests: the issue-like tasks, in their own files beside the fix-commit set's.
    tasks_file, data_dir = (WITH_TESTS_FILE, WITH_TESTS_DIR) if args.with_tests else (TASKS_FILE, DATA_DIR)
    if args.with_tests and args.mine:
        chosen_names = {r.name for r in chosen}
        kept = [t for t in read_tasks(WITH_TESTS_FILE) if t["project"] not in chosen_names] \
            if args.project and WITH_TESTS_FILE.exists() else []
        tasks = kept + with_tests([t for t in read_tasks() if t["project"] in chosen_names])
        write_tasks(tasks, WITH_TESTS_FILE)
        print(f"{len(tasks)} issue-like tasks from {len({t['project'] for t in tasks})} projects "
              f"-> {WITH_TESTS_FILE}")
    elif args.mine:
        family = [r.name for r in PROJECTS if r.name.split("/")[1].lower() in SWE_BENCH_FAMILY]
        if family:
            parser.error(f"SWE-bench's family is never mined: {family}")
        # With --project, only those are mined again; the others' tasks are kept.
        kept = collections.defaultdict(list)
        for task in read_tasks() if args.project else ():
            kept[task["project"]].append(task)
        tasks = []
        for repo in PROJECTS:
            if repo in chosen:
                mined = mine(repo, snapshot_dir(repo.name))
                print(f"{repo.name} ({repo.language}, {split_of(repo.name)}): {len(mined)} tasks", flush=True)
            else:
                mined = kept.get(repo.name, [])
            tasks += mined
        write_tasks(tasks)
        print(f"{len(tasks)} tasks from {len({t['project'] for t in tasks})} projects -> {TASKS_FILE}")
    if args.dump:
        data_dir.mkdir(parents=True, exist_ok=True)
        if args.with_tests:
            for shared in ("trees", "db"):  # the walk's trees and stores are the fix-commit set's
                if not (data_dir / shared).exists():
                    (data_dir / shared).symlink_to(DATA_DIR / shared)
        else:
            (DATA_DIR / "README.md").write_text(README)
        tasks = read_tasks(tasks_file)
        splits = set(args.splits.split(","))
        for repo in dump_order([r for r in chosen if split_of(r.name) in splits]):
            try:
                dump(repo.name, tasks, snapshot_dir(repo.name), data_dir)
            except (subprocess.CalledProcessError, OSError) as error:  # one project's walk, not the run
                print(f"{repo.name}: walk stopped: {error}", file=sys.stderr, flush=True)
    # Features set on rows already dumped, per project of the chosen splits.
    dumped = [(repo.name, features_path(repo.name, data_dir)) for repo in chosen
              if split_of(repo.name) in set(args.splits.split(","))
              and features_path(repo.name, data_dir).exists()]
    for name, path in dumped if args.history else ():
        print(f"{name}: history of {add_history(path)} rows set", flush=True)
    for name, path in dumped if args.generated else ():
        print(f"{name}: {add_generated(path)} candidates generated", flush=True)
    for name, path in dumped if args.semantic else ():
        added = add_semantic(path, args.semantic, data_dir=data_dir, pool=args.semantic_pool)
        print(f"{name}: semantic of {added} tasks", flush=True)
    if args.evaluate:
        rows = read_features((DEV, TEST))
        figures = baseline(rows)
        planned = sum(1 for t in read_tasks() if t["split"] in (DEV, TEST))
        RESULT_FILE.write_text(json.dumps(result(figures, len(rows), planned), indent=1) + "\n")
        print("| set | projects | tasks | " + " | ".join(f"Acc@{k}" for k in KS)
              + " | MRR | gold files without evidence |")
        print("|---|---|---|" + "---|" * len(KS) + "---|---|")
        for name, m in figures.items():
            print(f"| {name} | {m['projects']} | {m['n']} | "
                  + " | ".join(str(m[f'acc@{k}']) for k in KS)
                  + f" | {m['mrr']} | {m['gold_no_evidence']} of {m['gold_files']} |")


if __name__ == "__main__":
    sys.exit(main())
