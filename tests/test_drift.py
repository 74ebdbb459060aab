"""Drifting teachers (hiddenstate.drift): stochastic rows, jump times, step size, seeding,
the distribution of the sampled data, and a constant-step learner tracking a jump."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

import hiddenstate as hs
from hiddenstate.drift import JumpingTeacher, RandomWalkTeacher, sample_sequences
from hiddenstate.errors import InvalidInputError
from hiddenstate.metrics import kl_divergence


def _teacher(B=((0.7, 0.2, 0.1), (0.1, 0.2, 0.7)), A=((0.9, 0.1), (0.2, 0.8)), pi=(0.6, 0.4)):
    return np.array(pi, float), np.array(A, float), np.array(B, float)


def _random_teacher(rng, K=2, W=3):
    return rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K), K), rng.dirichlet(np.ones(W), K)


def _same(p, q) -> bool:
    return all(np.array_equal(a, b) for a, b in zip(p, q, strict=True))


def _sequence_probs(params, T: int) -> np.ndarray:
    """p(x) of every sequence of length T, in lexicographic order (exact enumeration)."""
    W = params[2].shape[1]
    X = np.array(list(itertools.product(range(W), repeat=T))).reshape(-1, 1)
    model = RandomWalkTeacher(params, step=0.0).current  # an HMM with these parameters
    return np.exp(model.score_samples(X, np.full(W**T, T)))


def _sequence_counts(X, T: int, W: int) -> np.ndarray:
    codes = X.reshape(-1, T) @ (W ** np.arange(T - 1, -1, -1))
    return np.bincount(codes, minlength=W**T)


# -- rows stay stochastic --------------------------------------------------------------------
def test_random_walk_rows_stay_stochastic_and_zeros_stay_zero():
    pi, A, B = _teacher(B=((0.7, 0.3, 0.0), (0.1, 0.2, 0.7)))  # a structural zero
    source = RandomWalkTeacher((pi, A, B), step=0.3, random_state=0)
    for _ in range(3):  # 3 x 500 large steps
        _, _, path = source.sample(500, T=2, return_teachers=True)
        for block in (path.startprob, path.transmat, path.emissionprob):
            np.testing.assert_allclose(block.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
        assert np.all(path.startprob > 0) and np.all(path.transmat > 0)
        assert np.all(path.emissionprob[:, 0, 2] == 0.0)  # the zero stays exactly zero
        positive = np.ones_like(B, dtype=bool)
        positive[0, 2] = False
        assert np.all(path.emissionprob[:, positive] > 0)
    # the walk went somewhere: far from the start after 1500 steps of 0.3
    assert np.abs(source.params[1] - A).max() > 0.05


# -- a jumping teacher changes exactly at multiples of N ------------------------------------
def test_jumping_teacher_changes_exactly_at_multiples_of_every():
    N = 7
    source = JumpingTeacher(_random_teacher, every=N, random_state=1)
    first = source.params
    seen = [first]
    for _ in range(4 * N + 3):  # one sequence at a time
        source.sample(1, T=3)
        seen.append(source.params)
    assert _same(seen[0], seen[1])  # before any sequence: the teacher of sequence 0
    # seen[i] (i >= 1) is the teacher of sequence i - 1: it changes from sequence kN - 1 to kN
    changes = [i - 1 for i in range(2, len(seen)) if not _same(seen[i], seen[i - 1])]
    assert changes == [N, 2 * N, 3 * N, 4 * N]
    assert source.epoch == 4 and source.n_seen == 4 * N + 3

    # within one block, as the returned path shows
    block_source = JumpingTeacher(_random_teacher, every=N, random_state=1)
    _, _, path = block_source.sample(4 * N + 3, T=3, return_teachers=True)
    assert np.array_equal(path.index, np.arange(4 * N + 3) // N)
    switched = [i for i in range(1, len(path)) if not _same(path[i], path[i - 1])]
    assert switched == [N, 2 * N, 3 * N, 4 * N]
    assert _same(path[len(path) - 1], block_source.params)


def test_jumping_teacher_from_a_list():
    teachers = [_teacher(), _teacher(B=((0.1, 0.8, 0.1), (0.45, 0.1, 0.45)))]
    source = JumpingTeacher(teachers, every=5, random_state=0)
    _, _, path = source.sample(10, T=2, return_teachers=True)
    assert _same(path[4], teachers[0]) and _same(path[5], teachers[1])
    assert _same(source.params, teachers[1])
    with pytest.raises(InvalidInputError, match="^n: .*only 2 teachers"):
        source.sample(1, T=2)


# -- the random-walk step has the requested size -------------------------------------------
@pytest.mark.parametrize("step", [0.02, 0.2])
def test_random_walk_step_size_matches_sigma(step):
    """One step moves the centred log-probabilities of a row with n positive entries by
    sigma (xi - mean xi): E ||dc||^2 = sigma^2 (n - 1), Var = 2 sigma^4 (n - 1); summed over
    the rows of one step, independent from step to step."""
    rng = np.random.default_rng(5)
    K, W = 3, 5
    B = rng.dirichlet(np.ones(W), K)
    B[1, 3] = 0.0  # a zero entry does not move and does not count
    B /= B.sum(axis=1, keepdims=True)
    start = (rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K), K), B)
    source = RandomWalkTeacher(start, step=step, random_state=6)
    M = 4000
    _, _, path = source.sample(M, T=1, return_teachers=True)
    sq = np.zeros(M)
    dof = 0
    for before0, block in zip(start, (path.startprob, path.transmat, path.emissionprob),
                              strict=True):
        rows = np.concatenate([before0[None], block]).reshape(M + 1, -1, block.shape[-1])
        positive = rows[0] > 0
        with np.errstate(divide="ignore"):
            logp = np.where(positive, np.log(rows), 0.0)
        n_pos = positive.sum(axis=-1)
        centred = np.where(positive, logp - logp.sum(axis=-1, keepdims=True) / n_pos[:, None],
                           0.0)
        sq += (np.diff(centred, axis=0) ** 2).sum(axis=(1, 2))
        dof += int((n_pos - 1).sum())
    expected = step**2 * dof
    stderr = np.sqrt(2 * step**4 * dof / M)
    assert abs(sq.mean() - expected) < 5 * stderr, (sq.mean(), expected, stderr)


# -- seeding ----------------------------------------------------------------------------------
def test_same_seed_same_stream_different_seed_different_stream():
    def run(cls, seed):
        source = (JumpingTeacher(_random_teacher, every=30, random_state=seed) if cls == "jump"
                  else RandomWalkTeacher(_teacher(), step=0.1, random_state=seed))
        out = [source.sample(40, T=5) for _ in range(3)]
        return np.concatenate([X for X, _ in out]), source.params

    for cls in ("jump", "walk"):
        X1, p1 = run(cls, 3)
        X2, p2 = run(cls, 3)
        X3, p3 = run(cls, 4)
        assert np.array_equal(X1, X2) and _same(p1, p2)
        assert not np.array_equal(X1, X3) and not _same(p1, p3)
    # a Generator is used as is: sampling the same draws from it in one go or in two is
    # the same stream only when the calls are the same
    a, b = (np.random.default_rng(9) for _ in range(2))
    Xa, _ = sample_sequences(_teacher(), 50, 4, a)
    Xb, _ = sample_sequences(_teacher(), 50, 4, b)
    assert np.array_equal(Xa, Xb) and a.random() == b.random()


# -- the data have the current teacher's distribution ---------------------------------------
def test_static_and_jumping_data_have_the_teachers_sequence_distribution():
    T = 2
    t0 = _teacher()
    t1 = _teacher(B=((0.1, 0.8, 0.1), (0.45, 0.1, 0.45)), A=((0.5, 0.5), (0.7, 0.3)))
    n = 20_000
    X, lengths = sample_sequences(t0, n, T, random_state=2)
    assert X.shape == (n * T, 1) and X.dtype == np.int64 and np.all(lengths == T)
    p0 = _sequence_probs(t0, T)
    assert chisquare(_sequence_counts(X, T, 3), n * p0).pvalue > 1e-3

    source = JumpingTeacher([t0, t1], every=n, random_state=3)
    X, _ = source.sample(2 * n, T)
    second = X[n * T:]  # the second teacher's epoch, the current teacher afterwards
    counts = _sequence_counts(second, T, 3)
    p1 = _sequence_probs(source.params, T)
    assert chisquare(counts, n * p1).pvalue > 1e-3
    assert chisquare(counts, n * p0).pvalue < 1e-12  # the test can tell the teachers apart


def test_random_walk_data_follow_each_sequences_teacher():
    """Under a fast walk the teachers of the sequences differ; the counts match the sum of
    their distributions (a sum of independent categorical draws: the chi-square test is
    conservative), not the first or the last teacher's."""
    T, n = 2, 20_000
    source = RandomWalkTeacher(_teacher(), step=0.05, random_state=4)
    X, _, path = source.sample(n, T, return_teachers=True)
    counts = _sequence_counts(X, T, 3)
    probs = np.array([_sequence_probs(path[i], T) for i in range(0, n, 50)])
    expected = n * probs.mean(axis=0)  # every 50th teacher: the walk moves little in 50
    assert chisquare(counts, expected * counts.sum() / expected.sum()).pvalue > 1e-3
    for end in (0, -1):
        p = probs[end]
        assert chisquare(counts, n * p).pvalue < 1e-12


# -- a constant-step learner tracks a jumping teacher ----------------------------------------
def test_constant_step_learner_recovers_after_a_jump():
    """Online EM with a constant step (memory ~100 observations): the KL to the current
    teacher is small at the end of the first teacher's epoch, large after the first sequence
    of the new teacher, and small again at the end of its epoch. Epoch ends: the mean over
    ten checkpoints five sequences apart (the constant-step estimate fluctuates). Over
    seeds 0..7 the two ratios were at least 13 and 17; the assertions ask for 5."""
    t0 = _teacher(B=((0.8, 0.1, 0.1), (0.1, 0.1, 0.8)), A=((0.9, 0.1), (0.1, 0.9)),
                  pi=(0.5, 0.5))
    t1 = _teacher(B=((0.1, 0.8, 0.1), (0.6, 0.05, 0.35)), A=((0.7, 0.3), (0.4, 0.6)),
                  pi=(0.5, 0.5))
    every, T, T_kl = 300, 40, 3
    source = JumpingTeacher([t0, t1], every=every, random_state=7)
    model = hs.HMM(2, learn="online-em", random_state=7,
                   learner_options={"step_exponent": 0.0, "step_scale": 0.01})
    ends = [range(every - 45, every + 1, 5), range(2 * every - 45, 2 * every + 1, 5)]
    kl = {}
    for n_seen in [*ends[0], every + 1, *ends[1]]:
        X, lengths = source.sample(n_seen - source.n_seen, T)
        model.partial_fit(X, lengths)
        kl[n_seen] = kl_divergence(source.current, model, T_kl)
    before = np.mean([kl[c] for c in ends[0]])
    just_after = kl[every + 1]
    end = np.mean([kl[c] for c in ends[1]])
    jump = kl_divergence(t1, t0, T_kl)  # 1.38 nats
    assert just_after > 5 * before, (before, just_after, end)
    assert end < just_after / 5, (before, just_after, end)  # it fell again
    assert end < 0.05 * jump, (before, just_after, end)


# -- validation ---------------------------------------------------------------------------------
def test_chunks_and_current():
    source = RandomWalkTeacher(_teacher(), step=0.05, random_state=0)
    blocks = list(source.chunks(10, 4, n_chunks=3))
    assert len(blocks) == 3 and source.n_seen == 30
    assert all(X.shape == (40, 1) for X, _ in blocks)
    model = source.current
    assert isinstance(model, hs.HMM) and model.n_features_ == 3
    assert _same((model.startprob_, model.transmat_, model.emissionprob_), source.params)
    with pytest.raises(ValueError, match="read-only"):
        model.transmat_[:] = 0.5  # learned arrays are read-only; assign a new one instead
    model.transmat_ = np.full((2, 2), 0.5)  # a copy: the source does not change
    assert not np.allclose(source.params[1], 0.5)


def test_errors_name_the_argument():
    good = _teacher()
    cases = [
        (lambda: JumpingTeacher(_random_teacher, every=0), "^every:"),
        (lambda: JumpingTeacher([], every=5), "^teachers: empty"),
        (lambda: JumpingTeacher("abc", every=5), "^teachers:"),
        (lambda: JumpingTeacher([good, _teacher(B=np.full((2, 4), 0.25))], every=5),
         r"^teachers\[1\]: .*share"),
        (lambda: JumpingTeacher(lambda rng: 3, every=5), r"^teachers\(rng\)"),
        (lambda: JumpingTeacher(_random_teacher, every=5, random_state="x"), "^random_state:"),
        (lambda: RandomWalkTeacher(good, step=-0.1), "^step:"),
        (lambda: RandomWalkTeacher(good, step=float("nan")), "^step:"),
        (lambda: RandomWalkTeacher(good, step=True), "^step:"),
        (lambda: RandomWalkTeacher((good[0], good[1] * 2, good[2]), step=0.1),
         r"^teacher\.transmat"),
        (lambda: RandomWalkTeacher(good[:2], step=0.1), "^teacher:"),
        (lambda: RandomWalkTeacher(hs.HMM(2, emission="gaussian"), step=0.1), "^teacher:"),
        (lambda: RandomWalkTeacher(hs.HMM(2), step=0.1), "^teacher: .*no startprob_"),
        (lambda: RandomWalkTeacher(good, step=0.1).sample(0, 3), "^n:"),
        (lambda: RandomWalkTeacher(good, step=0.1).sample(3, 0), "^T:"),
        (lambda: RandomWalkTeacher(good, step=0.1).sample(3, 2, return_teachers=1),
         "^return_teachers:"),
        (lambda: next(RandomWalkTeacher(good, step=0.1).chunks(3, 2, n_chunks=0)),
         "^n_chunks:"),
        (lambda: sample_sequences(good, 2.5, 3), "^n:"),
    ]
    for make, pattern in cases:
        with pytest.raises(InvalidInputError, match=pattern):
            make()
