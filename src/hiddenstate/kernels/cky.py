r"""Chart passes of a probabilistic context-free grammar in Chomsky normal form (CKY).

The grammar is flat arrays (built by :class:`hiddenstate.grammar.Grammar`): ``N``
nonterminals, a vector ``logtheta`` of log rule probabilities (one entry per rule, the rules of a
left-hand side forming one categorical switch), and

- binary rules :math:`A \to B\,C` grouped by their left child: rules ``bl_ptr[B] ..
  bl_ptr[B + 1] - 1`` have left child ``B``, right child ``b_right[r]``, left-hand side
  ``b_lhs[r]`` and probability ``theta[b_param[r]]``;
- lexical rules :math:`A \to w` grouped by word: ``lx_ptr[w] .. lx_ptr[w + 1] - 1`` with
  ``lx_lhs[r]``, ``lx_param[r]``;
- root rules: the sentence is derived from ``root_nt[r]`` with probability
  ``theta[root_param[r]]`` (the start switch; one entry of probability 1 for a grammar with a
  single start symbol).

Sentences are word ids concatenated in ``words``, sentence ``s`` being
``words[offsets[s]:offsets[s + 1]]``. Span ``(i, j)`` covers words ``i .. j - 1``.

**Inside** (Lari & Young 1990; Manning & Schütze 1999, sec. 11.3.2) in log space: each
cell holds :math:`\log\beta_{ij}(A)`; every nonterminal of a cell is summed relative to its
own largest term (two sweeps over the cell's rule applications, the first a max-product), so
a nonterminal whose inside probability is 1e-400 times that of another in the same cell
keeps full precision (rule probabilities of 1e-150 are common late in EM):

.. math::
    \beta_{ij}(A) = \sum_{i<k<j}\ \sum_{A\to B C}\theta_{A\to BC}\,\beta_{ik}(B)\,
    \beta_{kj}(C),\qquad \beta_{i,i+1}(A) = \theta_{A\to w_i},\qquad
    P(w) = \sum_{A}\pi_A\,\beta_{0n}(A).

**Outside** as posterior *uses* (the form of :mod:`hiddenstate.kernels.explanation_graph`):
:math:`\mu_{ij}(A) = \alpha_{ij}(A)\beta_{ij}(A)/P(w) \in [0, 1]`, pushed top-down: a
parent cell gives each of its (rule, split) alternatives the share
:math:`\mu_{ij}(A)\,\exp(\log\theta + \log\beta_{ik}(B) + \log\beta_{kj}(C) -
\log\beta_{ij}(A))`, which is that rule occurrence's expected count and is added to both
child cells. The exponent is never positive: nothing overflows.

**Viterbi** (max-product) in log space; **k-best** keeps the ``K`` best derivations of every
(cell, nonterminal) (Huang & Chiang 2005, algorithm 1); **sampling** draws derivations
top-down from the inside chart (Johnson, Griffiths & Goldwater 2007).

A derivation is written as ``2 n`` entries ``(label, i, j, param)`` in pre-order: the
root-rule entry (label -1) then the ``2 n - 1`` nodes of the CNF tree; ``param`` is the
rule used at the node, so the rule counts of a parse are ``bincount(param)``.

No validation happens here (see :mod:`hiddenstate.models.pcfg`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def inside_chart(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param, w):
    """Log inside chart of one sentence: ``lin (n, n + 1, N)`` with
    ``lin[i, j, A]`` = :math:`\\log\\beta_{ij}(A)` (``-inf``: A does not derive the span).
    Each cell takes two sweeps over its rule applications: the largest log-term of every
    ``A`` first, then the sum of ``exp(term - largest)``, so no term underflows relative to
    the others of its own nonterminal, whatever the other nonterminals of the cell hold."""
    n = w.shape[0]
    lin = np.full((n, n + 1, N), -np.inf)
    for i in range(n):
        word = w[i]
        for r in range(lx_ptr[word], lx_ptr[word + 1]):
            lin[i, i + 1, lx_lhs[r]] = logtheta[lx_param[r]]
    top = np.empty(N)
    acc = np.empty(N)
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span
            top[:] = -np.inf
            for k in range(i + 1, j):
                for b in range(N):
                    vb = lin[i, k, b]
                    if vb == -np.inf:
                        continue
                    for r in range(bl_ptr[b], bl_ptr[b + 1]):
                        s = logtheta[b_param[r]] + vb + lin[k, j, b_right[r]]
                        if s > top[b_lhs[r]]:
                            top[b_lhs[r]] = s
            acc[:] = 0.0
            for k in range(i + 1, j):
                for b in range(N):
                    vb = lin[i, k, b]
                    if vb == -np.inf:
                        continue
                    for r in range(bl_ptr[b], bl_ptr[b + 1]):
                        a = b_lhs[r]
                        s = logtheta[b_param[r]] + vb + lin[k, j, b_right[r]]
                        if s > -np.inf:
                            acc[a] += np.exp(s - top[a])
            for a in range(N):
                if top[a] > -np.inf:
                    lin[i, j, a] = top[a] + np.log(acc[a])
    return lin


@njit(cache=True)
def _root_total(logtheta, root_nt, root_param, lin, n):
    """log P(w) from the top cell (``-inf`` when no root derives the sentence)."""
    top = -np.inf
    for r in range(root_nt.shape[0]):
        s = logtheta[root_param[r]] + lin[0, n, root_nt[r]]
        if s > top:
            top = s
    if top == -np.inf:
        return top
    acc = 0.0
    for r in range(root_nt.shape[0]):
        acc += np.exp(logtheta[root_param[r]] + lin[0, n, root_nt[r]] - top)
    return top + np.log(acc)


@njit(cache=True)
def _push_down(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param,
               root_nt, root_param, w, lin, logz, mu, counts):
    """Posterior uses ``mu`` (filled, shape of ``lin``) and expected rule counts (added to
    ``counts``) of one sentence of log-probability ``logz`` whose inside chart is ``lin``.
    Every share is ``exp(term - lin[parent])`` with ``term <= lin[parent]``: no overflow,
    and only negligible shares underflow."""
    n = w.shape[0]
    for r in range(root_nt.shape[0]):
        u = np.exp(logtheta[root_param[r]] + lin[0, n, root_nt[r]] - logz)
        mu[0, n, root_nt[r]] += u
        counts[root_param[r]] += u
    for span in range(n, 1, -1):
        for i in range(n - span + 1):
            j = i + span
            live = False
            for a in range(N):
                if mu[i, j, a] > 0.0:
                    live = True
                    break
            if not live:
                continue
            for k in range(i + 1, j):
                for b in range(N):
                    vb = lin[i, k, b]
                    if vb == -np.inf:
                        continue
                    for r in range(bl_ptr[b], bl_ptr[b + 1]):
                        a = b_lhs[r]
                        ma = mu[i, j, a]
                        if ma == 0.0:
                            continue
                        c = b_right[r]
                        s = logtheta[b_param[r]] + vb + lin[k, j, c]
                        if s == -np.inf:
                            continue
                        u = ma * np.exp(s - lin[i, j, a])
                        mu[i, k, b] += u
                        mu[k, j, c] += u
                        counts[b_param[r]] += u
    for i in range(n):
        word = w[i]
        for r in range(lx_ptr[word], lx_ptr[word + 1]):
            u = mu[i, i + 1, lx_lhs[r]]
            if u > 0.0 and logtheta[lx_param[r]] > -np.inf:
                counts[lx_param[r]] += u


@njit(cache=True)
def inside_outside(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param,
                   root_nt, root_param, words, offsets, want_counts, loglik, counts):
    """log P(w) of every sentence into ``loglik``; with ``want_counts``, the expected count
    of every rule given the sentences added to ``counts`` (sentences of probability zero
    add nothing: the caller checks ``loglik``)."""
    for s in range(offsets.shape[0] - 1):
        w = words[offsets[s]:offsets[s + 1]]
        n = w.shape[0]
        lin = inside_chart(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs,
                           lx_param, w)
        loglik[s] = _root_total(logtheta, root_nt, root_param, lin, n)
        if want_counts and loglik[s] > -np.inf:
            mu = np.zeros_like(lin)
            _push_down(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs,
                       lx_param, root_nt, root_param, w, lin, loglik[s], mu, counts)


@njit(cache=True)
def span_posteriors(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param,
                    root_nt, root_param, w):
    """``(log P(w), mu)``: ``mu[i, j, A]`` = P(A spans words i..j-1 | w) (zeros when the
    sentence has probability zero)."""
    n = w.shape[0]
    lin = inside_chart(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs,
                       lx_param, w)
    logp = _root_total(logtheta, root_nt, root_param, lin, n)
    mu = np.zeros_like(lin)
    if logp > -np.inf:
        counts = np.zeros(logtheta.shape[0])
        _push_down(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param,
                   root_nt, root_param, w, lin, logp, mu, counts)
    return logp, mu


@njit(cache=True)
def _viterbi_one(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param,
                 root_nt, root_param, w, out, pos):
    """Max-product chart of one sentence; writes its derivation at ``out[pos:pos + 2n]``
    (columns label, i, j, param) and returns its log-probability (``-inf``: none)."""
    n = w.shape[0]
    vit = np.full((n, n + 1, N), -np.inf)
    back_rule = np.full((n, n + 1, N), -1, dtype=np.int32)  # rule and split ids < 2**31
    back_split = np.zeros((n, n + 1, N), dtype=np.int32)
    for i in range(n):
        word = w[i]
        for r in range(lx_ptr[word], lx_ptr[word + 1]):
            a = lx_lhs[r]
            v = logtheta[lx_param[r]]
            if v > vit[i, i + 1, a]:
                vit[i, i + 1, a] = v
                back_rule[i, i + 1, a] = r
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span
            for k in range(i + 1, j):
                for b in range(N):
                    vb = vit[i, k, b]
                    if vb == -np.inf:
                        continue
                    for r in range(bl_ptr[b], bl_ptr[b + 1]):
                        vc = vit[k, j, b_right[r]]
                        if vc == -np.inf:
                            continue
                        s = logtheta[b_param[r]] + vb + vc
                        a = b_lhs[r]
                        if s > vit[i, j, a]:
                            vit[i, j, a] = s
                            back_rule[i, j, a] = r
                            back_split[i, j, a] = k
    best = -np.inf
    broot = -1
    for r in range(root_nt.shape[0]):
        s = logtheta[root_param[r]] + vit[0, n, root_nt[r]]
        if s > best:
            best = s
            broot = r
    if broot < 0:
        return -np.inf
    out[pos, 0] = -1
    out[pos, 1] = 0
    out[pos, 2] = n
    out[pos, 3] = root_param[broot]
    p = pos + 1
    stack = np.empty((2 * n, 3), dtype=np.int64)
    top = 1
    stack[0, 0] = root_nt[broot]
    stack[0, 1] = 0
    stack[0, 2] = n
    while top > 0:
        top -= 1
        a = stack[top, 0]
        i = stack[top, 1]
        j = stack[top, 2]
        r = back_rule[i, j, a]
        out[p, 0] = a
        out[p, 1] = i
        out[p, 2] = j
        if j == i + 1:
            out[p, 3] = lx_param[r]
        else:
            out[p, 3] = b_param[r]
            k = back_split[i, j, a]
            stack[top, 0] = b_right[r]  # pushed first, popped second
            stack[top, 1] = k
            stack[top, 2] = j
            stack[top + 1, 0] = _left_of(bl_ptr, r)
            stack[top + 1, 1] = i
            stack[top + 1, 2] = k
            top += 2
        p += 1
    return best


@njit(cache=True)
def _left_of(bl_ptr, r):
    """The left child of binary rule ``r`` (rules are grouped by left child)."""
    lo = 0
    hi = bl_ptr.shape[0] - 1
    while hi - lo > 1:  # the last b with bl_ptr[b] <= r
        mid = (lo + hi) // 2
        if bl_ptr[mid] <= r:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True)
def viterbi_parses(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param,
                   root_nt, root_param, words, offsets, score, out):
    """CKY: the most probable derivation of every sentence. ``score[s]``: its
    log-probability (``-inf`` if none; its rows of ``out`` are then left untouched);
    ``out (2 * len(words), 4)``: sentence ``s``'s derivation at rows ``2 * offsets[s] ..
    2 * offsets[s + 1] - 1``. Ties keep the first rule met."""
    for s in range(offsets.shape[0] - 1):
        w = words[offsets[s]:offsets[s + 1]]
        score[s] = _viterbi_one(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr,
                                lx_lhs, lx_param, root_nt, root_param, w, out,
                                2 * offsets[s])


@njit(cache=True)
def _insert(scores, rule, split, lrank, rrank, K, v, r, k, lr, rr):
    """Insert a candidate into one descending top-K list (ties: the earlier one stays
    first)."""
    if not v > scores[K - 1]:
        return
    q = K - 1
    while q > 0 and v > scores[q - 1]:
        scores[q] = scores[q - 1]
        rule[q] = rule[q - 1]
        split[q] = split[q - 1]
        lrank[q] = lrank[q - 1]
        rrank[q] = rrank[q - 1]
        q -= 1
    scores[q] = v
    rule[q] = r
    split[q] = k
    lrank[q] = lr
    rrank[q] = rr


@njit(cache=True)
def kbest_parses(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param,
                 root_nt, root_param, w, K, score, out):
    """The ``K`` most probable derivations of one sentence, best first: ``score[q]`` their
    log-probabilities (``-inf`` past the number of derivations), ``out (K, 2n, 4)`` the
    derivations. Returns how many exist (at most K)."""
    n = w.shape[0]
    kb = np.full((n, n + 1, N, K), -np.inf)
    kr = np.full((n, n + 1, N, K), -1, dtype=np.int64)
    ks = np.zeros((n, n + 1, N, K), dtype=np.int64)
    kl = np.zeros((n, n + 1, N, K), dtype=np.int64)
    kc = np.zeros((n, n + 1, N, K), dtype=np.int64)
    for i in range(n):
        word = w[i]
        for r in range(lx_ptr[word], lx_ptr[word + 1]):
            a = lx_lhs[r]
            _insert(kb[i, i + 1, a], kr[i, i + 1, a], ks[i, i + 1, a], kl[i, i + 1, a],
                    kc[i, i + 1, a], K, logtheta[lx_param[r]], r, 0, 0, 0)
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span
            for k in range(i + 1, j):
                for b in range(N):
                    if kb[i, k, b, 0] == -np.inf:
                        continue
                    for r in range(bl_ptr[b], bl_ptr[b + 1]):
                        c = b_right[r]
                        if kb[k, j, c, 0] == -np.inf:
                            continue
                        a = b_lhs[r]
                        lt = logtheta[b_param[r]]
                        if lt == -np.inf:
                            continue
                        lst = kb[i, j, a]
                        for lr in range(K):
                            vl = kb[i, k, b, lr]
                            if vl == -np.inf or not lt + vl + kb[k, j, c, 0] > lst[K - 1]:
                                break
                            for rr in range(K):
                                v = lt + vl + kb[k, j, c, rr]
                                if not v > lst[K - 1]:
                                    break
                                _insert(lst, kr[i, j, a], ks[i, j, a], kl[i, j, a],
                                        kc[i, j, a], K, v, r, k, lr, rr)
    # the root: candidates (root rule, rank)
    root_r = np.full(K, -1, dtype=np.int64)
    root_q = np.zeros(K, dtype=np.int64)
    dummy = np.zeros(K, dtype=np.int64)
    for q in range(K):
        score[q] = -np.inf
    for r in range(root_nt.shape[0]):
        lt = logtheta[root_param[r]]
        for q in range(K):
            v = lt + kb[0, n, root_nt[r], q]
            if not v > score[K - 1]:
                break
            _insert(score, root_r, root_q, dummy, dummy, K, v, r, q, 0, 0)
    found = 0
    stack = np.empty((2 * n, 4), dtype=np.int64)
    for d in range(K):
        if score[d] == -np.inf:
            break
        found += 1
        rr0 = root_r[d]
        out[d, 0, 0] = -1
        out[d, 0, 1] = 0
        out[d, 0, 2] = n
        out[d, 0, 3] = root_param[rr0]
        p = 1
        top = 1
        stack[0, 0] = root_nt[rr0]
        stack[0, 1] = 0
        stack[0, 2] = n
        stack[0, 3] = root_q[d]
        while top > 0:
            top -= 1
            a = stack[top, 0]
            i = stack[top, 1]
            j = stack[top, 2]
            q = stack[top, 3]
            r = kr[i, j, a, q]
            out[d, p, 0] = a
            out[d, p, 1] = i
            out[d, p, 2] = j
            if j == i + 1:
                out[d, p, 3] = lx_param[r]
            else:
                out[d, p, 3] = b_param[r]
                k = ks[i, j, a, q]
                stack[top, 0] = b_right[r]
                stack[top, 1] = k
                stack[top, 2] = j
                stack[top, 3] = kc[i, j, a, q]
                stack[top + 1, 0] = _left_of(bl_ptr, r)
                stack[top + 1, 1] = i
                stack[top + 1, 2] = k
                stack[top + 1, 3] = kl[i, j, a, q]
                top += 2
            p += 1
    return found


@njit(cache=True)
def sample_parses(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param,
                  root_nt, root_param, w, uniforms, out):
    """Posterior samples of derivations of one sentence, one per row of ``uniforms
    (n_samples, 2n)`` (one uniform per node): top-down, each node picks its (rule, split)
    with probability ``exp(term - lin[node])``, its share of the node's inside probability.
    ``out (n_samples, 2n, 4)``. Returns log P(w) (``-inf``: no derivation, nothing
    written)."""
    n = w.shape[0]
    lin = inside_chart(logtheta, N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs,
                       lx_param, w)
    logp = _root_total(logtheta, root_nt, root_param, lin, n)
    if logp == -np.inf:
        return logp
    stack = np.empty((2 * n, 3), dtype=np.int64)
    for d in range(uniforms.shape[0]):
        target = uniforms[d, 0]
        acc = 0.0
        chosen = -1
        for r in range(root_nt.shape[0]):
            v = np.exp(logtheta[root_param[r]] + lin[0, n, root_nt[r]] - logp)
            if v > 0.0:
                chosen = r
                acc += v
                if target < acc:
                    break
        out[d, 0, 0] = -1
        out[d, 0, 1] = 0
        out[d, 0, 2] = n
        out[d, 0, 3] = root_param[chosen]
        p = 1
        top = 1
        stack[0, 0] = root_nt[chosen]
        stack[0, 1] = 0
        stack[0, 2] = n
        while top > 0:
            top -= 1
            a = stack[top, 0]
            i = stack[top, 1]
            j = stack[top, 2]
            out[d, p, 0] = a
            out[d, p, 1] = i
            out[d, p, 2] = j
            if j == i + 1:
                word = w[i]
                for r in range(lx_ptr[word], lx_ptr[word + 1]):
                    if lx_lhs[r] == a:
                        out[d, p, 3] = lx_param[r]
                p += 1
                continue
            target = uniforms[d, p]
            acc = 0.0
            cr = -1
            ck = -1
            done = False
            for k in range(i + 1, j):
                for b in range(N):
                    vb = lin[i, k, b]
                    if vb == -np.inf:
                        continue
                    for r in range(bl_ptr[b], bl_ptr[b + 1]):
                        if b_lhs[r] != a:
                            continue
                        v = np.exp(logtheta[b_param[r]] + vb + lin[k, j, b_right[r]]
                                   - lin[i, j, a])
                        if v > 0.0:
                            cr = r
                            ck = k
                            acc += v
                            if target < acc:
                                done = True
                                break
                    if done:
                        break
                if done:
                    break
            out[d, p, 3] = b_param[cr]
            stack[top, 0] = b_right[cr]
            stack[top, 1] = ck
            stack[top, 2] = j
            stack[top + 1, 0] = _left_of(bl_ptr, cr)
            stack[top + 1, 1] = i
            stack[top + 1, 2] = ck
            top += 2
            p += 1
    return logp
