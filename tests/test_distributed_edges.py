"""hiddenstate.distributed at its edges: every public entry point refuses hostile input
(wrong types and shapes, NaN and inf, symbols out of range, empty and huge partitions,
hand-set invalid parameters, missing or malformed files) with one line of
``HiddenStateError`` naming the argument (and the partition or file); a closed client, a
cluster without workers, workers that die for good or keep dying, a scheduler that goes
away and a step that hangs raise :class:`ClusterError` within ``timeout`` instead of
waiting forever."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate.errors import (
    ClusterError,
    HiddenStateError,
    InsufficientMemoryError,
    InvalidInputError,
)

distributed = pytest.importorskip(
    "distributed", reason="Dask's distributed scheduler is not installed (the dask extra)")
hsd = pytest.importorskip("hiddenstate.distributed")
dask = pytest.importorskip("dask")

RNG = np.random.default_rng(0)
XC = RNG.integers(0, 4, 300)          # categorical symbols, three sequences of 100
XG = RNG.normal(size=(300, 2))        # two Gaussian features
L = [100, 100, 100]


@pytest.fixture(scope="module")
def client():
    with hsd.local_client(2) as c:
        yield c


def _hmm(emission: str = "categorical", **kw) -> hs.HMM:
    return hs.HMM(2, emission=emission, **{"n_iter": 3, "random_state": 0, **kw})


def _one_line(exc: BaseException) -> str:
    message = str(exc)
    assert "\n" not in message and "Traceback" not in message, message
    return message


def _workers_hold_nothing(client, within: float = 10.0) -> bool:
    """True once no worker holds an actor: the scheduler releases a dropped actor
    asynchronously, so a busy machine may take a moment (polled for ``within`` seconds)."""
    deadline = time.monotonic() + within
    while True:
        held = client.run(lambda dask_worker: len(dask_worker.state.actors))
        if not any(held.values()):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


# -- arguments -----------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"model": "HMM"}, r"^model: expected a hiddenstate HMM"),
    ({"client": "tcp://127.0.0.1:1"}, r"^client: expected a distributed\.Client"),
    ({"data": {"a": 1}}, r"^data: expected an array"),
    ({"data": None}, r"^data: expected an array"),
    ({"data": []}, r"^data: expected an array"),
    ({"data": [XC, "x.npy"]}, r"^data: expected an array"),
    ({"lengths": [100, 100]}, r"^lengths: sums to 200 but X has 300 rows"),
    ({"n_partitions": 0}, r"^n_partitions: expected an int >= 1"),
    ({"n_partitions": 1.5}, r"^n_partitions: expected an int >= 1"),
    ({"init_rows": 0}, r"^init_rows: expected an int >= 1"),
    ({"timeout": -1}, r"^timeout: expected seconds > 0"),
    ({"timeout": float("nan")}, r"^timeout: expected seconds > 0"),
    ({"timeout": "10"}, r"^timeout: expected seconds > 0"),
    ({"worker_wait": 0}, r"^worker_wait: expected seconds > 0"),
    ({"worker_wait": float("inf")}, r"^worker_wait: expected seconds > 0"),
    ({"callback": 5}, r"^callback: expected a function"),
])
def test_wrong_arguments_are_refused_naming_them(client, kwargs, pattern):
    args = {"model": _hmm(), "data": XC, "client": client, "lengths": L, **kwargs}
    with pytest.raises(InvalidInputError, match=pattern) as err:
        hsd.fit(args.pop("model"), args.pop("data"), args.pop("client"), **args)
    _one_line(err.value)


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: hsd.from_arrays(XC, L, "a"), r"^n_partitions: expected an int"),
    (lambda: hsd.from_arrays([[0, 1], [2]]), r"^X: not a rectangular array"),
    (lambda: hsd.from_arrays(3), r"^X: expected an array of observations"),
    (lambda: hsd.from_list(XC), r"^arrays: expected a list of arrays"),
    (lambda: hsd.from_list([XC], [L, L]), r"^lengths: with a list of 1 arrays"),
    (lambda: hsd.from_files("data.npy"), r"^paths: expected a list of files.*pass \[path\]"),
    (lambda: hsd.from_files([]), r"^paths: no files"),
    (lambda: hsd.from_files([3]), r"^paths: expected file paths"),
    (lambda: hsd.from_parquet([]), r"^paths: no files"),
    (lambda: hsd.from_parquet(["a.parquet"], columns="a"), r"^columns: expected a list"),
    (lambda: hsd.from_bag([XC]), r"^bag: expected a dask\.bag\.Bag"),
])
def test_partition_builders_refuse_wrong_arguments(call, pattern):
    with pytest.raises(InvalidInputError, match=pattern) as err:
        call()
    _one_line(err.value)


def test_local_client_refuses_a_bad_worker_count():
    with pytest.raises(InvalidInputError, match=r"^n_workers: expected an int >= 1"):
        with hsd.local_client(0):
            pass


def test_dask_problem_build_refuses_mismatched_names(client):
    with pytest.raises(InvalidInputError, match=r"^names: 1 names for 2 partitions"):
        hsd.DaskProblem.build(client, [1, 2], ["only one"], lambda source, name: source)


# -- data ----------------------------------------------------------------------------------
def _with(X, row, value):
    X = X.astype(np.float64)
    X[row] = value
    return X


@pytest.mark.parametrize(("emission", "data", "kw", "pattern"), [
    ("categorical", _with(XC, 250, np.nan), {}, r"^partition 1: X: contains NaN"),
    ("categorical", _with(XC, 5, -1.5), {}, r"^partition 0: X: "),
    ("gaussian", _with(XG, 250, np.inf), {}, r"^partition 1: X: contains inf"),
    ("categorical", XC, {"n_features": 3}, r"^partition \d: X: symbol 3 is out of range"),
    ("gaussian", XG.reshape(300, 2, 1), {}, r"^partition 0: X: expected a 2-D array"),
])
def test_bad_values_raise_the_local_error_naming_the_partition(client, emission, data, kw,
                                                               pattern):
    with pytest.raises(InvalidInputError, match=pattern) as remote:
        hsd.fit(_hmm(emission, **kw), data, client, lengths=L, n_partitions=2)
    name, message = _one_line(remote.value).split(": ", 1)
    part = hsd.from_arrays(data, L, 2).sources[int(name.split()[1])]
    with pytest.raises(InvalidInputError) as local:   # that partition fitted locally
        _hmm(emission, **kw).fit(part.X, part.lengths)
    assert message == str(local.value)


def test_empty_and_mismatched_partitions_are_named(client):
    db = pytest.importorskip("dask.bag", reason="dask.bag is not installed")
    with pytest.raises(InvalidInputError, match=r"^partition 1: X: no samples"):
        hsd.fit(_hmm(), [XC, np.array([], dtype=np.int64)], client)
    empty = db.from_sequence([XC[:10], XC[10:20]], npartitions=2).filter(lambda s: False)
    with pytest.raises(InvalidInputError, match=r"^data: bag partition 0 is empty"):
        hsd.fit(_hmm(), empty, client)
    with pytest.raises(InvalidInputError, match=r"^partition 1: X: has 1 features but the "
                                                r"model expects 2"):
        hsd.fit(_hmm("gaussian"), [XG, XG[:, :1]], client)
    with pytest.raises(InvalidInputError, match=r"^X: partition 1 has 3 categorical "
                                                r"feature\(s\), partition 0 has 2"):
        hsd.fit(_hmm(), [np.c_[XC, XC], np.c_[XC, XC, XC]], client)
    with pytest.raises(InvalidInputError, match=r"^data: no partitions"):
        hsd.fit(_hmm(), hsd.Partitions((), ()), client)
    assert _workers_hold_nothing(client)


def test_hand_set_invalid_parameters_raise_the_local_error(client):
    def bad():
        m = _hmm(init_params="")
        m.startprob_ = np.array([0.5, 0.5])
        m.transmat_ = np.array([[1.0, 1.0], [0.5, 0.5]])
        m.emissionprob_ = np.full((2, 4), 0.25)
        return m

    with pytest.raises(InvalidInputError) as local:
        bad().fit(XC, L)
    with pytest.raises(InvalidInputError) as remote:
        hsd.fit(bad(), XC, client, lengths=L)
    assert str(remote.value) == str(local.value)
    assert str(local.value).startswith("transmat_: row 0 sums to 2")
    assert _workers_hold_nothing(client)


def test_a_huge_partition_is_refused_before_its_e_step_allocates(client):
    """Partition 1 is 3·10^6 symbols for 3,000 states: its forward-backward tables would
    take ~70 GiB; the worker refuses it before allocating them (the watchdog would have
    killed a worker that tried)."""
    model = hs.HMM(3000, n_features=4, n_iter=1, init_params="st", random_state=0)
    with pytest.raises(InsufficientMemoryError, match=r"^partition 1: .*3000000 "
                                                      r"observations with 3000 states") as err:
        hsd.fit(model, [XC[:50], np.tile(XC, 10_000)], client)
    _one_line(err.value)


# -- files ---------------------------------------------------------------------------------
def test_missing_and_malformed_files_are_named(client, tmp_path):
    np.save(tmp_path / "a.npy", XC[:100])
    (tmp_path / "garbage.npy").write_bytes(b"not a numpy file")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    a = tmp_path / "a.npy"
    cases = [
        ([a, tmp_path / "nope.npy"], {}, rf"^{tmp_path / 'nope.npy'}: file not found"),
        ([a, tmp_path / "garbage.npy"], {},
         rf"^{tmp_path / 'garbage.npy'}: not a \.npy file \(it does not start with a "
         r"NumPy header\)"),
        ([a, tmp_path / "obj.npy"], {}, rf"^{tmp_path / 'obj.npy'}: dtype object is not "
                                        r"numeric \(reading it needs pickle"),
        ([a], {"lengths": [tmp_path / "none.txt"]},
         rf"^file {a}: {tmp_path / 'none.txt'}: lengths file not found"),
    ]
    for paths, kw, pattern in cases:
        with pytest.raises(InvalidInputError, match=pattern) as err:
            hsd.fit(_hmm(), paths, client, **kw)
        _one_line(err.value)


def test_missing_and_malformed_parquet_files_are_named(client, tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")
    (tmp_path / "garbage.parquet").write_bytes(b"PAR1 not parquet")
    pq.write_table(pa.table({"sequence": [0, 0, 1], "a": ["x", "y", "z"]}),
                   tmp_path / "text.parquet")
    pq.write_table(pa.table({"sequence": [0, 0, 1], "a": [1.0, 2.0, np.inf]}),
                   tmp_path / "inf.parquet")
    pq.write_table(pa.table({"seq": [0, 0, 1], "a": [1.0, 2.0, 3.0]}),
                   tmp_path / "noid.parquet")
    cases = [
        ("nope.parquet", "poisson", r"file not found"),
        ("garbage.parquet", "poisson", r"not a readable Parquet file"),
        ("text.parquet", "poisson", r"X: expected numbers, got an object array holding str"),
        ("inf.parquet", "gaussian", r"X: contains inf"),
        ("noid.parquet", "gaussian", r"sequence_column: 'sequence' is not a column"),
    ]
    for name, emission, pattern in cases:
        with pytest.raises(InvalidInputError, match=rf"{tmp_path / name}: {pattern}") as err:
            hsd.fit(_hmm(emission), [tmp_path / name], client)
        _one_line(err.value)
    with pytest.raises(InvalidInputError, match=r"^lengths: Parquet files give"):
        hsd.fit(_hmm("poisson"), [tmp_path / "inf.parquet"], client, lengths=[[3]])


# -- the cluster ---------------------------------------------------------------------------
def test_a_closed_client_is_refused():
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) \
            as cluster:
        closed = distributed.Client(cluster)
        closed.close()
    with pytest.raises(ClusterError, match=r"^client: the Dask client .* is 'closed', not "
                                           r"running; pass a running") as err:
        hsd.fit(_hmm(), XC, closed, lengths=L)   # default n_partitions: one per worker
    _one_line(err.value)


def test_a_cluster_without_workers_fails_at_once_naming_it():
    """No worker at all when the fit starts: no waiting, whatever timeout and worker_wait
    say (the default timeout waited 600 s before)."""
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as c:
        for call in (lambda: hsd.fit(_hmm(), XC, c, lengths=L),
                     lambda: hsd.fit(_hmm(), XC, c, lengths=L, timeout=None,
                                     worker_wait=None),
                     lambda: hsd.DaskProblem.build(c, [1], ["partition 0"],
                                                   lambda source, name: source)):
            start = time.monotonic()
            with pytest.raises(ClusterError, match=rf"^client: the Dask cluster at "
                                                   rf"{cluster.scheduler_address} has no "
                                                   r"worker; start workers") as err:
                call()
            assert time.monotonic() - start < 5
            _one_line(err.value)


def test_a_step_that_hangs_times_out_naming_the_worker(client):
    """A partition whose loading never ends within ``timeout`` (a Delayed that sleeps).
    The call goes on in its worker until the sleep ends (waited for at the end: closing an
    in-process cluster under a running actor call can hang distributed's event loop)."""
    slow = hsd.Partitions((dask.delayed(time.sleep)(3),), ("partition slow",))
    start = time.monotonic()
    with pytest.raises(ClusterError, match=r"^timeout: loading the partitions on worker "
                                           r"\S+ of the Dask cluster at \S+ did not "
                                           r"finish within 1 s") as err:
        hsd.fit(_hmm(), slow, client, timeout=1)
    assert time.monotonic() - start < 3
    _one_line(err.value)
    time.sleep(3)


def _data_gauss(n_seq: int = 8, T: int = 60):
    gen = hs.HMM(2, emission="gaussian", init_params="", random_state=1)
    gen.startprob_, gen.transmat_ = np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.1, 0.9]])
    gen.means_, gen.covars_ = np.array([[-2.0], [2.0]]), np.ones((2, 1))
    X = np.concatenate([gen.sample(T, random_state=i)[0] for i in range(n_seq)])
    return X, np.full(n_seq, T)


def test_all_workers_gone_for_good_mid_fit_times_out_naming_the_cluster():
    """The only worker (``dask worker --no-nanny``: nothing restarts it) is killed after
    iteration 2: the fit waits ``worker_wait`` for a worker, not the step ``timeout`` (it
    waited forever once, then the whole default ``timeout`` of 600 s), then stops. The
    default ``worker_wait`` is a minute; 2 s here keeps the test short."""
    assert hsd.cluster.WORKER_WAIT == 60.0
    X, lengths = _data_gauss()
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
             "--no-nanny", "--nthreads", "1", "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            c.wait_for_workers(1, timeout=120)

            def kill(iteration, objective):
                if iteration == 2:
                    worker.kill()
                    worker.wait()

            start = time.monotonic()
            with pytest.raises(ClusterError, match=rf"^worker_wait: every worker of the Dask "
                                                   rf"cluster at {cluster.scheduler_address} "
                                                   r"has gone, and none came back within "
                                                   r"2 s; start workers") as err:
                hsd.fit(hs.HMM(2, emission="gaussian", n_iter=20, tol=-np.inf, random_state=0), X,
                        c,
                        lengths=lengths, callback=kill, worker_wait=2)
            assert time.monotonic() - start < 30
            _one_line(err.value)
        finally:
            worker.kill()
            worker.wait()


def test_the_scheduler_going_away_mid_fit_is_named():
    X, lengths = _data_gauss()
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as c:
        def close(iteration, objective):
            if iteration == 2:
                cluster.close()

        start = time.monotonic()
        with pytest.raises(ClusterError, match=r"^(client|timeout|worker_wait): ") as err:
            hsd.fit(hs.HMM(2, emission="gaussian", n_iter=20, tol=-np.inf, random_state=0), X, c,
                    lengths=lengths, callback=close, timeout=5, worker_wait=5)
        assert time.monotonic() - start < 60
        assert "scheduler" in _one_line(err.value) or "came back" in str(err.value)


def test_a_partition_that_keeps_killing_its_worker_stops_the_fit(client):
    """A partition whose loading kills the worker process (as running out of memory
    would): the nanny restarts the worker, the partition is loaded again elsewhere, and
    after three deaths the fit stops naming the partition (an unbounded retry before)."""
    parts = hsd.Partitions((hsd.from_arrays(XC, L, 1).sources[0],
                            dask.delayed(os._exit)(1)), ("partition 0", "partition killer"))
    with pytest.raises(ClusterError, match=r"^partition killer: its worker died 3 times "
                                           r"\(the last, \S+ of the Dask cluster at \S+, "
                                           r"while loading the partitions\); ") as err:
        hsd.fit(_hmm(), parts, client, timeout=60)
    _one_line(err.value)
    client.wait_for_workers(2, timeout=60)


def test_errors_of_other_kinds_keep_their_class_and_the_worker_traceback(client):
    """An exception that is not hiddenstate's (a bug in a user's ``make_problem``) comes
    back with its class and message, and the worker's traceback as a note."""
    def make_problem(source, name):
        raise KeyError(f"no column in {name}")

    with pytest.raises(KeyError, match="no column in partition 0") as err:
        hsd.DaskProblem.build(client, [1], ["partition 0"], make_problem)
    assert any("raised on a Dask worker" in note and "make_problem" in note
               for note in getattr(err.value, "__notes__", []))
    assert not isinstance(err.value, HiddenStateError)
    assert _workers_hold_nothing(client)
