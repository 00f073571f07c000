"""The risk bucket of changing a symbol, and the hedges that say why an
impact answer may be incomplete.

Buckets (docs/architecture.md states the same thresholds). "Production"
means outside test code (:func:`ctxls.index.paths.is_test_path`, and a test its file holds
inline: ``callers.Caller.test``); callers in tests never
raise the bucket: changing the symbol only breaks tests there.

* ``high``: callers in >= HIGH_CALLER_FILES production files, or >=
  HIGH_CONFIRMED_SITES confirmed production call sites.
* ``med``: callers in >= MED_CALLER_FILES production files, or >=
  MED_CONFIRMED_SITES confirmed or >= MED_UNCONFIRMED_SITES unconfirmed
  production call sites, or a public/exported name with any production
  caller, or the name spelled out in a string (reflection, registries), or
  occurrences left unchecked past the analysis's limits.
* ``low``: everything else.

Hedges are plain sentences. A "low" answer, or one without callers,
always carries :data:`BLIND_SPOTS` (what the sweep cannot see, what
"confirmed" means), so "low" is never stated bare.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ctxls.index.paths import path_class

HIGH_CALLER_FILES = 5
HIGH_CONFIRMED_SITES = 15
MED_CALLER_FILES = 2
MED_CONFIRMED_SITES = 4
MED_UNCONFIRMED_SITES = 3

BLIND_SPOTS = ("the sweep sees names written in the code: calls through dynamic dispatch, "
               "getattr or other reflection, and names built from strings are invisible to it, "
               "as is code outside this workspace; a confirmed caller is one whose import or "
               "receiver type leads to this definition, an unconfirmed one only might")

def is_peripheral_path(path: str) -> bool:
    """Code beside the maintained one: examples and docs, compatibility
    copies, vendored or generated code (the shared classifier's classes,
    ``ctxls.index.paths.path_class``; an old ``vN/`` copy is known among
    several paths only: ``paths.superseded_paths``)."""
    kind = path_class(path)
    return kind.example or kind.legacy or kind.vendored


@dataclass
class Evidence:
    confirmed_sites: int = 0  # production
    unconfirmed_sites: int = 0  # production
    caller_files: int = 0  # production files with a caller
    test_confirmed_sites: int = 0
    test_unconfirmed_sites: int = 0
    public: bool = False
    special_method: bool = False  # __dunder__: the language calls it implicitly
    mentions: Counter[str] = field(default_factory=Counter)
    unchecked_files: int = 0  # files holding the name left unparsed (mentions["unchecked"]: their lines)
    named_in_strings: int = 0
    name_only_languages: tuple[str, ...] = ()
    partial_index: bool = False
    index_refusal: str | None = None  # why the index could not be written, as recall says it


def assess(e: Evidence) -> tuple[str, list[str]]:
    """(risk bucket, hedges)."""
    if e.caller_files >= HIGH_CALLER_FILES or e.confirmed_sites >= HIGH_CONFIRMED_SITES:
        risk = "high"
    elif (e.caller_files >= MED_CALLER_FILES or e.confirmed_sites >= MED_CONFIRMED_SITES
          or e.unconfirmed_sites >= MED_UNCONFIRMED_SITES or (e.public and e.caller_files > 0)
          or e.named_in_strings > 0 or e.mentions["unchecked"] > 0):
        risk = "med"
    else:
        risk = "low"
    return risk, hedges(e, risk)


def hedges(e: Evidence, risk: str) -> list[str]:
    out: list[str] = []
    confirmed = e.confirmed_sites + e.test_confirmed_sites
    unconfirmed = e.unconfirmed_sites + e.test_unconfirmed_sites
    if confirmed + unconfirmed == 0:
        out.append("no references found: a candidate for review, not a confirmed isolation "
                   "(dynamic calls, reflection and code outside this workspace are invisible)")
    elif confirmed == 0:
        out.append(f"no confirmed callers: the {unconfirmed} call site(s) found could not be tied "
                   "to this definition")
    if confirmed + unconfirmed > 0 and e.confirmed_sites + e.unconfirmed_sites == 0:
        out.append("only tests call it: production use, if any, is dynamic or outside this workspace")
    if unconfirmed:
        out.append(f"{unconfirmed} call site(s) unconfirmed: the receiver or import could not be "
                   "resolved (dynamic dispatch, untyped receivers or unresolved imports)")
    if e.public:
        out.append("public or exported name: callers outside this workspace are invisible")
    if e.special_method:
        out.append("special method: the language calls it implicitly (operators, protocols); "
                   "a constructor's callers are the class's instantiations: ask for the class")
    if e.named_in_strings:
        out.append(f"{e.named_in_strings} of the {e.mentions['string']} mention(s) in strings are the "
                   "name alone: getattr, registries or __all__ may reach it by name")
    if e.mentions["unchecked"]:
        out.append(f"partial: {e.mentions['unchecked']} occurrence line(s) in {e.unchecked_files} "
                   "file(s) past the analysis's limits (the least likely callers: files that neither "
                   "define nor import it come last) were not checked; they are counted as "
                   "unchecked mentions, and the caller counts are lower bounds")
    if e.mentions["text"]:
        out.append(f"{e.mentions['text']} mention(s) in files without a parser (docs, config)")
    if e.name_only_languages:
        out.append("callers in " + ", ".join(sorted(e.name_only_languages))
                   + " files are matched by name only, never confirmed")
    if e.index_refusal is not None:  # a refused first pass is no index "still being built"
        out.append(f"partial: {e.index_refusal} (definitions and callers in the files it lacks "
                   "may be missing)")
    elif e.partial_index:
        out.append("the index is still being built: definitions and callers may be missing")
    if risk == "low" or confirmed + unconfirmed == 0:
        out.append(BLIND_SPOTS)
    return out
