"""Slow, obviously-correct HMM inference by enumerating every state path (tiny K and T only).

For one sequence with per-step log emission probabilities ``log_e`` of shape ``(T, K)``:

    log p(x, z) = log pi[z_0] + sum_t log A[z_{t-1}, z_t] + sum_t log_e[t, z_t]

over all ``K**T`` paths ``z``; everything else follows from the definitions:
p(x) = sum_z p(x, z), p(z | x) = p(x, z) / p(x), gamma_t(k) = P(z_t = k | x),
xi_t(i, j) = P(z_t = i, z_{t+1} = j | x), Viterbi = argmax_z p(x, z).
"""

from __future__ import annotations

import itertools

import numpy as np


def all_paths(K: int, T: int) -> np.ndarray:
    """Every state path of length ``T`` as rows of a ``(K**T, T)`` array (lexicographic)."""
    return np.array(list(itertools.product(range(K), repeat=T)), dtype=np.int64).reshape(-1, T)


def path_log_joint(startprob, transmat, log_e) -> tuple[np.ndarray, np.ndarray]:
    """``(paths, log p(x, z))`` for every path ``z`` of one sequence."""
    T, K = log_e.shape
    paths = all_paths(K, T)
    with np.errstate(divide="ignore"):
        lp = np.log(startprob)[paths[:, 0]] + log_e[0, paths[:, 0]]
        for t in range(1, T):
            lp = lp + np.log(transmat)[paths[:, t - 1], paths[:, t]] + log_e[t, paths[:, t]]
    return paths, lp


def _logsumexp(x: np.ndarray) -> float:
    m = np.max(x)
    if m == -np.inf:
        return -np.inf
    return float(m + np.log(np.sum(np.exp(x - m))))


def sequence_posteriors(startprob, transmat, log_e) -> dict:
    """Every quantity the kernels compute, for one sequence, by enumeration.

    Returns ``loglik``, ``gamma (T, K)``, ``start (K,)``, ``trans (K, K)`` (expected counts),
    ``path_prob`` (``p(z | x)`` of each row of ``paths``), ``paths``, ``viterbi_path`` and
    ``viterbi_logprob``. For an impossible sequence the posteriors are all zero.
    """
    T, K = log_e.shape
    paths, lp = path_log_joint(startprob, transmat, log_e)
    loglik = _logsumexp(lp)
    if loglik == -np.inf:
        w = np.zeros(len(lp))
    else:
        w = np.exp(lp - loglik)
    gamma = np.zeros((T, K))
    for t in range(T):
        np.add.at(gamma[t], paths[:, t], w)
    trans = np.zeros((K, K))
    for t in range(1, T):
        np.add.at(trans, (paths[:, t - 1], paths[:, t]), w)
    best = int(np.argmax(lp))
    return {
        "loglik": loglik,
        "gamma": gamma,
        "start": gamma[0].copy(),
        "trans": trans,
        "paths": paths,
        "path_prob": w,
        "viterbi_path": paths[best],
        "viterbi_logprob": float(lp[best]),
    }


def dataset_posteriors(startprob, transmat, log_e, lengths, symbols=None, n_symbols=None):
    """Enumeration over several concatenated sequences, reduced like the E-step.

    ``log_e`` is the ``(N, K)`` table of log emission probabilities. With ``symbols``, the
    posteriors are also summed per symbol into ``emission (n_symbols, K)``.
    """
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    K = len(startprob)
    out = {"loglik": [], "gamma": [], "start": np.zeros(K), "trans": np.zeros((K, K)),
           "viterbi_path": [], "viterbi_logprob": [], "per_sequence": []}
    for s in range(len(lengths)):
        r = sequence_posteriors(startprob, transmat, log_e[bounds[s]:bounds[s + 1]])
        out["per_sequence"].append(r)
        out["loglik"].append(r["loglik"])
        out["gamma"].append(r["gamma"])
        out["start"] += r["start"]
        out["trans"] += r["trans"]
        out["viterbi_path"].append(r["viterbi_path"])
        out["viterbi_logprob"].append(r["viterbi_logprob"])
    out["loglik"] = np.array(out["loglik"])
    out["gamma"] = np.concatenate(out["gamma"])
    out["viterbi_path"] = np.concatenate(out["viterbi_path"])
    out["viterbi_logprob"] = np.array(out["viterbi_logprob"])
    if symbols is not None:
        out["emission"] = np.zeros((n_symbols, K))
        np.add.at(out["emission"], symbols, out["gamma"])
    return out


def log_space_sequence(startprob, transmat, log_e) -> dict:
    """The same quantities for one sequence by the textbook log-space recursions (any K).

    Not enumeration, but each line is a definition: log alpha, log beta, gamma and xi from
    them, and the Viterbi recursion with ties to the lowest index (``np.argmax``).
    """
    from scipy.special import logsumexp

    T, K = log_e.shape
    with np.errstate(divide="ignore"):
        log_pi, log_A = np.log(startprob), np.log(transmat)
    log_alpha = np.empty((T, K))
    log_beta = np.zeros((T, K))
    log_alpha[0] = log_pi + log_e[0]
    for t in range(1, T):
        log_alpha[t] = logsumexp(log_alpha[t - 1][:, None] + log_A, axis=0) + log_e[t]
    for t in range(T - 2, -1, -1):
        log_beta[t] = logsumexp(log_A + (log_e[t + 1] + log_beta[t + 1])[None, :], axis=1)
    loglik = float(logsumexp(log_alpha[-1]))
    gamma = np.exp(log_alpha + log_beta - loglik)
    trans = np.zeros((K, K))
    for t in range(1, T):
        trans += np.exp(log_alpha[t - 1][:, None] + log_A
                        + (log_e[t] + log_beta[t])[None, :] - loglik)
    delta = log_pi + log_e[0]
    back = np.zeros((T, K), dtype=np.int64)
    for t in range(1, T):
        scores = delta[:, None] + log_A
        back[t] = np.argmax(scores, axis=0)
        delta = scores[back[t], np.arange(K)] + log_e[t]
    path = np.empty(T, dtype=np.int64)
    path[-1] = np.argmax(delta)
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return {"loglik": loglik, "gamma": gamma, "start": gamma[0], "trans": trans,
            "viterbi_path": path, "viterbi_logprob": float(np.max(delta))}
