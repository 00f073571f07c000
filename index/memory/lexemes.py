"""The words memory's full text matches on, spelled as SQLite's FTS5 tables
spell them, so that PostgreSQL finds the same rows for the same query.

The SQLite backend feeds its memory tables (``porter unicode61 tokenchars
'_'``) the index tokens of ``tokenize.expand``; FTS5 then splits them at
separators, folds case and diacritics (``remove_diacritics=1``) and applies
its Porter stemmer. :func:`fts_lexemes` does the same in Python: PostgreSQL
stores and queries these lexemes verbatim (a ``tsvector`` and ``tsquery``
built without a text search configuration: no stop words, no other stemmer,
no parser splitting ``_``). tests/test_memory_store.py checks the two
against SQLite's own tokenizer. They agree on every word of 300,000 distinct
index tokens of source and prose tried; they differ only on characters
Unicode assigned after SQLite's tables were made (and Cherokee's case),
where SQLite's older tables read a character otherwise.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from ctxls.index.tokenize import expand_tokens, long_word_stand_in, long_words, query_terms

# FTS5's porter passes shorter and longer tokens (UTF-8 bytes) through unstemmed.
PORTER_MIN_BYTES = 3
PORTER_MAX_BYTES = 64
# unicode61 reads these combining marks as part of a word and, removing
# diacritics, drops them (sqlite3Fts5UnicodeIsdiacritic); any other mark
# separates words.
_DIACRITICS = frozenset([*range(0x300, 0x305), *range(0x306, 0x30D), 0x30F, 0x311, 0x31B,
                         *range(0x323, 0x329), 0x32D, 0x32E, 0x330, 0x331, 0x340, 0x341, 0x344])
_TOKEN_CATEGORIES = ("L", "N")


def memory_query_terms(query: str) -> list[str]:
    """A memory recall's terms: ``query_terms``, and the stand-ins of the
    query's long words (``tokenize.memory_index_text``)."""
    terms = query_terms(query)
    for word in long_words(query):
        for token in expand_tokens(long_word_stand_in(word)):
            if token not in terms:
                terms.append(token)
    return terms


def fts_lexemes(tokens: list[str]) -> list[str]:
    """The FTS5 terms of ``tokens`` (``expand_tokens``' output), in order."""
    out: list[str] = []
    for token in tokens:
        if token.isascii():
            # Index tokens are [a-z0-9_] when ASCII: one term, already folded.
            out.append(porter(token.lower()))
        else:
            out.extend(porter(word) for word in _unicode61_words(token))
    return out


def _unicode61_words(text: str) -> list[str]:
    """unicode61's words of ``text``: runs of letters, digits, private-use
    characters, ``_`` and diacritics, case and diacritics folded."""
    words, current = [], []
    for char in text:
        if char.isascii():
            if char.isalnum() or char == "_":
                current.append(char.lower())
                continue
        else:
            code = ord(char)
            if code in _DIACRITICS:
                continue  # part of the word, removed
            category = unicodedata.category(char)
            if category[0] in _TOKEN_CATEGORIES or category == "Co":
                current.append(_fold(char))
                continue
        if current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


@lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    """A non-ASCII letter lower-cased, a Latin letter with one diacritic as
    its base letter (remove_diacritics=1 leaves letters with two alone)."""
    lower = char.lower()
    if len(lower) != 1:
        lower = char
    decomposed = unicodedata.normalize("NFD", lower)
    if len(decomposed) == 2 and decomposed[0].isascii() and ord(decomposed[1]) in _DIACRITICS:
        return decomposed[0]
    return lower


# -- FTS5's Porter stemmer ---------------------------------------------------
# The original algorithm as FTS5 implements it (its own vowel test for "y",
# "logi" -> "log" in step 2, a suffix never the whole word), so that stems
# agree with SQLite's exactly; Snowball's "porter" differs on a few words.

def _is_vowel(char: str, y_is_vowel: bool) -> bool:
    return char in "aeiou" or (y_is_vowel and char == "y")


def _gobble_vc(stem: str, previous_consonant: bool) -> int:
    """The length of ``stem``'s first vowels-then-consonant run (0: none)."""
    consonant = previous_consonant
    i, size = 0, len(stem)
    while i < size:
        consonant = not _is_vowel(stem[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < size:
        consonant = not _is_vowel(stem[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem: str) -> bool:
    return _gobble_vc(stem, False) > 0


def _m_gt1(stem: str) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) > 0


def _m_eq1(stem: str) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) == 0


def _o_star(stem: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    if stem[-1] in "wxy":
        return False
    mask, consonant = 0, False
    for char in stem:
        consonant = not _is_vowel(char, consonant)
        mask = (mask << 1) + consonant
    return mask & 0b111 == 0b101


def _has_vowel(stem: str) -> bool:
    return any(_is_vowel(char, i > 0) for i, char in enumerate(stem))


def _m_gt1_s_or_t(stem: str) -> bool:
    return stem[-1] in "st" and _m_gt1(stem)


# (suffix, condition on the stem before it, replacement); per step the first
# suffix that matches (longer than the suffix itself) decides, as in FTS5.
_STEP2 = [("ational", _m_gt0, "ate"), ("tional", _m_gt0, "tion"), ("enci", _m_gt0, "ence"),
          ("anci", _m_gt0, "ance"), ("izer", _m_gt0, "ize"), ("logi", _m_gt0, "log"),
          ("bli", _m_gt0, "ble"), ("alli", _m_gt0, "al"), ("entli", _m_gt0, "ent"),
          ("eli", _m_gt0, "e"), ("ousli", _m_gt0, "ous"), ("ization", _m_gt0, "ize"),
          ("ation", _m_gt0, "ate"), ("ator", _m_gt0, "ate"), ("alism", _m_gt0, "al"),
          ("iveness", _m_gt0, "ive"), ("fulness", _m_gt0, "ful"), ("ousness", _m_gt0, "ous"),
          ("aliti", _m_gt0, "al"), ("iviti", _m_gt0, "ive"), ("biliti", _m_gt0, "ble")]
_STEP3 = [("ical", _m_gt0, "ic"), ("ness", _m_gt0, ""), ("icate", _m_gt0, "ic"),
          ("iciti", _m_gt0, "ic"), ("ful", _m_gt0, ""), ("ative", _m_gt0, ""),
          ("alize", _m_gt0, "al")]
_STEP4 = [("al", _m_gt1, ""), ("ance", _m_gt1, ""), ("ence", _m_gt1, ""), ("er", _m_gt1, ""),
          ("ic", _m_gt1, ""), ("able", _m_gt1, ""), ("ible", _m_gt1, ""), ("ant", _m_gt1, ""),
          ("ement", _m_gt1, ""), ("ment", _m_gt1, ""), ("ent", _m_gt1, ""),
          ("ion", _m_gt1_s_or_t, ""), ("ou", _m_gt1, ""), ("ism", _m_gt1, ""),
          ("ate", _m_gt1, ""), ("iti", _m_gt1, ""), ("ous", _m_gt1, ""), ("ive", _m_gt1, ""),
          ("ize", _m_gt1, "")]


def _by_key_letter(rules):
    """FTS5 picks a step's candidates by the word's last-but-one letter."""
    table: dict[str, list] = {}
    for rule in rules:
        table.setdefault(rule[0][-2], []).append(rule)
    return table


_STEP2_BY, _STEP3_BY, _STEP4_BY = map(_by_key_letter, (_STEP2, _STEP3, _STEP4))


def _apply(word: str, rules_by_letter: dict) -> str:
    if len(word) < 2:
        return word
    for suffix, condition, replacement in rules_by_letter.get(word[-2], ()):
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[:-len(suffix)]
            return stem + replacement if condition(stem) else word
    return word


def _step1b(word: str) -> tuple[str, bool]:
    """Step 1b: (the word, whether -ed or -ing was removed)."""
    if word[-2] == "e":
        if len(word) > 3 and word.endswith("eed"):
            return (word[:-1], False) if _m_gt0(word[:-3]) else (word, False)
        if word.endswith("ed") and _has_vowel(word[:-2]):
            return word[:-2], True
    elif word[-2] == "n" and len(word) > 3 and word.endswith("ing") and _has_vowel(word[:-3]):
        return word[:-3], True
    return word, False


@lru_cache(maxsize=65536)
def porter(word: str) -> str:
    """``word`` as FTS5's porter tokenizer stems it (a folded unicode61 word)."""
    encoded = word.encode("utf-8")
    if not PORTER_MIN_BYTES <= len(encoded) <= PORTER_MAX_BYTES:
        return word
    # FTS5 stems UTF-8 bytes: a non-ASCII letter is two or more consonants.
    # Its suffixes are ASCII, so the stem is the word's bytes up to one.
    stemmed = _porter_bytes(encoded.decode("latin-1"))
    return stemmed.encode("latin-1").decode("utf-8", "replace")


def _porter_bytes(word: str) -> str:
    # Step 1a.
    if word[-1] == "s":
        if word[-2] == "e":
            sses_or_ies = (len(word) > 4 and word[-4:-2] == "ss") or (len(word) > 3 and word[-3] == "i")
            word = word[:-2] if sses_or_ies else word[:-1]
        elif word[-2] != "s":
            word = word[:-1]
    word, removed = _step1b(word)
    if removed:
        for ending, restored in (("at", "ate"), ("bl", "ble"), ("iz", "ize")):
            if len(word) > 2 and word.endswith(ending):
                word = word[:-2] + restored
                break
        else:
            last = word[-1]
            if not _is_vowel(last, False) and last not in "lsz" and last == word[-2]:
                word = word[:-1]
            elif _m_eq1(word) and _o_star(word):
                word += "e"
    # Step 1c.
    if word[-1] == "y" and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _apply(_apply(_apply(word, _STEP2_BY), _STEP3_BY), _STEP4_BY)
    # Step 5a.
    if word[-1] == "e" and (_m_gt1(word[:-1]) or (_m_eq1(word[:-1]) and not _o_star(word[:-1]))):
        word = word[:-1]
    # Step 5b.
    if len(word) > 1 and word.endswith("ll") and _m_gt1(word[:-1]):
        word = word[:-1]
    return word
