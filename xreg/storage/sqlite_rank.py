"""BM25 of a broad search's newest hits, scored here instead of by FTS5's ``bm25``.

FTS5's ``bm25`` weighs each word by the number of rows holding it, which it counts by reading
the word's whole document list: ≈20 ms of CPU for a word in 1,000,000 rows, whatever the page.
The SQLite store ranks a search with more than ``RANKED_HITS`` matches among its newest
``RANKED_HITS`` (the candidates; all its matches when fewer); when its words are in more than
:data:`BM25_ROWS` rows it scores them here with FTS5's formula (``k1`` 1.2, ``b`` 0.75, the
title weighing 4 times the body)::

    score = -sum over words w of idf(w) * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgD))
    idf(w) = ln((N - n + 0.5) / (n + 0.5)), 1e-6 when not positive

where ``f`` = 4 × (occurrences of ``w`` in the title) + (occurrences in the body) and ``D`` the
candidate's tokens — both from the candidate's indexed text —, ``avgD`` the candidates' mean
``D``, ``N`` the span of the search table's rowids and ``n`` the rows holding ``w``: counted up
to :data:`DF_SAMPLE` newest (exact when fewer hold it), else the word's share of the newest rows
times ``N``. Every input is bounded by the candidates and :data:`DF_SAMPLE`, not by the registry.

Text is split into tokens as ``unicode61`` does (runs of letters and digits); a token counts for
a word when FTS5's own tokenizer (folding, ``porter`` stemming) makes the same term of both —
asked of an in-memory FTS5 table (:class:`Terms`), remembered per token. Stemming keeps a token's
first letter, so only tokens sharing a first letter with a word's term are asked about.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Sequence

#: The search table's tokenizer (an FTS5 ``tokenize`` option, quoted).
TOKENIZE = "'porter unicode61 remove_diacritics 2'"
#: How many of a word's newest rows are counted to weigh it (see the module's docstring).
DF_SAMPLE = 4000
#: Up to this many rows holding a search's words (all words, as counted or estimated), FTS5's
#: ``bm25`` weighs them at about the cost of scoring the candidates here (≈20 ns a row): it ranks.
BM25_ROWS = 100_000
#: Tokens whose terms :class:`Terms` remembers at most (then it starts over).
TERMS_KEPT = 100_000
K1, B = 1.2, 0.75
TITLE, BODY = 4.0, 1.0

_TOKEN = re.compile(r"[^\W_]+")  # letters and digits: unicode61's token characters


def _first(token: str) -> str:
    """A token's first character as FTS5 folds it (lower case, diacritics removed)."""
    c = token[0]
    if c.isascii():
        return c.lower()
    base = unicodedata.normalize("NFD", c)[0]
    return base.lower()


class Terms:
    """FTS5's terms of tokens and words (its tokenizer, ``tokenize``), from an in-memory FTS5
    table; thread-safe."""

    def __init__(self, tokenize: str) -> None:
        self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, content='', tokenize = {tokenize})")
        self._db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()
        self._known: dict[str, str | None] = {}

    def close(self) -> None:
        self._db.close()

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms, in order."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.execute("INSERT INTO t(t) VALUES ('delete-all')")
                self._db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(texts, 1))
                rows = self._db.execute("SELECT doc, term FROM v ORDER BY doc, offset").fetchall()
            finally:
                self._db.execute("COMMIT")
        out: list[list[str]] = [[] for _ in texts]
        for doc, term in rows:
            out[doc - 1].append(term)
        return out

    def terms(self, tokens: set[str]) -> dict[str, str | None]:
        """The term of each token (``None``: not one term), remembered for the next call."""
        known = self._known  # this one, even if another thread starts over meanwhile
        new = sorted(t for t in tokens if t not in known)
        learnt = {token: terms[0] if len(terms) == 1 else None
                  for token, terms in zip(new, self.split(new), strict=True)} if new else {}
        if learnt:
            with self._lock:
                if len(self._known) + len(learnt) > TERMS_KEPT:
                    self._known = {}
                self._known.update(learnt)
        return {t: learnt[t] if t in learnt else known[t] for t in tokens}


def idf(rows: int, holding: int) -> float:
    """FTS5's inverse document frequency of a word in ``holding`` of ``rows`` rows."""
    value = math.log((rows - holding + 0.5) / (holding + 0.5))
    return value if value > 0 else 1e-6


def holding(count: int, lowest: int | None, top: int, rows: int) -> int:
    """The rows holding a word of which ``count`` were counted, down to rowid ``lowest``, of
    at most :data:`DF_SAMPLE` newest (``top`` the newest rowid): exact when fewer were found,
    else the share of the newest rows holding it times ``rows``."""
    if count < DF_SAMPLE or lowest is None:
        return count
    return min(rows, round(count * rows / max(1, top - lowest + 1)))


def scores(terms: Terms, words: Sequence[str], candidates: Sequence[tuple[int, str | None, str | None]],
           rows: int, held: Sequence[int], mean: float | None = None) -> list[tuple[int, float]]:
    """``(seq, score)`` of each candidate ``(seq, title, body)`` for ``words`` (``held[i]``: the
    rows holding ``words[i]``, of ``rows``; ``mean``: the mean tokens of a row, by default the
    candidates'); lower is better, as ``bm25``."""
    phrases = terms.split(list(words))
    weights = [idf(rows, n) for n in held]
    letters = _letters(frozenset(term[0] for p in phrases for term in p if term))
    whole = any(len(p) > 1 for p in phrases)  # a phrase: its terms must be adjacent
    split = [(seq, _TOKEN.findall(title or ""), _TOKEN.findall(body or "")) for seq, title, body in candidates]
    known = terms.terms({t for _, title, body in split for col in (title, body) for t in col if t[0] in letters})
    sized = []
    if whole:
        for seq, title, body in split:
            freq = [0.0] * len(phrases)
            for weight, col in ((TITLE, title), (BODY, body)):
                found = [known[t] if t[0] in letters else None for t in col]
                for i, phrase in enumerate(phrases):
                    if phrase:
                        freq[i] += weight * _occurrences(found, phrase)
            sized.append((seq, freq, len(title) + len(body)))
    else:  # words of one term each: a token adds its column's weight to its term's words
        places: dict[str, list[int]] = {}
        for i, phrase in enumerate(phrases):
            if phrase:
                places.setdefault(phrase[0], []).append(i)
        for seq, title, body in split:
            freq = [0.0] * len(phrases)
            for weight, col in ((TITLE, title), (BODY, body)):
                for t in col:
                    if t[0] in letters:
                        for i in places.get(known[t] or "", ()):
                            freq[i] += weight
            sized.append((seq, freq, len(title) + len(body)))
    if mean is None:
        mean = sum(d for _, _, d in sized) / len(sized) if sized else 0.0
    mean = mean or 1.0
    out = []
    for seq, freq, size in sized:
        norm = K1 * (1 - B + B * size / mean)
        out.append((seq, -sum(w * f * (K1 + 1) / (f + norm) for w, f in zip(weights, freq, strict=True) if f)))
    return out


@functools.lru_cache(maxsize=256)
def _letters(firsts: frozenset[str]) -> frozenset[str]:
    """The letters FTS5 folds to one of ``firsts``: either case, accented."""
    out = set(firsts) | {c.upper() for c in firsts}
    for c in firsts:
        out.update(ch for ch in map(chr, range(0xC0, 0x250)) if _first(ch) == c)
    return frozenset(out)


def _occurrences(found: list[str | None], phrase: list[str]) -> int:
    """How often ``phrase`` (terms) occurs in ``found`` (a column's terms, in order)."""
    if len(phrase) == 1:
        return found.count(phrase[0])
    n = len(phrase)
    return sum(1 for i in range(len(found) - n + 1) if found[i:i + n] == phrase)
