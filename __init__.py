"""ctxls: a code-context language server.

The repository root is the ``ctxls`` package (see pyproject.toml's
package-dir), so ``daemon/``, ``index/`` and ``impact/`` install as
``ctxls.daemon``, ``ctxls.index`` and ``ctxls.impact`` and never shadow the
unrelated PyPI modules of those names.
"""

__version__ = "0.1.0"
