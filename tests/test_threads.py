"""The kernels' threads (hiddenstate.threads): the count users set, the environment's
default, threadpoolctl and joblib's limits, helpers that are never waited for, and results
that do not depend on any of it."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from numba import njit

import hiddenstate as hs
from hiddenstate import threads
from hiddenstate.errors import InvalidInputError
from hiddenstate.kernels.chunks import claim


@njit(nogil=True, cache=True)
def _squares(out, ticket):
    while True:
        c = claim(ticket)
        if c >= out.shape[0]:
            return
        out[c] = c * c


def _default_in(env: dict) -> int:
    """threads.get_num_threads() in a fresh interpreter with ``env`` (others unset)."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c",
                          "from hiddenstate import threads; print(threads.get_num_threads())"],
                         capture_output=True, text=True, env={**base, **env}, check=True)
    return int(out.stdout)


def test_the_default_comes_from_numba_then_openmp_then_the_cpus():
    assert _default_in({"NUMBA_NUM_THREADS": "3"}) == 3
    assert _default_in({"OMP_NUM_THREADS": "1"}) == 1  # what Dask's workers set
    assert _default_in({"NUMBA_NUM_THREADS": "2", "OMP_NUM_THREADS": "1"}) == 2
    assert _default_in({}) == len(os.sched_getaffinity(0))


def test_set_num_threads_and_nested_limits(monkeypatch):
    monkeypatch.setattr(threads, "_default", 4)
    assert threads.get_num_threads() == 4
    with threads.limit(3):
        assert threads.get_num_threads() == 3
        with threads.limit(8):  # a cap: the smaller one holds
            assert threads.get_num_threads() == 3
        with threads.limit(1):
            assert threads.get_num_threads() == 1
        assert threads.get_num_threads() == 3
    threads.set_num_threads(2)
    assert threads.get_num_threads() == 2
    seen = []
    worker = threading.Thread(target=lambda: seen.append(threads.get_num_threads()))
    with threads.limit(1):  # a limit is the calling thread's; set_num_threads every thread's
        worker.start()
        worker.join()
    assert seen == [2]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_thread_count_that_is_not_a_positive_int_is_refused(bad):
    with pytest.raises(InvalidInputError, match="n_threads"):
        threads.set_num_threads(bad)
    with pytest.raises(InvalidInputError, match="n_threads"):
        with threads.limit(bad):
            pass


def test_threadpoolctl_limits_reach_the_kernels(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(threads, "_default", 2)
    info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "hiddenstate"]
    assert len(info) >= 1 and info[0]["num_threads"] == 2
    with threadpoolctl.threadpool_limits(1):
        assert threads.get_num_threads() == 1
    assert threads.get_num_threads() == 2
    # the restore leaves no cap behind: a later set_num_threads applies again
    threads.set_num_threads(3)
    assert threads.get_num_threads() == 3


def test_a_helper_that_has_not_started_is_cancelled_not_waited_for(monkeypatch):
    """The pool's one helper is held by another task: the call does every chunk itself."""
    monkeypatch.setattr(threads, "PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "BUSY_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "_default", 2)
    monkeypatch.setattr(threads, "_pool", None)
    release = threading.Event()
    blocker = threads._helpers(1).submit(release.wait, 60)
    try:
        submitted = []
        pool = threads._helpers(1)
        submit = pool.submit
        monkeypatch.setattr(pool, "submit",
                            lambda *a: submitted.append(submit(*a)) or submitted[-1])
        out = np.zeros(64)
        threads.run(_squares, 64, 1.0, out)
        np.testing.assert_array_equal(out, np.arange(64.0) ** 2)
        assert len(submitted) == 1 and submitted[0].cancelled()
    finally:
        release.set()
        blocker.result()


def _child(queue):
    out = np.zeros(16)
    threads.run(_squares, 16, 1.0, out)
    queue.put(out.tolist())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_gets_a_new_pool(monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "BUSY_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "_default", 2)
    threads.run(_squares, 16, 1.0, np.zeros(16))  # the parent's pool has a thread
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue,))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    assert queue.get(timeout=5) == (np.arange(16.0) ** 2).tolist()


@pytest.mark.parametrize("emission", ["categorical", "gaussian"])
def test_a_fit_is_the_same_on_one_and_on_two_threads(emission, monkeypatch):
    """Every call parallel (thresholds 0): 1 and 2 threads learn the same numbers."""
    monkeypatch.setattr(threads, "PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "BUSY_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "_default", 2)
    rng = np.random.default_rng(5)
    lengths = rng.integers(50, 400, 40)
    n = int(lengths.sum())
    X = (rng.integers(0, 6, size=(n, 1)) if emission == "categorical"
         else rng.normal(size=(n, 2)) + rng.integers(0, 3, size=(n, 1)))
    fits = []
    for n_threads in (1, 2):
        with threads.limit(n_threads):
            model = hs.HMM(n_states=3, emission=emission, n_iter=8, tol=-np.inf,
                           random_state=0).fit(X, lengths)
            fits.append((model.monitor_.history, model.transmat_, model.score(X, lengths),
                         model.predict(X, lengths)))
    for a, b in zip(*fits, strict=True):
        np.testing.assert_array_equal(a, b)


def _worker_threads(_):
    return threads.get_num_threads()


@pytest.mark.slow
def test_joblib_workers_do_not_oversubscribe_and_grid_search_scores_agree():
    """loky's workers get NUMBA_NUM_THREADS = CPUs // n_jobs, which the kernels follow; a
    grid search over an HMM scores the same with n_jobs=1 and n_jobs=2."""
    joblib = pytest.importorskip("joblib")
    model_selection = pytest.importorskip("sklearn.model_selection")
    per_worker = joblib.Parallel(n_jobs=2)(joblib.delayed(_worker_threads)(i) for i in range(4))
    cpus = len(os.sched_getaffinity(0))
    assert set(per_worker) == {max(1, cpus // 2)}
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(1200, 1))
    grid = {"n_states": [2, 3]}
    scores = []
    for n_jobs in (1, 2):
        search = model_selection.GridSearchCV(
            hs.HMM(n_iter=5, tol=-np.inf, random_state=0), grid, cv=3, n_jobs=n_jobs)
        search.fit(X)
        scores.append(search.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(scores[0], scores[1])
