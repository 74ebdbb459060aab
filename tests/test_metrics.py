"""hiddenstate.metrics: exact KL against enumeration of sequences and state paths, the
divergence rate against closed forms and the exact KL, perplexity and tagging scores."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from brute_force import path_log_joint
from scipy.stats import entropy

from hiddenstate import HMM, InvalidInputError, metrics
from hiddenstate.errors import ConvergenceWarning


def categorical(startprob, transmat, emissionprob) -> HMM:
    m = HMM(len(startprob), init_params="")
    m.startprob_ = np.asarray(startprob, dtype=float)
    m.transmat_ = np.asarray(transmat, dtype=float)
    m.emissionprob_ = np.asarray(emissionprob, dtype=float)
    m.n_features_ = m.emissionprob_.shape[1]
    return m


def random_params(rng, K, W, sparse=False):
    """Random (startprob, transmat, emissionprob); with ``sparse`` about a third of the
    entries are zero (every row keeps at least one non-zero entry)."""
    def rows(n, m):
        x = rng.dirichlet(np.ones(m), size=n)
        if sparse:
            x = np.where(rng.random((n, m)) < 0.35, 0.0, x)
            x[np.arange(n), rng.integers(0, m, size=n)] += 0.1
            x /= x.sum(axis=1, keepdims=True)
        return x
    return rows(1, K)[0], rows(K, K), rows(K, W)


def brute_log_prob(params, x) -> float:
    """log p(x) by summing p(x, z) over every state path z (tests/brute_force.py)."""
    startprob, transmat, emissionprob = (np.asarray(a, dtype=float) for a in params)
    with np.errstate(divide="ignore"):
        log_e = np.log(emissionprob[:, list(x)].T)
    _, lp = path_log_joint(startprob, transmat, log_e)
    m = lp.max()
    return -math.inf if m == -np.inf else float(m + np.log(np.exp(lp - m).sum()))


def brute_kl(p, q, W, T) -> float:
    """The definition, one sequence at a time: sum_x p(x) log p(x)/q(x)."""
    total = 0.0
    for x in itertools.product(range(W), repeat=T):
        lp, lq = brute_log_prob(p, x), brute_log_prob(q, x)
        if lp == -math.inf:
            continue
        if lq == -math.inf:
            return math.inf
        total += math.exp(lp) * (lp - lq)
    return total


# -- exact KL ------------------------------------------------------------------------------------
CASES = [(Kp, Kq, W, T) for Kp in (1, 2, 3) for Kq in (1, 3) for W in (2, 3) for T in (1, 2, 4)]


@pytest.mark.parametrize("Kp,Kq,W,T", CASES)
def test_kl_matches_enumeration(Kp, Kq, W, T):
    rng = np.random.default_rng(1000 * Kp + 100 * Kq + 10 * W + T)
    p, q = random_params(rng, Kp, W), random_params(rng, Kq, W)
    expected = brute_kl(p, q, W, T)
    assert metrics.kl_divergence(p, q, T) == pytest.approx(expected, rel=0, abs=1e-12)
    assert metrics.kl_divergence(categorical(*p), categorical(*q), T) == pytest.approx(
        expected, rel=0, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_kl_with_zero_probabilities_matches_enumeration(seed):
    # sparse teacher: some sequences have p(x) = 0 (their terms are 0); the student is
    # dense, so q(x) > 0 everywhere and the divergence is finite
    rng = np.random.default_rng(seed)
    startprob, transmat, emissionprob = random_params(rng, 3, 3, sparse=True)
    # only state 2 emits symbol 2 and the chain never starts there: x_0 = 2 is impossible
    startprob[2] = 0.0
    startprob[0] += 0.1
    emissionprob[:2, 2] = 0.0
    emissionprob[:2, 0] += 0.1
    p = (startprob / startprob.sum(), transmat, emissionprob / emissionprob.sum(1)[:, None])
    q = random_params(rng, 2, 3)
    x_zero = [x for x in itertools.product(range(3), repeat=3)
              if brute_log_prob(p, x) == -math.inf]
    assert x_zero, "the test needs sequences that p cannot produce"
    expected = brute_kl(p, q, 3, 3)
    assert np.isfinite(expected)
    assert metrics.kl_divergence(p, q, 3) == pytest.approx(expected, rel=0, abs=1e-12)


def test_kl_infinite_when_q_cannot_produce_what_p_can():
    p = ([0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]], [[0.6, 0.3, 0.1], [0.1, 0.1, 0.8]])
    q = ([0.5, 0.5], [[0.5, 0.5], [0.5, 0.5]], [[0.5, 0.5, 0.0], [0.3, 0.7, 0.0]])
    assert brute_kl(p, q, 3, 2) == math.inf
    assert metrics.kl_divergence(p, q, 2) == math.inf
    # the other way round every q-sequence is possible under p: finite, matches enumeration
    assert metrics.kl_divergence(q, p, 2) == pytest.approx(brute_kl(q, p, 3, 2), abs=1e-12)


def test_kl_of_a_model_to_itself_is_exactly_zero():
    rng = np.random.default_rng(3)
    for K, W, T in [(1, 2, 3), (2, 3, 2), (3, 3, 4), (4, 5, 5)]:
        p = random_params(rng, K, W)
        assert metrics.kl_divergence(p, p, T) == 0.0


def test_kl_is_nonnegative_on_random_pairs():
    rng = np.random.default_rng(4)
    for _ in range(40):
        W, T = int(rng.integers(2, 5)), int(rng.integers(1, 6))
        p = random_params(rng, int(rng.integers(1, 4)), W, sparse=bool(rng.integers(2)))
        q = random_params(rng, int(rng.integers(1, 4)), W)
        assert metrics.kl_divergence(p, q, T) >= 0.0


def test_kl_for_T1_is_the_kl_between_the_symbol_marginals():
    # Alamino & Caticha's teacher size: 2 states, 3 symbols
    rng = np.random.default_rng(5)
    p, q = random_params(rng, 2, 3), random_params(rng, 2, 3)
    marg_p, marg_q = p[0] @ p[2], q[0] @ q[2]
    assert metrics.kl_divergence(p, q, 1) == pytest.approx(entropy(marg_p, marg_q), abs=1e-14)


def test_kl_is_additive_for_iid_sequences():
    # state-independent emissions: x_t i.i.d., so D_T = T * KL(b || b')
    b, b2 = np.array([0.2, 0.5, 0.3]), np.array([0.4, 0.4, 0.2])
    p = ([0.3, 0.7], [[0.6, 0.4], [0.1, 0.9]], np.stack([b, b]))
    q = ([1.0], [[1.0]], b2[None])
    for T in (1, 3, 6):
        assert metrics.kl_divergence(p, q, T) == pytest.approx(T * entropy(b, b2), rel=1e-13)
        assert metrics.kl_divergence_per_step(p, q, T) == pytest.approx(entropy(b, b2),
                                                                        rel=1e-13)


def test_kl_batches_give_the_same_sum(monkeypatch):
    rng = np.random.default_rng(6)
    p, q = random_params(rng, 3, 3), random_params(rng, 2, 3)
    whole = metrics.kl_divergence(p, q, 6)
    monkeypatch.setattr(metrics, "_BATCH_ROWS", 6 * 50)  # 729 sequences in 15 batches
    assert metrics.kl_divergence(p, q, 6) == pytest.approx(whole, rel=1e-14)


def test_kl_refuses_too_many_sequences_and_bad_input():
    rng = np.random.default_rng(7)
    p, q = random_params(rng, 2, 4), random_params(rng, 2, 4)
    with pytest.raises(InvalidInputError, match=r"T: .*4\*\*11.*max_sequences=1048576"):
        metrics.kl_divergence(p, q, 11)
    with pytest.raises(InvalidInputError, match=r"T: .*max_sequences=100"):
        metrics.kl_divergence(p, q, 4, max_sequences=100)
    assert metrics.kl_divergence(p, q, 4, max_sequences=256) > 0
    with pytest.raises(InvalidInputError, match="q: has 3 symbols but p has 4"):
        metrics.kl_divergence(p, random_params(rng, 2, 3), 2)
    with pytest.raises(InvalidInputError, match="T: expected an integer >= 1"):
        metrics.kl_divergence(p, q, 0)
    with pytest.raises(InvalidInputError, match="q.transmat"):
        metrics.kl_divergence(p, (q[0], q[1] * 2, q[2]), 2)
    gauss = HMM(2, emission="gaussian")
    with pytest.raises(InvalidInputError, match="p: .*categorical.*divergence_rate"):
        metrics.kl_divergence(gauss, q, 2)
    with pytest.raises(InvalidInputError, match="q: has no startprob_"):
        metrics.kl_divergence(p, HMM(2), 2)


# -- divergence rate -------------------------------------------------------------------------
def iid_pair():
    """Teacher and student whose sequences are i.i.d. (state-independent emissions), with
    different transition structures: the rate is KL(b || b2) in closed form."""
    b, b2 = np.array([0.2, 0.5, 0.3]), np.array([0.4, 0.4, 0.2])
    teacher = categorical([0.3, 0.7], [[0.6, 0.4], [0.1, 0.9]], np.stack([b, b]))
    student = categorical([0.2, 0.3, 0.5], np.full((3, 3), 1 / 3), np.stack([b2, b2, b2]))
    return teacher, student, b, b2


def test_divergence_rate_of_iid_models_is_the_emission_kl():
    teacher, student, b, b2 = iid_pair()
    truth = entropy(b, b2)
    r = metrics.divergence_rate(teacher, student, random_state=0)
    assert r.converged
    assert abs(r.value - truth) <= 4 * r.stderr
    T, m, s = r.history[-1]
    assert T == r.length and s <= 0.02 * m  # the rule's noise condition
    assert r.value != m  # the reported estimate is a fresh replicate
    # the reported standard error is honest: sd(log b/b2 under b) / sqrt(n T)
    log_ratio = np.log(b / b2)
    sd = math.sqrt(b @ log_ratio**2 - (b @ log_ratio) ** 2)
    assert 0.6 < r.stderr / (sd / math.sqrt(r.n_sequences * r.length)) < 1.6
    assert [h[0] for h in r.history] == [128 * 2**j for j in range(len(r.history))]


def test_divergence_rate_of_gaussian_models_in_closed_form():
    # any emission family: i.i.d. N(0, 1) vs N(mu, s^2); KL = log s + (1 + mu^2)/(2 s^2) - 1/2
    mu, s = 0.5, 1.5
    teacher = HMM(2, emission="gaussian", covariance_type="diag", init_params="")
    teacher.startprob_ = np.array([0.5, 0.5])
    teacher.transmat_ = np.array([[0.8, 0.2], [0.3, 0.7]])
    teacher.means_ = np.zeros((2, 1))
    teacher.covars_ = np.ones((2, 1))
    teacher.n_features_ = 1
    student = HMM(1, emission="gaussian", covariance_type="diag", init_params="")
    student.startprob_, student.transmat_ = np.ones(1), np.ones((1, 1))
    student.means_ = np.full((1, 1), mu)
    student.covars_ = np.full((1, 1), s**2)
    student.n_features_ = 1
    truth = math.log(s) + (1 + mu**2) / (2 * s**2) - 0.5
    r = metrics.divergence_rate(teacher, student, random_state=1)
    assert r.converged
    assert abs(r.value - truth) <= 4 * r.stderr


def test_divergence_rate_of_a_model_to_itself_is_zero():
    rng = np.random.default_rng(8)
    p = categorical(*random_params(rng, 3, 4))
    r = metrics.divergence_rate(p, p, random_state=0)
    assert (r.value, r.stderr, r.converged, r.length) == (0.0, 0.0, True, 256)


def test_exact_kl_per_step_approaches_the_sampled_rate():
    p = categorical([0.6, 0.4], [[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    q = categorical([0.5, 0.5], [[0.7, 0.3], [0.3, 0.7]], [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]])
    kl = np.array([metrics.kl_divergence(p, q, T) for T in range(1, 11)])
    # D_T = T D + c + o(1). The increments D_T - D_{T-1} tend to D geometrically (ratio 0.7,
    # the second eigenvalue of the chains), so Aitken's delta-squared extrapolation of the
    # last three increments gives D accurately from T <= 10.
    inc = np.diff(kl)

    def aitken(a, b, c):
        return c - (c - b) ** 2 / ((c - b) - (b - a))

    rate = aitken(*inc[-3:])
    assert abs(aitken(*inc[-4:-1]) - rate) < 5e-4 * rate
    # D_T / T approaches it monotonically here, with the O(1/T) gap
    gap = np.abs(kl / np.arange(1, 11) - rate)
    assert np.all(np.diff(gap) < 0)
    assert gap[-1] > 0.05 * rate  # ... and is still far off at T = 10: sampling is needed
    r = metrics.divergence_rate(p, q, rtol=0.01, random_state=2)
    assert r.converged
    assert abs(r.value - rate) <= 4 * r.stderr
    assert abs(r.value - rate) < 3 * 0.01 * rate  # rtol = 1%, 3 standard errors


def test_divergence_rate_is_reproducible_and_accepts_tuples():
    teacher, student, _, _ = iid_pair()
    a = metrics.divergence_rate(teacher, student, max_length=1024, rtol=0.1, random_state=5)
    b = metrics.divergence_rate(teacher, student, max_length=1024, rtol=0.1, random_state=5)
    c = metrics.divergence_rate(teacher, student, max_length=1024, rtol=0.1, random_state=6)
    assert a == b
    assert a.value != c.value
    as_tuple = (student.startprob_, student.transmat_, student.emissionprob_)
    d = metrics.divergence_rate(teacher, as_tuple, max_length=1024, rtol=0.1, random_state=5)
    assert d == a


def test_divergence_rate_warns_when_it_does_not_converge():
    teacher, student, _, _ = iid_pair()
    with pytest.warns(ConvergenceWarning, match="max_length=512"):
        r = metrics.divergence_rate(teacher, student, rtol=1e-4, max_length=512,
                                    random_state=0)
    assert not r.converged
    assert [h[0] for h in r.history] == [128, 256, 512]
    assert r.length == 512


def test_divergence_rate_is_infinite_when_the_student_cannot_emit_a_symbol():
    teacher, _, _, _ = iid_pair()
    student = categorical([1.0], [[1.0]], [[0.5, 0.5, 0.0]])
    r = metrics.divergence_rate(teacher, student, random_state=0)
    assert r.value == math.inf and r.converged and r.length == 128


def test_divergence_rate_rejects_bad_arguments():
    teacher, student, _, _ = iid_pair()
    with pytest.raises(InvalidInputError, match="max_length"):
        metrics.divergence_rate(teacher, student, length=128, max_length=200)
    with pytest.raises(InvalidInputError, match="n_sequences"):
        metrics.divergence_rate(teacher, student, n_sequences=1)
    with pytest.raises(InvalidInputError, match="rtol"):
        metrics.divergence_rate(teacher, student, rtol=-1)
    with pytest.raises(InvalidInputError, match="student: has n_features_=2"):
        metrics.divergence_rate(teacher, categorical([1.0], [[1.0]], [[0.5, 0.5]]))
    gauss = HMM(1, emission="gaussian", init_params="")
    gauss.startprob_, gauss.transmat_ = np.ones(1), np.ones((1, 1))
    gauss.means_, gauss.covars_, gauss.n_features_ = np.zeros((1, 3)), np.ones((1, 3)), 3
    with pytest.raises(InvalidInputError, match="student: has emission='gaussian'"):
        metrics.divergence_rate(teacher, gauss)
    with pytest.raises(InvalidInputError, match="teacher: expected a hiddenstate.HMM"):
        metrics.divergence_rate(object(), student)


def test_symmetric_divergence_rate():
    teacher, student, b, b2 = iid_pair()
    r = metrics.symmetric_divergence_rate(teacher, student, random_state=3)
    ab, ba = r.components
    assert r.value == (ab.value + ba.value) / 2
    assert r.stderr == pytest.approx(math.hypot(ab.stderr, ba.stderr) / 2)
    assert r.converged == (ab.converged and ba.converged)
    truth = (entropy(b, b2) + entropy(b2, b)) / 2
    assert abs(r.value - truth) <= 4 * r.stderr
    assert metrics.symmetric_divergence_rate(teacher, student, random_state=3) == r


# -- perplexity ------------------------------------------------------------------------------
def test_perplexity_is_exp_of_minus_score_per_observation():
    rng = np.random.default_rng(9)
    m = categorical(*random_params(rng, 3, 5))
    X = rng.integers(0, 5, size=(70, 1))
    lengths = [30, 25, 15]
    assert metrics.perplexity(m, X, lengths) == pytest.approx(
        math.exp(-m.score(X, lengths) / 70), rel=1e-14)
    uniform = categorical([1.0], [[1.0]], np.full((1, 5), 0.2))
    assert metrics.perplexity(uniform, X, lengths) == pytest.approx(5.0, rel=1e-13)
    with pytest.raises(InvalidInputError, match="X: no observations"):
        metrics.perplexity(m, np.zeros((0, 1), dtype=int))


# -- tagging scores --------------------------------------------------------------------------
def test_tagging_accuracy_is_one_under_any_relabelling():
    rng = np.random.default_rng(10)
    true = rng.integers(0, 4, size=200)
    for perm in itertools.permutations(range(4)):
        pred = np.array(perm)[true] + 10  # other label values too
        assert metrics.tagging_accuracy(true, pred) == 1.0
        assert metrics.tagging_accuracy(true, pred, "many-to-one") == 1.0
        assert metrics.variation_of_information(true, pred) == 0.0
        np.testing.assert_array_equal(metrics.relabel(true, pred), true)
    assert metrics.tagging_accuracy(true, true + 10, "identity") == 0.0


def test_tagging_accuracy_on_a_hand_computed_example():
    true = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2])
    pred = np.array(["a", "a", "a", "b", "b", "b", "a", "c", "c", "a"])
    # contingency rows 0,1,2 x cols a,b,c: [[3,1,0],[1,2,0],[1,0,2]]
    assert metrics.tagging_accuracy(true, pred) == pytest.approx(0.7)  # a->0, b->1, c->2
    assert metrics.tagging_accuracy(true, pred, "many-to-one") == pytest.approx(0.7)
    # two predicted states merge true states 0 and 1: one-to-one loses, many-to-one does not
    true2 = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    pred2 = np.array([5, 5, 5, 5, 7, 7, 8, 8])
    # contingency rows 0,1,2 x cols 5,7,8: [[2,0,0],[2,0,0],[0,2,2]]
    assert metrics.tagging_accuracy(true2, pred2) == pytest.approx(4 / 8)
    assert metrics.tagging_accuracy(true2, pred2, "many-to-one") == pytest.approx(6 / 8)
    np.testing.assert_array_equal(metrics.relabel(true2, pred2, "many-to-one"),
                                  [0, 0, 0, 0, 2, 2, 2, 2])
    # more predicted than true states: one predicted state is left unmatched -> fill
    true3 = np.array([0, 0, 0, 1, 1, 1])
    pred3 = np.array([4, 4, 6, 5, 5, 5])
    assert metrics.tagging_accuracy(true3, pred3) == pytest.approx(5 / 6)
    np.testing.assert_array_equal(metrics.relabel(true3, pred3), [0, 0, -1, 1, 1, 1])
    np.testing.assert_array_equal(metrics.relabel(true3, pred3, fill=9), [0, 0, 9, 1, 1, 1])
    with pytest.raises(InvalidInputError, match="predicted_states: has 3 labels"):
        metrics.tagging_accuracy([0, 1], [0, 1, 1])
    with pytest.raises(InvalidInputError, match="mapping"):
        metrics.tagging_accuracy([0, 1], [0, 1], "best")


@pytest.mark.parametrize("seed", range(5))
def test_one_to_one_accuracy_is_the_best_permutation(seed):
    rng = np.random.default_rng(seed)
    true = rng.integers(0, 4, size=60)
    pred = np.where(rng.random(60) < 0.6, (true + 1) % 4, rng.integers(0, 4, size=60))
    best = max(np.mean(np.array(perm)[pred] == true) for perm in itertools.permutations(range(4)))
    assert metrics.tagging_accuracy(true, pred) == pytest.approx(best, abs=1e-15)
    many = sum(np.bincount(true[pred == j]).max() for j in np.unique(pred)) / 60
    assert metrics.tagging_accuracy(true, pred, "many-to-one") == pytest.approx(many)


def test_variation_of_information_against_entropies():
    rng = np.random.default_rng(11)
    true, pred = rng.integers(0, 3, size=500), rng.integers(0, 5, size=500)
    joint = np.zeros((3, 5))
    np.add.at(joint, (true, pred), 1.0)
    joint /= joint.sum()
    h = lambda p: -np.sum(p[p > 0] * np.log(p[p > 0]))  # noqa: E731
    mutual = h(joint.sum(1)) + h(joint.sum(0)) - h(joint.ravel())
    expected = h(joint.sum(1)) + h(joint.sum(0)) - 2 * mutual
    assert metrics.variation_of_information(true, pred) == pytest.approx(expected, rel=1e-12)
    # two independent fair bits: VI = H(T) + H(P) = 2 log 2
    assert metrics.variation_of_information([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(
        2 * math.log(2))
