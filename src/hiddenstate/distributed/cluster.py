"""Partitions held by the workers of a Dask cluster: one Dask **actor** per worker keeps
its partitions (loaded once) and runs functions on them when the client asks.

An actor call goes from the client to the worker and back (about 1 ms here), where a task
goes through the scheduler (20-35 ms per dependent round trip on this project's loaded
2-core machine; benchmarks/bench_distributed.py): an iteration of a fit is one call per
worker. Actors have no lineage, so the client keeps it: every step that changed the held
partitions (:meth:`Shards.load`, :meth:`Shards.map` with ``keep=True``) is recorded, and
the partitions of a worker that dies are loaded again on a live one by replaying those
steps; the numbers are the same bit for bit. Every wait is bounded by ``timeout`` and a
:class:`~hiddenstate.errors.ClusterError` names the cluster, what was waited for and the fix.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass

from ..errors import ClusterError, HiddenStateError, InvalidInputError

#: default of ``timeout=``: the longest wait, in seconds, for any one step of a distributed
#: fit (loading the partitions, one E-step of a worker)
TIMEOUT = 600.0
#: default of ``worker_wait=``: the longest wait, in seconds, for a worker once every worker
#: of the cluster has gone mid-fit (a worker its nanny restarts is back within seconds; a
#: cluster whose workers are gone for good fails within a minute). A cluster with no worker
#: when the fit starts fails at once.
WORKER_WAIT = 60.0
#: how often a wait checks whether the worker it waits on is still there (seconds)
POLL = 0.5
#: losses of a partition's worker (while loading it or running its E-step) before the fit
#: stops: Dask's own ``distributed.scheduler.allowed-failures`` default
MAX_LOSSES = 3


def is_delayed(source) -> bool:
    """A Dask Delayed (a bag partition): computed on the worker that loads it."""
    return hasattr(source, "dask") and hasattr(source, "compute")


@dataclass(frozen=True)
class Failure:
    """An exception raised by the code run on a worker, sent back as plain data (its class,
    message and the worker's traceback): some exceptions do not survive pickling (a
    ``MemoryError`` subclass cannot be unpickled), and as a value it leaves no worker-side
    error log. The client raises it again (:meth:`error`)."""

    cls: type
    message: str
    trace: str

    @classmethod
    def of(cls, exc: Exception) -> Failure:
        trace = "" if isinstance(exc, HiddenStateError) else traceback.format_exc()
        return cls(type(exc), str(exc), trace)

    def error(self) -> Exception:
        """The exception again: the same class and message (an exception that is not
        hiddenstate's own carries the worker's traceback as a note)."""
        try:
            exc = self.cls(self.message)
        except Exception:  # noqa: BLE001 - a class with another signature
            exc = RuntimeError(f"{self.cls.__name__}: {self.message}")
        if self.trace:
            exc.add_note(f"raised on a Dask worker:\n{self.trace}")
        return exc


class Shard:
    """**Actor**: the partitions one worker holds, by index, and their names."""

    def __init__(self):
        self.items: dict[int, object] = {}
        self.names: dict[int, str] = {}

    def load(self, jobs: list, fn, args: tuple):
        """``items[i] = fn(source, name, *args)`` for each ``(i, source, name)`` of
        ``jobs`` (a Delayed source is computed here first); a :class:`Failure` or None."""
        for i, source, name in jobs:
            try:
                if is_delayed(source):
                    source = source.compute(scheduler="sync")
                self.items[i] = fn(source, name, *args)
            except Exception as exc:  # noqa: BLE001 - sent back, raised on the client
                return Failure.of(exc)
            self.names[i] = name
        return None

    def map(self, fn, args: tuple, keep: bool, indices: list | None = None):
        """``fn(item, name, *args)`` of each held item (or of ``indices``) in index order:
        ``[(i, value), ...]``, or with ``keep`` the values replace the items (returns
        None); a :class:`Failure` stops at the first error."""
        out = []
        for i in sorted(self.items) if indices is None else indices:
            try:
                value = fn(self.items[i], self.names[i], *args)
            except Exception as exc:  # noqa: BLE001 - sent back, raised on the client
                return Failure.of(exc)
            if keep:
                self.items[i] = value
            else:
                out.append((i, value))
        return None if keep else out


class _Lost(Exception):
    """The worker of a shard is gone (internal: the partitions are loaded again)."""


def describe(client) -> str:
    """``the Dask cluster at tcp://...`` (or of an in-process scheduler)."""
    try:
        address = client.scheduler.address
    except AttributeError:
        address = None
    return f"the Dask cluster at {address}" if address else "an unknown Dask cluster"


def check_timeout(timeout) -> float | None:
    """``timeout=`` as seconds (None: wait forever)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not 0 < timeout < float("inf"):
        raise InvalidInputError(
            f"timeout: expected seconds > 0 or None (wait forever), got {timeout!r}")
    return float(timeout)


def check_worker_wait(worker_wait) -> float | None:
    """``worker_wait=`` as seconds (None: wait forever)."""
    if worker_wait is None:
        return None
    if isinstance(worker_wait, bool) or not isinstance(worker_wait, (int, float)) \
            or not 0 < worker_wait < float("inf"):
        raise InvalidInputError(
            f"worker_wait: expected seconds > 0 or None (wait forever), got {worker_wait!r}")
    return float(worker_wait)


def live_workers(client, wait: float | None = 0.0, timeout: float | None = TIMEOUT) -> dict:
    """``{address: threads}`` of the workers now. When there is none: with ``wait=0`` (the
    start of a fit) fail at once; else wait up to ``wait`` seconds for one (None: forever).
    ``timeout`` bounds the question to the scheduler."""
    where = describe(client)
    if client.status != "running":
        raise ClusterError(
            f"client: the Dask client (of {where}) is {client.status!r}, not running; "
            "pass a running distributed.Client (or client=None for a local cluster)")
    try:
        workers = client.nthreads(callback_timeout=timeout)
        if not workers and wait == 0:
            raise ClusterError(
                f"client: {where} has no worker; start workers (dask worker ADDRESS) and "
                "wait for them (client.wait_for_workers(n)) before the fit, or pass "
                "client=None for a local cluster")
        if not workers:
            client.wait_for_workers(1, timeout=wait)
            workers = client.nthreads(callback_timeout=timeout)
    except TimeoutError as exc:
        raise ClusterError(
            f"worker_wait: every worker of {where} has gone, and none came back within "
            f"{wait:g} s; start workers (dask worker ADDRESS) and fit again, or pass a "
            "larger worker_wait=") from exc
    except OSError as exc:
        raise ClusterError(
            f"client: cannot reach the scheduler of {where} ({exc}); check that it is "
            "running, or pass client=None for a local cluster") from exc
    if not workers:  # pragma: no cover - wait_for_workers returned without one
        raise ClusterError(f"timeout: {where} has no worker; start workers")
    return workers


@dataclass(eq=False)
class _Holder:
    """A shard actor, its future (which tells whether its worker is alive) and its
    partitions."""

    future: object
    actor: object
    address: str
    indices: list
    busy: bool = False   # a call was made and its result not received


class Shards:
    """The partitions of the data held by one :class:`Shard` actor per worker.

    ``sources[i]`` (a loader with ``load()``, a Delayed, or anything ``fn`` of
    :meth:`load` reads) and ``names[i]`` are kept on the client: a worker's partitions are
    loaded again from them, elsewhere, if it dies. ``timeout`` bounds each step,
    ``worker_wait`` the wait for a worker when every worker has gone; a cluster without
    workers at the start fails at once."""

    def __init__(self, client, sources: list, names: list[str], timeout: float | None,
                 worker_wait: float | None = WORKER_WAIT):
        if not len(sources):
            raise InvalidInputError(
                "data: no partitions (an empty list of files, arrays or bag partitions); "
                "pass at least one")
        if len(names) != len(sources):
            raise InvalidInputError(
                f"names: {len(names)} names for {len(sources)} partitions; pass one name "
                "per partition")
        self.client = client
        self.where = describe(client)
        self.sources = list(sources)
        self.names = list(names)
        self.timeout = timeout
        self.worker_wait = worker_wait
        self.holders: list[_Holder] = []
        self.steps: list[tuple] = []   # the completed steps: ("load" | "map", fn, args)
        self.losses = [0] * len(self.sources)
        n = len(self.sources)
        m = min(len(live_workers(client, 0.0, timeout)), n)
        # contiguous blocks of partitions, one block per worker
        for j in range(m):
            self.holders.append(self._rehome(list(range(j * n // m, (j + 1) * n // m)),
                                             "starting"))

    # -- placement ---------------------------------------------------------------------------
    def _rehome(self, indices: list, what: str) -> _Holder:
        """A new holder of the partitions ``indices`` on the live worker that holds the
        fewest partitions, every completed step replayed on it."""
        while True:
            workers = live_workers(self.client, self.worker_wait, self.timeout)
            held = dict.fromkeys(workers, 0)
            for h in self.holders:
                held[h.address] = held.get(h.address, 0) + len(h.indices)
            address = min(workers, key=lambda a: (held[a], a))
            try:
                holder = self._start(address, indices)
                self._replay(holder)
                return holder
            except _Lost:
                self._count_loss(indices, address, what)

    def _count_loss(self, indices: list, address: str, what: str) -> None:
        for i in indices:
            self.losses[i] += 1
            if self.losses[i] >= MAX_LOSSES:
                raise ClusterError(
                    f"{self.names[i]}: its worker died {self.losses[i]} times (the last, "
                    f"{address} of {self.where}, while {what}); a partition too large for "
                    "a worker's memory kills it: use more, smaller partitions "
                    "(n_partitions=) or give the workers more memory")

    def _start(self, address: str, indices: list) -> _Holder:
        future = self.client.submit(Shard, actor=True, workers=[address],
                                    allow_other_workers=True, pure=False)
        start = time.monotonic()
        while True:  # polled: a worker that dies before the actor starts is a loss
            try:
                actor = future.result(timeout=POLL)
                break
            except TimeoutError as exc:
                if address not in live_workers(self.client, self.worker_wait,
                                               self.timeout):
                    raise _Lost from exc
                if self.timeout is not None and time.monotonic() - start > self.timeout:
                    raise ClusterError(
                        f"timeout: {self.where} did not start the holder of "
                        f"{self._named(indices)} on a worker within {self.timeout:g} s; "
                        "check the workers (dask logs) or pass a larger timeout=") from exc
            except Exception as exc:  # noqa: BLE001 - re-raised unless the worker went away
                if future.status in ("error", "lost", "cancelled"):
                    raise _Lost from exc
                raise
        return _Holder(future, actor, getattr(actor, "_address", address), indices)

    def _named(self, indices: list) -> str:
        """The partitions ``indices`` by name, for a message."""
        names = [self.names[i] for i in indices]
        return names[0] if len(names) == 1 else f"{len(names)} partitions ({names[0]} .. " \
            f"{names[-1]})"

    def close(self) -> None:
        """Release the actors: the workers drop their partitions. An actor with a call
        still under way (a step that timed out) is only forgotten (it goes when the call
        ends): cancelling it then would hang the client, since a call whose worker's comm
        closes awaits a cancelled actor future synchronously in the client's event loop
        (distributed 2026.8)."""
        holders, self.holders = self.holders, []
        idle = [h.future for h in holders if not h.busy]
        if idle and self.client.status == "running":
            self.client.cancel(idle)

    # -- running -----------------------------------------------------------------------------
    def _wait(self, holder: _Holder, call, what: str):
        """The result of an actor call, polling that the worker is still there."""
        start = time.monotonic()
        while True:
            try:
                value = call.result(timeout=POLL)
                holder.busy = False
                return value
            except TimeoutError:
                pass
            except OSError as exc:  # "Unable to contact Actor's worker" (its comm closed)
                raise _Lost from exc
            except Exception as exc:  # noqa: BLE001 - lost worker, or an error to re-raise
                if self._gone(holder):
                    raise _Lost from exc
                raise
            if self._gone(holder):
                raise _Lost
            if self.timeout is not None and time.monotonic() - start > self.timeout:
                raise ClusterError(
                    f"timeout: {what} on worker {holder.address} of {self.where} did not "
                    f"finish within {self.timeout:g} s; check that worker (dask logs, "
                    "memory), or pass a larger timeout= for longer steps")

    def _gone(self, holder: _Holder) -> bool:
        if self.client.status != "running":
            raise ClusterError(
                f"client: lost the connection to the scheduler of {self.where} (client "
                f"status {self.client.status!r}); restart the scheduler and fit again")
        return holder.future.status != "finished"

    def _call(self, holder: _Holder, method: str, *args):
        try:
            call = getattr(holder.actor, method)(*args)
            holder.busy = True
            return call
        except OSError as exc:
            raise _Lost from exc
        except Exception as exc:  # noqa: BLE001 - "Worker holding Actor was lost"
            if self._gone(holder):
                raise _Lost from exc
            raise

    def _result(self, holder: _Holder, method: str, args: tuple, what: str):
        value = self._wait(holder, self._call(holder, method, *args), what)
        if isinstance(value, Failure):
            raise value.error()
        return value

    def _run(self, method: str, args_of, what: str) -> list:
        """``method`` on every holder (all calls first, then the waits) with
        ``args_of(holder)``; the partitions of a lost holder are loaded again on a live
        worker and its call made again. Returns the results in holder order."""
        todo = list(self.holders)
        results = {}
        while todo:
            calls, lost = [], []
            for holder in todo:
                try:
                    calls.append((holder, self._call(holder, method, *args_of(holder))))
                except _Lost:
                    lost.append(holder)
            for holder, call in calls:
                try:
                    results[holder] = self._wait(holder, call, what)
                except _Lost:
                    lost.append(holder)
            todo = []
            for holder in lost:
                self._count_loss(holder.indices, holder.address, what)
                self.holders.remove(holder)
                self.holders.append(self._rehome(holder.indices, what))
                todo.append(self.holders[-1])
        self.holders.sort(key=lambda h: h.indices[0])
        out = []
        for holder in self.holders:
            if isinstance(results[holder], Failure):
                raise results[holder].error()
            out.append(results[holder])
        return out

    def _replay(self, holder: _Holder) -> None:
        for kind, fn, args in self.steps:
            args = (self._jobs(holder), fn, args) if kind == "load" else (fn, args, True)
            self._result(holder, kind, args, "loading the partitions again")

    def _jobs(self, holder: _Holder) -> list:
        return [(i, self.sources[i], self.names[i]) for i in holder.indices]

    # -- the steps ---------------------------------------------------------------------------
    def load(self, fn, *args) -> None:
        """Each worker runs ``fn(source, name, *args)`` for its partitions and keeps the
        results (recorded: replayed if a worker dies)."""
        self._run("load", lambda h: (self._jobs(h), fn, args), "loading the partitions")
        self.steps.append(("load", fn, args))

    def map(self, fn, *args, keep: bool = False, indices: list | None = None,
            what: str = "a step on the partitions") -> list:
        """``fn(item, name, *args)`` of every partition (or of ``indices``), in partition
        order; ``keep``: the values replace the items (recorded) and nothing is returned."""
        wanted = None if indices is None else set(indices)

        def args_of(holder):
            mine = None if wanted is None else [i for i in holder.indices if i in wanted]
            return fn, args, keep, mine

        results = self._run("map", args_of, what)
        if keep:
            self.steps.append(("map", fn, args))
            return []
        pairs = [pair for part in results for pair in part]
        return [value for _, value in sorted(pairs, key=lambda pair: pair[0])]
