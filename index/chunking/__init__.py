"""How ``chunker.chunk_file`` reads a file (see ``index/chunker.py``):
``pieces`` (line ranges to chunks, line windows, residue), ``packing``,
``markdown`` sections, and the definition readers — ``spans`` walks a parse
tree with a ``grammars`` entry per language, whose node classifiers are in
``python``, ``javascript``, ``go``, ``rust``, ``java``, ``c_family``,
``ruby`` and ``php`` (other languages: ``index/definition_table.py``)."""

