"""What a repository path is: a test, vendored code, generated code.

One classifier, read by recall's priors, locate and impact's ranking, so the
three agree on what is first-party code. Folder names, never the repository's
own say (nothing inside the tree can mark itself first-party).
"""

from __future__ import annotations

import functools
import re

_TEST_FILE = re.compile(
    r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.(?:py|go|rb|c|cc|cpp|dart|lua)|conftest\.py"
    r"|[^/]*Tests?\.(?:java|kt|cs|swift|scala|php)|[^/]*(?:Spec|Suite)\.(?:kt|scala|swift)"
    r"|[^/]*\.(?:test|spec)\.[cm]?[jt]sx?|[^/]*_spec\.(?:rb|lua)|test_[^/]*\.(?:c|cc|cpp|lua|dart)"
    r"|test_helpers?[^/]*)$")
_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|__tests__|__mocks__|spec|specs|testing|testdata"
                       r"|test-?utils|fixtures|bench|benches|benchmarks?|e2e)(?:/|$)")

# Folders that hold another project's code copied in: Go's and PHP's
# `vendor/`, pip's `_vendor/`, C/C++'s `third_party/` and `extern/`, npm's
# installed packages.
VENDORED_DIRS = frozenset({
    "vendor", "vendors", "vendored", "_vendor", "_vendored", "third_party", "third-party",
    "thirdparty", "3rdparty", "3rd_party", "extern", "external", "externals",
    "node_modules", "bower_components", "site-packages"})
# Build outputs and generated sources.
_GENERATED = re.compile(r"(?:^|/)(?:single_include|dist|build|generated|__generated__|gen)/"
                        r"|(?:_pb2(?:_grpc)?\.py|\.pb\.go|\.min\.js|_generated\.\w+|\.gen\.\w+)$")


def is_test_path(path: str) -> bool:
    return _TEST_FILE.search(path) is not None or _TEST_DIR.search(path) is not None


@functools.lru_cache(maxsize=16384)
def is_vendored_path(path: str) -> bool:
    """Under a folder named as a vendored tree, at any depth."""
    return not VENDORED_DIRS.isdisjoint(path.split("/")[:-1])


def is_generated_path(path: str) -> bool:
    return _GENERATED.search(path) is not None
