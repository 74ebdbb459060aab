"""Why a grammar gives a sentence probability zero: the word no rule emits, or the spans it
derives and the rule that would join them (the detail of a PCFG's or PLCG's
:class:`~hiddenstate.errors.ZeroProbabilityError`).

A recogniser over the rules of non-zero probability (a boolean CKY chart: which
nonterminals derive each span) finds the cause; it runs on the error path only, for one
sentence.
"""

from __future__ import annotations

import numpy as np

from ..kernels import cky
from .cnf import Grammar

#: longer sentences are not explained (the boolean chart costs n^3 times the binary rules)
MAX_WORDS = 60
#: nonterminals named per span
_SHOWN = 3

__all__ = ["MAX_WORDS", "explain_zero"]


def _chart(g: Grammar, allowed: np.ndarray, ids: np.ndarray) -> np.ndarray | None:
    """``chart[i, j, A]``: nonterminal A derives words i..j-1 by rules whose flat index is
    ``allowed``; None if some word has no allowed lexical rule."""
    n, N = len(ids), len(g.nonterminals)
    chart = np.zeros((n + 1, n + 1, N), dtype=bool)
    for t, w in enumerate(ids):
        lo, hi = g.lx_ptr[w], g.lx_ptr[w + 1]
        lhs = g.lx_lhs[lo:hi][allowed[g.lx_param[lo:hi]]]
        if not len(lhs):
            return None
        chart[t, t + 1, lhs] = True
    left = np.repeat(np.arange(N), np.diff(g.bl_ptr))
    keep = allowed[g.b_param]
    left, right, head = left[keep], g.b_right[keep], g.b_lhs[keep]
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span
            for k in range(i + 1, j):
                hit = chart[i, k, left] & chart[k, j, right]
                if hit.any():
                    chart[i, j, head[hit]] = True
    return chart


def _zero_rules(g: Grammar, allowed: np.ndarray, ids: np.ndarray) -> list[str]:
    """The rules of probability zero in a derivation of the sentence that uses the fewest
    of them (CKY-Viterbi with weight -1 per such rule); empty if the rules alone do not
    derive it."""
    offsets = np.array([0, len(ids)], dtype=np.int64)
    score, out = np.empty(1), np.zeros((2 * len(ids), 4), dtype=np.int64)
    cky.viterbi_parses(np.where(allowed, 0.0, -1.0), *g.kernel_args(), ids, offsets, score,
                       out)
    if not np.isfinite(score[0]):
        return []
    used = [int(p) for p in dict.fromkeys(out[:, 3].tolist()) if not allowed[p]]
    return [f"{g.param_lhs[p]} -> {' '.join(g.param_rhs[p])}" for p in used]


def _labels(g: Grammar, row: np.ndarray) -> str:
    names = [g.nonterminals[a] for a in np.flatnonzero(row)]
    return ", ".join(names[:_SHOWN]) + (f" (+{len(names) - _SHOWN})"
                                        if len(names) > _SHOWN else "")


def _words(tokens: list[str], i: int, j: int) -> str:
    text = " ".join(tokens[i:j])
    where = f"word {i + 1}" if j == i + 1 else f"words {i + 1}-{j}"
    return f"{where} {text[:40] + ' ...' if len(text) > 40 else text!r}"


def explain_zero(g: Grammar, theta: np.ndarray | None, ids: np.ndarray,
                 tokens: list[str]) -> tuple[str, str]:
    """Say why sentence ``ids`` (its words ``tokens``) has probability zero under ``g``
    with rule probabilities ``theta`` (None: every rule of the grammar allowed).

    Parameters
    ----------
    g : Grammar
        The grammar.
    theta : ndarray of shape (g.n_params,) or None
        The flat rule probabilities (rules of probability zero are left out).
    ids : ndarray of int
        The sentence's word indices.
    tokens : list of str
        Its words as written (for the message).

    Returns
    -------
    clause : str
        ``""`` for a sentence too long to explain (more than :data:`MAX_WORDS` words) or one
        the rules derive; else why: the rules of probability zero it needs (or the word
        whose every rule has probability zero), or, when the grammar's rules cannot derive
        it at all, the word no rule emits, the spans the rules derive and the rule that
        would join the two halves of the sentence, or the longest spans when no single rule
        would do.
    cause : {"", "zero", "missing"}
        Rules of probability zero (the fix: smoothing), rules the grammar does not have
        (the fix: more rules, e.g. a Markovised treebank grammar), or not known.

    Examples
    --------
    >>> from hiddenstate.grammar import Grammar
    >>> from hiddenstate.grammar.diagnose import explain_zero
    >>> g = Grammar.from_rules([("S", ("NP", "VP")), ("NP", ("she",)), ("VP", ("eats",)),
    ...                         ("NP", ("fish",))], start="S")
    >>> ids = [g.word_index[w] for w in ("she", "fish")]
    >>> explain_zero(g, None, ids, ["she", "fish"])[0]
    "word 1 'she' derives NP and word 2 'fish' derives NP, but the grammar has no rule S -> NP NP"
    """
    ids = np.asarray(ids, dtype=np.int64)
    n = len(ids)
    if n > MAX_WORDS:
        return "", ""
    theta_all = np.ones(g.n_params) if theta is None else np.asarray(theta)
    allowed = theta_all > 0
    chart = _chart(g, allowed, ids)
    if chart is None:
        t = next(t for t, w in enumerate(ids) if not allowed[
            g.lx_param[g.lx_ptr[w]:g.lx_ptr[w + 1]]].any())
        if theta is not None and g.lx_ptr[ids[t] + 1] > g.lx_ptr[ids[t]]:
            return f"every rule that emits {_words(tokens, t, t + 1)} has probability zero", \
                "zero"
        return f"no rule emits {_words(tokens, t, t + 1)}", "missing"
    roots = [(r, g.nt_index[s]) for r, s in enumerate(g.start) if allowed[g.root_param[r]]]
    if any(chart[0, n, a] for _, a in roots):
        return "", ""
    if theta is not None:
        zero = _zero_rules(g, allowed, ids)
        if zero:
            return (f"the rules it needs have probability zero: {', '.join(zero[:_SHOWN])}"
                    + (f" (and {len(zero) - _SHOWN} more)" if len(zero) > _SHOWN else "")), \
                "zero"
    if chart[0, n].any():
        return (f"the whole sentence derives only {_labels(g, chart[0, n])}, none of them a "
                f"start symbol of non-zero probability ({', '.join(g.start[:_SHOWN])}"
                f"{' ...' if len(g.start) > _SHOWN else ''})"), "missing"
    # one rule R -> Y Z joining two halves that the rules derive, for a start symbol R
    left_uses = np.bincount(np.repeat(np.arange(len(g.nonterminals)), np.diff(g.bl_ptr)),
                            minlength=len(g.nonterminals))
    right_uses = np.bincount(g.b_right, minlength=len(g.nonterminals))
    best = None
    for k in range(1, n):
        ys, zs = np.flatnonzero(chart[0, k]), np.flatnonzero(chart[k, n])
        if len(ys) and len(zs):
            y = ys[np.argmax(left_uses[ys])]
            z = zs[np.argmax(right_uses[zs])]
            score = left_uses[y] + right_uses[z]
            if best is None or score > best[0]:
                best = (score, k, y, z)
    if best is not None and roots:
        _, k, y, z = best
        root = g.start[roots[0][0]]
        rhs = (g.nonterminals[y], g.nonterminals[z])
        rule = f"{root} -> {' '.join(rhs)}"
        known = rhs in g.rules.get(root, [])
        return (f"{_words(tokens, 0, k)} derives {_labels(g, chart[0, k])} and "
                f"{_words(tokens, k, n)} derives {_labels(g, chart[k, n])}, but "
                + (f"the rule {rule} has probability zero" if known
                   else f"the grammar has no rule {rule}")), "zero" if known else "missing"
    # no single rule joins two halves: the longest derived spans, left to right
    pieces, i = [], 0
    while i < n:
        j = max(j for j in range(i + 1, n + 1) if chart[i, j].any())
        pieces.append(f"{_words(tokens, i, j)} ({_labels(g, chart[i, j])})")
        i = j
    shown = "; ".join(pieces[:4]) + ("; ..." if len(pieces) > 4 else "")
    return f"the longest spans the rules derive are {shown}, and no rules join them", \
        "missing"
