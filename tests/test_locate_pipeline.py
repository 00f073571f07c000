"""Locate as a pipeline (index/locate*.py): the text-reading faults fixed at
the source, the shared path classifier, the fitted scorer read from its model
file, its additive contributions, and a selection independent of n."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from ctxls.index.engine import Engine
from ctxls.index.locate import Locator
from ctxls.index.locate_scorer import (FEATURES, MODEL_PATH, ScorerUnavailable, load_scorer, name_match,
                                       rank, shipped_scorer, text_terms)
from ctxls.index.locate_text import read_issue
from ctxls.index.paths import is_test_or_doc, is_vendored_path

from test_locate import git_tree, indexed_engine

# -- reading the text ---------------------------------------------------------------------------

def test_a_name_an_underscore_marks_at_one_end_is_code_and_markdown_emphasis_is_not():
    issue = read_issue("Config leaks a handle\n\nThe raw open call in execfile_ never closes it; "
                       "_load_module and __getattr__ read it too. This is _really_ broken.\n")
    assert issue.identifiers == ["execfile_", "_load_module", "__getattr__"]


def test_an_apostrophe_is_no_quote_mark():
    issue = read_issue("Saving fails\n\nI'll see that the cart is saved twice when I'm offline.\n"
                       "The log says 'the cart was saved twice already' each time.\n")
    assert issue.messages == ["the cart was saved twice already"]


def test_a_listing_of_installed_packages_without_versions_is_not_read():
    text = ("Autodoc skips the class\n\n"
            "Sphinx extensions: sphinx.ext.autodoc, sphinx.ext.napoleon, shop.cart\n\n"
            "Installed plugins:\n- shop.pricing\n- shop_extra.plugin\n- hypothesis\n\n"
            "The docstring of shop.money is not shown.\n")
    issue = read_issue(text)
    assert issue.modules == ["shop.money"]
    assert "shop.cart" not in issue.identifiers and "shop.pricing" not in issue.identifiers
    # A sentence naming packages is no listing; nor is a short list.
    assert read_issue("See the packages: numpy and shop.cart\n").modules == ["shop.cart"]
    assert read_issue("Extensions: shop.cart, shop.money\n").modules == ["shop.cart", "shop.money"]


LOG_FILES = {
    "shop/__init__.py": "",
    "shop/loader.py": (
        "import logging\n"
        "log = logging.getLogger(__name__)\n"
        "\n"
        "\n"
        "def load(name, where):\n"
        "    log.warning('%(kind)s %(name)r not found below %(where)s', {'kind': 'template',\n"
        "                'name': name, 'where': where})\n"
        "    return None\n"
    ),
    "shop/render.py": (
        "def render(name):\n"
        "    raise LookupError(f'{name} has no template below {name}')\n"
    ),
    "shop/options.py": (
        "OPTIONS = {'--fast': 1, '--quiet': 2, '--color': 3, '--verbose': 4, '--dry-run': 5}\n"
    ),
    "shop/cart.py": (
        "def add(cart, item, dry_run=False):\n"
        "    if dry_run:\n"
        "        return cart\n"
        "    return cart + [item]\n"
    ),
}


@pytest.fixture
def logs(tmp_path: Path):
    yield from indexed_engine(git_tree(tmp_path / "logs", LOG_FILES))


def test_a_logged_warning_matches_the_format_string_it_was_written_from(logs: Engine):
    # The quoted values ('base.html', shop/templates) are in no chunk: the
    # message's fixed words find the chunk, its format string matches the line.
    # (The title names no file: in a five-file tree every title word is rare.)
    located = logs.locate("Pages come out blank\n\nWARNING: template 'base.html' not found below "
                          "shop/templates\n", 3)
    assert located[0].path == "shop/loader.py"
    assert located[0].signals["message"] == 1.0


@pytest.mark.parametrize("source, message", [
    ('fprintf(stderr, "expected %zu bytes, got %lld from the stream\\n", n, m);',
     "expected 16 bytes, got 3 from the stream"),  # C's length modifiers
    ('NSLog(@"could not open %@ for writing", path);', "could not open /tmp/cart.db for writing"),
    ('throw IllegalStateException("Expected $count items but found $size")', "Expected 3 items but found 4"),
    ('fatalError("Cannot decode \\(key) in the container")', "Cannot decode sku in the container"),
])
def test_a_message_fills_in_each_languages_format_placeholders(source: str, message: str):
    from ctxls.index.locate_signals import _format_words

    assert _format_words(source, message) >= 4


def test_pasted_tool_output_does_not_make_its_registry_the_answer(logs: Engine):
    text = ("add() ignores dry_run and adds the item\n\n"
            "```\n$ shop --fast --quiet --color --verbose --dry-run\nadded 1 item\n```\n")
    evidence = Locator().evidence(logs.store.reader(), text)
    # Five options only the pasted command writes: one piece of evidence, at
    # the share of a name written only in code.
    assert evidence["shop/options.py"].signals["literal"] <= 0.25
    located = logs.locate(text, 3)
    assert located[0].path == "shop/cart.py"


# -- the shared path classifier -----------------------------------------------------------------

def test_versioned_and_minified_web_libraries_are_vendored():
    for path in ("static/js/jquery-3.6.0.js", "app/static/lib/bootstrap-4.1.3/js/bootstrap.js",
                 "assets/d3.v5.min.js", "web/htmx@1.9.2.js", "static/select2.min.css"):
        assert is_vendored_path(path) and is_test_or_doc(path), path
    for path in ("static/js/main.js", "src/app.js", "lib/v2/api.js", "src/build/__init__.py",
                 "static/app.bundle.js"):
        assert not is_vendored_path(path), path


# -- the scorer ---------------------------------------------------------------------------------

def test_the_shipped_model_is_checked_and_names_its_features(tmp_path: Path):
    scorer = shipped_scorer()
    model = json.loads(MODEL_PATH.read_text())
    assert model["features"] == list(FEATURES) and scorer.kind == model["kind"]
    assert model["training"]["data"]
    tampered = tmp_path / "locate-scorer.json"
    tampered.write_text(MODEL_PATH.read_text().replace('"bias"', '"bias" ', 1))
    with pytest.raises(ScorerUnavailable):
        load_scorer(tampered)
    other = dict(model, features=list(FEATURES)[:-1])
    other_path = tmp_path / "other.json"
    other_path.write_text(json.dumps(other))
    with pytest.raises(ScorerUnavailable):
        load_scorer(other_path, sha256=hashlib.sha256(other_path.read_bytes()).hexdigest())


def _trees_model(tmp_path: Path) -> Path:
    """A two-tree ensemble over `frame` and `test_or_doc`, as the trainer writes it."""
    frame, test = FEATURES.index("frame"), FEATURES.index("test_or_doc")
    trees = [{"feature": [frame], "threshold": [0.5], "left": [-1], "right": [-2],
              "node_value": [0.2], "leaf_value": [0.0, 1.0]},
             {"feature": [test, frame], "threshold": [0.5, 0.9], "left": [1, -2], "right": [-1, -3],
              "node_value": [0.1, 0.3], "leaf_value": [-1.0, 0.0, 0.5]}]
    path = tmp_path / "trees.json"
    path.write_text(json.dumps({"version": 1, "kind": "trees", "features": list(FEATURES),
                                "bias": 0.5, "trees": trees, "training": {"data": "test"}}))
    return path


@pytest.mark.parametrize("kind", ["shipped", "trees"])
def test_contributions_add_up_to_the_score(kind: str, tmp_path: Path):
    scorer = shipped_scorer() if kind == "shipped" else load_scorer(_trees_model(tmp_path), None)
    candidates = {"shop/cart.py": {"frame": 1.0, "symbol": 0.5, "text": 0.3},
                  "tests/test_cart.py": {"frame": 0.6, "text": 1.0},
                  "shop/money.py": {"text": 0.7}}
    ranked = rank(scorer, candidates, 3)
    for scored in ranked:
        shares = sum(c.contribution for c in scorer.contributions(scored.record))
        if scorer.kind == "linear":
            assert math.isclose(scorer.bias + shares, scored.raw, abs_tol=1e-9)
            assert math.isclose(scored.score, 1 / (1 + math.exp(-scored.raw)))
        else:
            base = scorer.bias + sum(t.root_value for t in scorer.trees)
            assert math.isclose(base + shares, scored.raw, abs_tol=1e-9)
    if kind == "trees":  # by hand: cart 0.5 + 1.0 + 0.5; a tie of 0.5 ordered by path
        assert [(s.path, s.raw) for s in ranked] == [("shop/cart.py", 2.0), ("shop/money.py", 0.5),
                                                     ("tests/test_cart.py", 0.5)]


def test_trees_predict_each_record_as_walked_by_hand(tmp_path: Path):
    scorer = load_scorer(_trees_model(tmp_path), None)
    records = np.zeros((3, len(FEATURES)))
    records[0, FEATURES.index("frame")] = 1.0
    records[1, FEATURES.index("frame")] = 0.7
    records[2, FEATURES.index("test_or_doc")] = 1.0
    assert scorer.raw(records).tolist() == [2.0, 1.5, -0.5]


def test_the_top_k_of_a_larger_n_is_the_list_of_k(tmp_path: Path):
    # Ten files define `checkout` (ten equal candidates), three tests too.
    files = {f"shop/store{i}.py": f"def checkout(cart):\n    return cart.total({i})\n" for i in range(10)}
    files |= {f"tests/test_store{i}.py": "def checkout():\n    pass\n" for i in range(3)}
    for engine in indexed_engine(git_tree(tmp_path / "stores", files)):
        for include_tests in (False, True):
            ten = [(f.path, f.score) for f in engine.locate("checkout() fails", 10, include_tests)]
            fifty = [(f.path, f.score) for f in engine.locate("checkout() fails", 50, include_tests)]
            assert len(fifty) == 13 and ten == fifty[:10]
            # Equal scores are ordered by path.
            assert [p for p, _ in ten[:10]] == sorted(p for p, _ in ten[:10])


def test_every_located_file_says_why_in_additive_contributions(logs: Engine):
    located = logs.locate("WARNING: template 'base.html' not found below shop/templates", 3)
    scorer = shipped_scorer()
    for hit in located:
        assert hit.why and all(c.feature in FEATURES for c in hit.why)
        magnitudes = [abs(c.contribution) for c in hit.why]
        assert magnitudes == sorted(magnitudes, reverse=True)
    top = located[0]
    # The message's evidence raises it: as `message` (linear), or as the strongest
    # signal or the signal count it sets (the trees of a ranking ensemble).
    assert any(c.feature in ("message", "max_signal", "signal_count") and c.value > 0 and c.contribution > 0
               for c in top.why)
    if scorer.kind == "linear":
        assert 0.0 < top.score < 1.0


def test_the_name_feature_is_the_share_of_a_file_or_folder_name_the_text_says():
    terms = text_terms("The JSON encoder drops the timezone of aware datetimes")
    assert name_match("pkg/encoder.py", terms) == 1.0
    # A compound name's words, and the compound whole (said only as written).
    assert name_match("pkg/json_encoder.py", terms) == pytest.approx(2 / 3)
    assert name_match("pkg/json_encoder.py", text_terms("json_encoder fails")) == 1.0
    assert name_match("pkg/TimezoneCache.java", terms) == pytest.approx(1 / 3)  # timezonecache, timezon, cach
    assert name_match("encoder/base.py", terms) == 1.0  # its folder's name
    assert name_match("pkg/decoder.py", terms) == 0.0
    assert name_match("pkg/encoder.py", frozenset()) == 0.0


def test_a_file_the_text_names_outranks_an_equal_candidate_it_does_not(tmp_path: Path):
    # Two files with the same code: only their names tell them apart.
    body = "def write(value, zone):\n    return value.astimezone(zone).isoformat()\n"
    files = {"shop/encoder.py": body, "shop/renderer.py": body}
    # Other code, so that the two files' words are rare enough to count.
    files |= {f"shop/part{i}.py": f"def part{i}(cart):\n    return cart.items[{i}]\n" for i in range(60)}
    for engine in indexed_engine(git_tree(tmp_path / "names", files)):
        located = engine.locate("the encoder writes value with the wrong zone", 2)
        assert [f.path for f in located] == ["shop/encoder.py", "shop/renderer.py"]
        assert any(c.feature == "name" and c.value == 1.0 and c.contribution > 0 for c in located[0].why)
