"""Kernels and the inference layer against brute-force enumeration over all state paths.

Tiny models (K <= 3, T <= 6, several sequences of different lengths including length 1),
categorical tables and dense scaled tables. Every random generator is seeded.
"""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import dataset_posteriors, log_space_sequence
from scipy import stats

from hiddenstate import inference, threads
from hiddenstate.inference import EmissionTable, LanePlan, Sequences
from hiddenstate.kernels import chunk_bounds

TOL = 1e-10
LENGTHS = [1, 4, 6, 2, 5, 3, 6, 1, 3, 2]  # 10 sequences: a partly filled second block


def random_stochastic(rng, shape, zeros=0.0):
    p = rng.random(shape) + 0.05
    if zeros:
        p[rng.random(shape) < zeros] = 0.0
        p[..., 0] += 0.01  # keep every row summable
    return p / p.sum(axis=-1, keepdims=True)


def make_case(seed, K, kind, lengths=LENGTHS, n_symbols=4):
    """Parameters, an EmissionTable, the enumeration's log-emission table and the symbols."""
    rng = np.random.default_rng(seed)
    startprob = random_stochastic(rng, K)
    transmat = random_stochastic(rng, (K, K))
    N = int(np.sum(lengths))
    if kind == "categorical":
        emissionprob = random_stochastic(rng, (K, n_symbols))
        symbols = rng.integers(0, n_symbols, N)
        table = EmissionTable.from_symbols(emissionprob, symbols)
        log_e = np.log(emissionprob.T[symbols])
    else:
        symbols = None
        log_e = rng.normal(size=(N, K)) * 3.0 - 50.0  # far from 1: the scaling matters
        table = EmissionTable.from_log_likelihood(log_e)
    return startprob, transmat, table, log_e, symbols


CASES = [(seed, K, kind) for seed, K in [(0, 1), (1, 2), (2, 3)]
         for kind in ("categorical", "dense")]


@pytest.mark.parametrize(("seed", "K", "kind"), CASES)
def test_forward_backward_matches_enumeration(seed, K, kind):
    startprob, transmat, table, log_e, symbols = make_case(seed, K, kind)
    seqs = Sequences.from_lengths(LENGTHS)
    ref = dataset_posteriors(startprob, transmat, log_e, LENGTHS, symbols, 4)
    res = inference.forward_backward(startprob, transmat, table, seqs)
    np.testing.assert_allclose(res.loglik, ref["loglik"], rtol=TOL, atol=0)
    np.testing.assert_allclose(res.start, ref["start"], rtol=0, atol=TOL)
    np.testing.assert_allclose(res.trans, ref["trans"], rtol=0, atol=TOL)
    if kind == "categorical":
        np.testing.assert_allclose(res.post, ref["emission"], rtol=0, atol=TOL)
    else:
        np.testing.assert_allclose(res.post, ref["gamma"], rtol=0, atol=TOL)


@pytest.mark.parametrize(("seed", "K", "kind"), CASES)
def test_log_likelihood_matches_enumeration(seed, K, kind):
    startprob, transmat, table, log_e, _ = make_case(seed, K, kind)
    seqs = Sequences.from_lengths(LENGTHS)
    ref = dataset_posteriors(startprob, transmat, log_e, LENGTHS)
    np.testing.assert_allclose(inference.log_likelihood(startprob, transmat, table, seqs),
                               ref["loglik"], rtol=TOL, atol=0)


@pytest.mark.parametrize(("seed", "K", "kind"), CASES)
def test_viterbi_matches_enumeration(seed, K, kind):
    startprob, transmat, table, log_e, _ = make_case(seed, K, kind)
    seqs = Sequences.from_lengths(LENGTHS)
    ref = dataset_posteriors(startprob, transmat, log_e, LENGTHS)
    logprob, states = inference.viterbi(startprob, transmat, table, seqs)
    np.testing.assert_array_equal(states, ref["viterbi_path"])
    np.testing.assert_allclose(logprob, ref["viterbi_logprob"], rtol=TOL, atol=0)


def test_segmented_inference_matches_enumeration(monkeypatch):
    """Segments of 2 rows with a 1-row warm-up: the checks fail and rerun, or pass."""
    monkeypatch.setattr(inference, "_SEGMENT", 2)
    monkeypatch.setattr(inference, "_WARMUP", 1)
    for seed, K, kind in CASES:
        startprob, transmat, table, log_e, symbols = make_case(seed, K, kind)
        seqs = Sequences.from_lengths(LENGTHS)
        assert (seqs.segments.part > 0).any() and seqs.long_segments.n_chunks
        ref = dataset_posteriors(startprob, transmat, log_e, LENGTHS, symbols, 4)
        np.testing.assert_allclose(inference.log_likelihood(startprob, transmat, table, seqs),
                                   ref["loglik"], rtol=TOL, atol=0)
        res = inference.forward_backward(startprob, transmat, table, seqs)
        np.testing.assert_allclose(res.loglik, ref["loglik"], rtol=TOL, atol=0)
        np.testing.assert_allclose(res.start, ref["start"], rtol=0, atol=TOL)
        np.testing.assert_allclose(res.trans, ref["trans"], rtol=0, atol=TOL)
        np.testing.assert_allclose(res.post, ref["emission" if symbols is not None else "gamma"],
                                   rtol=0, atol=TOL)
        logprob, states = inference.viterbi(startprob, transmat, table, seqs)
        np.testing.assert_array_equal(states, ref["viterbi_path"])
        np.testing.assert_allclose(logprob, ref["viterbi_logprob"], rtol=TOL, atol=0)


@pytest.mark.parametrize("kind", ["categorical", "dense"])
def test_ffbs_draws_paths_with_their_posterior_probability(kind):
    """Empirical path frequencies of many FFBS draws against exact p(z | x).

    Each of 3 sequences (lengths 1, 3, 4; K = 3, so 3, 27 and 81 paths) is repeated
    n = 30000 times in one call. For a path of probability p the frequency has standard
    deviation sqrt(p (1 - p) / n) <= 0.0029; we require every path within 5 standard
    deviations (+ 1/n) and the chi-square statistic below its 1e-6 upper quantile. For a
    correct sampler both fail with probability < 1e-4 (and the seed is fixed).
    """
    K, n = 3, 30000
    base = [1, 3, 4]
    startprob, transmat, _, log_e_base, _ = make_case(7, K, "dense", base)
    if kind == "categorical":
        rng = np.random.default_rng(8)
        emissionprob = random_stochastic(rng, (K, 5))
        symbols_base = rng.integers(0, 5, sum(base))
        log_e_base = np.log(emissionprob.T[symbols_base])
    ref = dataset_posteriors(startprob, transmat, log_e_base, base)
    lengths = np.tile(base, n)
    log_e = np.tile(log_e_base, (n, 1))
    if kind == "categorical":
        table = EmissionTable.from_symbols(emissionprob, np.tile(symbols_base, n))
    else:
        table = EmissionTable.from_log_likelihood(log_e)
    seqs = Sequences.from_lengths(lengths)
    states = inference.sample_posterior(startprob, transmat, table, seqs,
                                        np.random.default_rng(123))
    draws = states.reshape(n, sum(base))
    offset = 0
    for T, r in zip(base, ref["per_sequence"], strict=True):
        z = draws[:, offset:offset + T]
        offset += T
        code = z @ (K ** np.arange(T - 1, -1, -1))  # row of r["paths"] (lexicographic)
        freq = np.bincount(code, minlength=K**T) / n
        p = r["path_prob"]
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1.0 / n)
        support = p > 0
        assert np.all(freq[~support] == 0)
        chi2 = np.sum((freq[support] - p[support]) ** 2 / p[support]) * n
        assert chi2 < stats.chi2.isf(1e-6, df=support.sum() - 1)


def test_sample_chain_is_a_markov_chain():
    rng = np.random.default_rng(3)
    startprob, transmat = random_stochastic(rng, 3), random_stochastic(rng, (3, 3))
    z = inference.sample_chain(startprob, transmat, 200000, np.random.default_rng(4))
    counts = np.zeros((3, 3))
    np.add.at(counts, (z[:-1], z[1:]), 1)
    est = counts / counts.sum(axis=1, keepdims=True)
    assert np.abs(est - transmat).max() < 0.01  # ~ 5 standard deviations at n ~ 66000/row


def _impossible_case():
    """State 0 emits only symbol 0, state 1 only symbol 1, and 0 -> 1 is forbidden."""
    startprob = np.array([0.5, 0.5])
    transmat = np.array([[1.0, 0.0], [0.4, 0.6]])
    emissionprob = np.array([[1.0, 0.0, 0.0], [0.0, 0.7, 0.3]])
    return startprob, transmat, emissionprob


@pytest.mark.parametrize("kind", ["categorical", "dense"])
def test_impossible_sequence_gives_minus_inf_and_no_statistics(kind):
    startprob, transmat, emissionprob = _impossible_case()
    # sequence 1 = [0, 1] is impossible (0 -> 1 forbidden); the others are possible
    lengths = [3, 2, 4]
    symbols = np.array([1, 2, 0, 0, 1, 1, 1, 0, 0])
    possible = np.r_[0:3, 5:9]

    def table(sym):
        if kind == "categorical":
            return EmissionTable.from_symbols(emissionprob, sym)
        with np.errstate(divide="ignore"):
            return EmissionTable.from_log_likelihood(np.log(emissionprob.T[sym]))

    seqs = Sequences.from_lengths(lengths)
    res = inference.forward_backward(startprob, transmat, table(symbols), seqs)
    ref = inference.forward_backward(startprob, transmat, table(symbols[possible]),
                                     Sequences.from_lengths([3, 4]))
    assert res.loglik[1] == -np.inf and np.all(np.isfinite(res.loglik[[0, 2]]))
    np.testing.assert_array_equal(res.loglik[[0, 2]], ref.loglik)
    np.testing.assert_array_equal(res.start, ref.start)
    np.testing.assert_array_equal(res.trans, ref.trans)
    if kind == "categorical":
        np.testing.assert_array_equal(res.post, ref.post)
    else:
        assert np.all(res.post[3:5] == 0.0)
        np.testing.assert_array_equal(res.post[possible], ref.post)
    ll = inference.log_likelihood(startprob, transmat, table(symbols), seqs)
    np.testing.assert_array_equal(ll, res.loglik)
    logprob, states = inference.viterbi(startprob, transmat, table(symbols), seqs)
    assert logprob[1] == -np.inf and np.all(states[3:5] == -1)
    assert np.all(states[possible] >= 0)
    draws = inference.sample_posterior(startprob, transmat, table(symbols), seqs,
                                       np.random.default_rng(0))
    assert np.all(draws[3:5] == -1) and np.all(draws[possible] >= 0)


def test_lanes_are_independent_of_their_block_mates():
    """A sequence alone and among others of other lengths gives bitwise the same numbers."""
    startprob, transmat, table, log_e, _ = make_case(4, 3, "dense")
    seqs = Sequences.from_lengths(LENGTHS)
    together = inference.forward_backward(startprob, transmat, table, seqs)
    bounds = seqs.bounds
    for s in [0, 2, 6]:
        alone_table = EmissionTable.from_log_likelihood(log_e[bounds[s]:bounds[s + 1]])
        alone = inference.forward_backward(startprob, transmat, alone_table,
                                           Sequences.from_lengths([LENGTHS[s]]))
        assert alone.loglik[0] == together.loglik[s]
        np.testing.assert_array_equal(alone.post, together.post[bounds[s]:bounds[s + 1]])


def _long_case(T, seed=5, K=4, W=20, sticky=0.0):
    rng = np.random.default_rng(seed)
    startprob = random_stochastic(rng, K)
    transmat = random_stochastic(rng, (K, K))
    transmat = sticky * np.eye(K) + (1 - sticky) * transmat
    emissionprob = random_stochastic(rng, (K, W))
    symbols = rng.integers(0, W, T)
    return startprob, transmat, emissionprob, EmissionTable.from_symbols(emissionprob, symbols)


def _serial(monkeypatch, fn, startprob, transmat, table, seqs):
    """``fn`` with every sequence in a single lane (a fresh plan: plans are cached)."""
    with monkeypatch.context() as m:
        m.setattr(inference, "_SEGMENT", 10**12)
        return fn(startprob, transmat, table, Sequences.from_lengths(seqs.lengths))


@pytest.mark.parametrize("sticky", [0.0, 0.999])
def test_segmented_long_sequences_match_the_serial_recursion(monkeypatch, sticky):
    """Segments with warm-ups (checks pass) and a chain that forgets slowly (reruns)."""
    monkeypatch.setattr(inference, "_SEGMENT", 3000)
    monkeypatch.setattr(inference, "_WARMUP", 200)
    startprob, transmat, _, table = _long_case(40000, sticky=sticky)
    seqs = Sequences.from_lengths([17000, 3, 20000, 2997])
    assert seqs.segments.part.max() > 4
    args = (startprob, transmat, table, seqs)
    np.testing.assert_allclose(inference.log_likelihood(*args),
                               _serial(monkeypatch, inference.log_likelihood, *args),
                               rtol=1e-12, atol=0)
    logprob, states = inference.viterbi(*args)
    ref_logprob, ref_states = _serial(monkeypatch, inference.viterbi, *args)
    np.testing.assert_array_equal(states, ref_states)
    np.testing.assert_allclose(logprob, ref_logprob, rtol=1e-12, atol=0)
    fb = inference.forward_backward(*args)
    ref = _serial(monkeypatch, inference.forward_backward, *args)
    np.testing.assert_allclose(fb.loglik, ref.loglik, rtol=1e-12, atol=0)
    np.testing.assert_allclose(fb.start, ref.start, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fb.trans, ref.trans, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(fb.post, ref.post, rtol=1e-12, atol=1e-9)


def test_million_steps_score_without_underflow(monkeypatch):
    """log p(x) of a 10**6-step sequence (p(x) ~ 1e-1300000) against the log-space forward.

    The reference is hmmlearn's log-space forward recursion (``implementation="log"``),
    an independent implementation that never leaves log space.
    """
    hmm = pytest.importorskip("hmmlearn.hmm")
    T = 10**6
    startprob, transmat, emissionprob, table = _long_case(T, seed=11, K=3, W=30)
    seqs = Sequences.from_lengths([T])
    ll = inference.log_likelihood(startprob, transmat, table, seqs)[0]
    fb = inference.forward_backward(startprob, transmat, table, seqs)
    ref_model = hmm.CategoricalHMM(3, implementation="log")
    ref_model.startprob_, ref_model.transmat_ = startprob, transmat
    ref_model.emissionprob_, ref_model.n_features = emissionprob, 30
    ref = ref_model.score(table.idx[:, None])
    assert np.isfinite(ll) and ll < -2e6
    assert abs(ll - ref) <= 1e-8 * abs(ref)
    assert abs(fb.loglik[0] - ref) <= 1e-8 * abs(ref)
    assert abs(fb.start.sum() - 1.0) < 1e-12 and abs(fb.trans.sum() - (T - 1)) < 1e-6 * T


def _run_all(startprob, transmat, table, seqs):
    fb = inference.forward_backward(startprob, transmat, table, seqs)
    return (fb.loglik, fb.start, fb.trans, fb.post,
            inference.log_likelihood(startprob, transmat, table, seqs),
            *inference.viterbi(startprob, transmat, table, seqs),
            inference.sample_posterior(startprob, transmat, table, seqs,
                                       np.random.default_rng(1)))


def test_results_are_identical_for_one_and_two_threads(monkeypatch):
    """Every parallel call (thresholds 0: helpers whatever the load) on 1 and on 2 threads:
    the same numbers, bit for bit, on plans of more than 2 chunks."""
    monkeypatch.setattr(inference, "_SEGMENT", 1000)
    monkeypatch.setattr(inference, "_WARMUP", 100)
    monkeypatch.setattr(threads, "PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "BUSY_PARALLEL_SECONDS", 0.0)
    rng = np.random.default_rng(9)
    lengths = rng.integers(1, 3000, 150)
    lengths[7] = 20000
    startprob, transmat, emissionprob, cat = _long_case(int(lengths.sum()), seed=9, K=5)
    dense = EmissionTable.from_log_likelihood(rng.normal(size=(int(lengths.sum()), 5)))
    seqs = Sequences.from_lengths(lengths)
    plans = (seqs.short_lanes, seqs.long_segments, seqs.segments)
    assert min(plan.n_chunks for plan in plans) > 2
    monkeypatch.setattr(threads, "_default", 2)
    pools = []
    helpers = threads._helpers
    monkeypatch.setattr(threads, "_helpers", lambda n: pools.append(n) or helpers(n))
    for table in (cat, dense):
        with threads.limit(1):
            one = _run_all(startprob, transmat, table, seqs)
        assert pools == []
        two = _run_all(startprob, transmat, table, seqs)
        assert len(pools) >= 6  # every kernel of _run_all had a helper thread
        pools.clear()
        for a, b in zip(one, two, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("K", [9, 300])
def test_many_states_match_the_log_space_recursions(K):
    """K = 9 (two register blocks of 4 and a remainder), K = 300 (uint16 back-pointers)."""
    lengths = [7, 1, 12]
    rng = np.random.default_rng(K)
    startprob = random_stochastic(rng, K)
    transmat = random_stochastic(rng, (K, K), zeros=0.3)
    log_e = rng.normal(size=(sum(lengths), K)) * 2.0
    table = EmissionTable.from_log_likelihood(log_e)
    seqs = Sequences.from_lengths(lengths)
    fb = inference.forward_backward(startprob, transmat, table, seqs)
    ll = inference.log_likelihood(startprob, transmat, table, seqs)
    logprob, states = inference.viterbi(startprob, transmat, table, seqs)
    bounds = seqs.bounds
    start, trans = np.zeros(K), np.zeros((K, K))
    for s in range(len(lengths)):
        rows = slice(bounds[s], bounds[s + 1])
        ref = log_space_sequence(startprob, transmat, log_e[rows])
        start += ref["start"]
        trans += ref["trans"]
        np.testing.assert_allclose([fb.loglik[s], ll[s]], ref["loglik"], rtol=TOL)
        np.testing.assert_allclose(fb.post[rows], ref["gamma"], rtol=0, atol=TOL)
        np.testing.assert_array_equal(states[rows], ref["viterbi_path"])
        np.testing.assert_allclose(logprob[s], ref["viterbi_logprob"], rtol=TOL)
    np.testing.assert_allclose(fb.start, start, rtol=0, atol=TOL)
    np.testing.assert_allclose(fb.trans, trans, rtol=0, atol=TOL)


@pytest.mark.parametrize("covariance_type", ["diag", "spherical"])
def test_gaussian_table_matches_scipy_for_any_thread_count(covariance_type, monkeypatch):
    """The diagonal-Gaussian kernel (8 rows per vector, parallel row blocks): log-densities
    equal scipy's to 1e-12 (N not a multiple of 8 or of the block), the scaled table is the
    same with 1 and 2 threads, bit for bit."""
    from hiddenstate.families import GaussianEmissions

    rng = np.random.default_rng(3)
    K, D, N = 4, 3, 2 * 1024 + 13
    fam = GaussianEmissions(K, D, covariance_type=covariance_type)
    X = rng.normal(size=(N, D)) * 3
    params = {"means": rng.normal(size=(K, D)),
              "covars": rng.uniform(0.3, 2.0, size=(K, D) if covariance_type == "diag"
                                    else K)}
    var = params["covars"] if covariance_type == "diag" else params["covars"][:, None] * \
        np.ones((K, D))
    want = np.stack([stats.norm(params["means"][k], np.sqrt(var[k])).logpdf(X).sum(axis=1)
                     for k in range(K)], axis=1)
    np.testing.assert_allclose(fam.log_likelihood(params, X), want, rtol=1e-12)
    monkeypatch.setattr(threads, "PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "BUSY_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "_default", 2)
    tables = []
    for n in (1, 2):
        with threads.limit(n):
            t = fam.table(params, X)
        tables.append((t.emis.copy(), t.log_offset.copy()))
    for a, b in zip(tables[0], tables[1], strict=True):
        np.testing.assert_array_equal(a, b)
    t = tables[0]
    np.testing.assert_allclose(np.log(t[0]) + t[1][:, None], want, rtol=1e-12)


@pytest.mark.parametrize("K", [1, 3, 4, 9])
@pytest.mark.parametrize("lengths", [[700], [40, 33, 9, 8, 7, 6, 5, 4, 30], [5200, 3, 2]])
def test_a_lane_alone_computes_exactly_what_the_lockstep_block_does(monkeypatch, K, lengths):
    """A block with one sequence runs it alone (kernels.single_lane), bit for bit as in the
    8-lane block: whole sequences, a last block of one, and a sequence in segments (forward
    filter, backward warm-ups and their reruns, Viterbi), categorical and dense tables,
    with impossible rows (zero emissions) in one sequence."""
    from hiddenstate.kernels import single_lane

    monkeypatch.setattr(inference, "_SEGMENT", 2000)
    monkeypatch.setattr(inference, "_WARMUP", 20)  # too short to forget: segments rerun
    reruns = []
    single = inference.LanePlan.single
    monkeypatch.setattr(inference.LanePlan, "single",
                        lambda plan, l: reruns.append(l) or single(plan, l))
    rng = np.random.default_rng(K)
    N = sum(lengths)
    startprob, transmat, emissionprob, cat = _long_case(N, seed=K, K=K, sticky=0.999)
    log_e = rng.normal(size=(N, K)) * 3
    log_e[lengths[0] + 1:lengths[0] + 3] = -np.inf  # the second sequence is impossible
    dense = EmissionTable.from_log_likelihood(log_e)
    for table in (cat, dense):
        out = []
        for enabled in (True, False):
            monkeypatch.setattr(single_lane, "ENABLED", enabled)
            out.append(_run_all(startprob, transmat, table, Sequences.from_lengths(lengths)))
        for a, b in zip(*out, strict=True):
            np.testing.assert_array_equal(a, b)
    assert (len(reruns) > 0) == (max(lengths) > 2000 and K > 1)


def _plan_by_hand(lengths, segment, warmup, only, fill):
    """LanePlan.build's entries from their definition: sequences (or their segments of at
    most ``segment`` rows, each further one starting ``warmup`` rows early) sorted by
    decreasing length, stable, padded to blocks of 8 with empty entries. Before padding,
    with ``fill``, a sequence already in segments whose segments are the longest (the first
    such sequence on ties) is cut into one more, while the entries do not fill whole blocks
    and those segments are longer than ``2 * warmup``."""
    parts = [0 if only is not None and not only[s] else
             1 if segment is None else max(1, -(-n // segment)) for s, n in enumerate(lengths)]
    while fill and segment is not None and sum(parts) % 8:
        split = [(n // k, -s) for s, (n, k) in enumerate(zip(lengths, parts, strict=True))
                 if k > 1]
        if not split or max(split)[0] <= 2 * warmup:
            break
        parts[-max(split)[1]] += 1
    entries, start = [], 0
    for s, n in enumerate(lengths):
        k = parts[s]
        if k:
            for m in range(k):
                lo, end = start + m * n // k, start + (m + 1) * n // k
                first = max(lo - warmup, start) if m else lo
                entries.append((first, lo, end, int(m > 0), s, m))
        start += n
    entries.sort(key=lambda e: e[0] - e[2])  # stable: ties keep the sequence order
    entries += [(0, 0, 0, 0, -1, 0)] * (-len(entries) % 8)
    return [np.array([e[i] for e in entries], dtype=np.int64) for i in range(6)]


def test_lane_plans_are_what_their_definition_says():
    rng = np.random.default_rng(4)
    for _ in range(300):
        lengths = rng.integers(1, rng.choice([5, 100, 5000]), rng.integers(1, 40))
        segment = rng.choice([None, 7, 1000])
        warmup = int(rng.integers(0, 300))
        only = None if rng.random() < 0.5 else rng.random(len(lengths)) < 0.5
        fill = bool(rng.random() < 0.5)
        plan = LanePlan.build(Sequences.from_lengths(lengths).bounds, segment, warmup, only,
                              fill)
        want = _plan_by_hand(lengths, segment, warmup, only, fill)
        got = [plan.first, plan.lo, plan.end, plan.init, plan.seq, plan.part]
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
        blocks = (plan.end - plan.first).reshape(-1, 8).max(axis=1)
        np.testing.assert_array_equal(plan.chunks, chunk_bounds(blocks))


@pytest.mark.parametrize("priors", [(0.0, 0.0, 0.0, 1.0), (0.5, 2.0, 0.3, 3.5)])
@pytest.mark.parametrize("which", ["mc", "m", "c"])
def test_gaussian_diag_mstep_kernel_matches_numpy_path(priors, which):
    """The compiled diagonal M-step (``GaussianEmissions._diag_mstep``) against the general
    NumPy path, bit for bit: a dead state (no mass), a state without any posterior, a state
    whose variance is floored, data far from the reference point."""
    from hiddenstate.families import GaussianEmissions

    rng = np.random.default_rng(7)
    K, D, N = 6, 3, 400
    X = rng.normal(size=(N, D)) * np.array([1e-3, 1.0, 50.0]) + 3.0
    post = rng.random((N, K))
    post[:, 1] = 0.0          # no mass at all
    post[:, 2] = 1e-300       # dead: below DEAD_MASS once summed... and kept
    post[:, 3] *= 1e-6        # little mass
    post /= post.sum(axis=1, keepdims=True)
    mp, mw, cp, cw = priors
    family = GaussianEmissions(K, D, "diag", min_covar=1e-3, means_prior=mp, means_weight=mw,
                               covars_prior=cp, covars_weight=cw)
    params = {"means": rng.normal(size=(K, D)), "covars": rng.random((K, D)) + 0.5}
    stats = family.statistics(X, post)
    stats["post"][2] = 1e-295  # below DEAD_MASS (1e-290)
    fast, flagged = family._diag_mstep(params, stats, which)
    slow, expected = family._mstep(params, stats, which)
    assert flagged == expected and 2 in flagged
    if which == "mc" and cp == 0:  # column 0's variance (1e-6) is floored
        assert flagged == list(range(K))
    for key in ("means", "covars"):
        assert fast[key].tobytes() == slow[key].tobytes()
    assert family.mstep(params, stats, which)[0]["covars"].tobytes() == slow["covars"].tobytes()


def test_gaussian_cancelling_check_matches_numpy():
    """The compiled test of ``_resum_cancelling`` against its NumPy expression."""
    from hiddenstate.families.base import DEAD_MASS
    from hiddenstate.kernels import gaussian_diag_cancelling

    rng = np.random.default_rng(3)
    n = np.array([0.0, 1e-300, 2.0, 5.0, 7.0])
    s1 = rng.normal(size=(5, 4)) * np.array([1.0, 1e4, 1e-4, 3.0])
    s2 = s1 * s1 / n[:, None].clip(1.0) + rng.random((5, 4)) * np.array([1, 1e-6, 1, 1e-9])
    redo = np.empty((5, 4), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean, raw = s1 / n[:, None], s2 / n[:, None]
        expected = (n[:, None] >= DEAD_MASS) & (raw > 1e6 * (raw - mean * mean))
    assert gaussian_diag_cancelling(n, s1, s2, DEAD_MASS, 1e6, redo) == expected.any()
    np.testing.assert_array_equal(redo, expected)
    assert expected.any() and not expected.all()


@pytest.mark.parametrize("covariance_type", ["diag", "spherical", "full"])
def test_emission_table_rows_by_table_match_log_likelihood(covariance_type):
    """``emission_table`` rebuilds the rows whose support differs (zeros in startprob and
    transmat; a periodic chain) with ``family.table`` per support for the Gaussian family
    (``table_rows_exact``): the same numbers as from ``log_likelihood``, bit for bit, and
    states far out of reach do not underflow the possible ones."""
    from hiddenstate.families import GaussianEmissions

    rng = np.random.default_rng(11)
    K, D = 4, 2
    family = GaussianEmissions(K, D, covariance_type)
    params = {"means": rng.normal(scale=40.0, size=(K, D)),
              "covars": {"diag": np.full((K, D), 0.5), "spherical": np.full(K, 0.5),
                         "full": np.tile(np.eye(D) * 0.5, (K, 1, 1))}[covariance_type]}
    X = rng.normal(scale=40.0, size=(60, D))
    seqs = Sequences.from_lengths([1, 25, 3, 31])
    startprob = np.array([1.0, 0.0, 0.0, 0.0])
    chains = [np.array([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0], [0, 0, 0.5, 0.5], [0, 0, 0, 1.0]]),
              np.array([[0, 1.0, 0, 0], [0, 0, 1.0, 0], [1.0, 0, 0, 0], [0, 0, 0, 1.0]]),
              random_stochastic(rng, (K, K))]
    for transmat in chains:
        fast = inference.emission_table(family, params, X, startprob, transmat, seqs)
        family.table_rows_exact = False
        slow = inference.emission_table(family, params, X, startprob, transmat, seqs)
        del family.table_rows_exact
        assert fast.emis.tobytes() == slow.emis.tobytes()
        assert fast.log_offset.tobytes() == slow.log_offset.tobytes()
        assert (fast.emis.max(axis=1) > 0).all()


@pytest.mark.parametrize("K", [1, 2, 5])
def test_steady_steps_of_a_full_block_match_a_lane_alone(K):
    """Nine sequences: the first block's 8 lanes run their common steps on the steady path
    (``_steady_steps``: no per-lane bookkeeping, the scales' products as one vector); each
    sequence scored, decoded and smoothed alone (the one-lane kernels) gives the same
    numbers, bit for bit, with scales that leave ``[TINY, HUGE]`` every few steps (the
    lane-by-lane fold) and an impossible stretch in one sequence."""
    rng = np.random.default_rng(21 + K)
    lengths = [900, 850, 800, 790, 700, 640, 600, 520, 37]
    N = sum(lengths)
    startprob, transmat, _, cat = _long_case(N, seed=K, K=K)
    log_e = rng.normal(size=(N, K)) * 40 - 60  # scales of e^-60: a fold every few steps
    log_e[1000:1004] = -np.inf  # inside the second sequence: impossible
    dense = EmissionTable(np.exp(log_e), np.arange(N, dtype=np.int64), None, False)
    seqs = Sequences.from_lengths(lengths)
    for table in (cat, dense):
        together = (inference.log_likelihood(startprob, transmat, table, seqs),
                    *inference.viterbi(startprob, transmat, table, seqs))
        post = inference.forward_backward(startprob, transmat, EmissionTable(
            table.emis, table.idx, table.log_offset, False), seqs)
        for s, (a, b) in enumerate(zip(seqs.bounds[:-1], seqs.bounds[1:], strict=True)):
            one = Sequences.from_lengths([b - a])
            part = EmissionTable(table.emis, np.ascontiguousarray(table.idx[a:b]), None,
                                 table.by_idx)
            alone = (inference.log_likelihood(startprob, transmat, part, one),
                     *inference.viterbi(startprob, transmat, part, one))
            assert together[0][s].tobytes() == alone[0][0].tobytes()
            assert together[1][s].tobytes() == alone[1][0].tobytes()
            np.testing.assert_array_equal(together[2][a:b], alone[2])
            fb = inference.forward_backward(startprob, transmat, EmissionTable(
                part.emis, part.idx, None, False), one)
            assert post.loglik[s].tobytes() == fb.loglik[0].tobytes()
            assert post.post[a:b].tobytes() == fb.post.tobytes()
        assert np.isneginf(together[0][1]) != table.by_idx and np.isfinite(together[0][0])
