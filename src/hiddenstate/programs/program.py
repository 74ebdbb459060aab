r"""Programs: switches plus tabled goals, written as Python functions.

A goal's function returns the *alternative explanations* of the goal: an iterable of
alternatives, each an iterable of switch outcomes ``msw(switch, outcome)`` and sub-goals.
Calling a decorated function does not run it: it returns a hashable :class:`Goal`, which
the tabled search (:mod:`.tabling`) explains once however many alternatives mention it::

    prog = Program()
    prog.switch("init", [0, 1])
    tr = prog.switch_family("tr", [0, 1], keys=[0, 1])
    out = prog.switch_family("out", ["a", "b"], keys=[0, 1])

    @prog.goal
    def hmm(xs):                        # the observed goal
        return [[msw("init", s), step(xs, 0, s)] for s in (0, 1)]

    @prog.goal
    def step(xs, t, s):                 # state s at time t emits xs[t], then moves on
        emit = msw(out(s), xs[t])
        if t + 1 == len(xs):
            return [[emit]]
        return [[emit, msw(tr(s), n), step(xs, t + 1, n)] for n in (0, 1)]

An alternative with no items is *true* (probability one); a goal whose function returns no
alternatives *fails*. Lists, tuples and 1-D arrays passed as goal arguments are stored as
:class:`Seq` (a tuple that hashes once), so passing the observed sequence down through every
sub-goal costs nothing; pass positions (``t``), not slices (``xs[1:]`` copies).

Sampling execution is a separate plain function registered with :meth:`Program.sampler`:
it draws outcomes with ``draw(switch)`` and returns what it generated (typically a goal),
e.g. ``hmm(xs)`` for a sequence ``xs`` drawn from the chain.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from ..errors import InvalidInputError
from .switches import SwitchFamily, SwitchTable


class Seq(tuple):
    """An immutable sequence used as a goal argument: a tuple whose hash is computed once.

    A goal's list, tuple or 1-D array argument becomes a ``Seq`` when the goal is made.

    Parameters
    ----------
    iterable : iterable
        The items.

    Examples
    --------
    >>> from hiddenstate.programs import Seq
    >>> Seq([1, 2, 3]) == (1, 2, 3), Seq(range(20))
    (True, (0, 1, 2, 3, ... 20 items))
    """

    def __hash__(self) -> int:
        d = self.__dict__
        h = d.get("_h")
        if h is None:
            h = d["_h"] = tuple.__hash__(self)
        return h

    def __repr__(self) -> str:
        if len(self) <= 8:
            return tuple.__repr__(self)
        return f"({', '.join(map(repr, self[:4]))}, ... {len(self)} items)"


def _freeze(arg):
    t = type(arg)
    if t is list or t is tuple:
        return Seq(arg)
    if t is np.ndarray:
        return Seq(arg.tolist() if arg.ndim == 1 else map(tuple, arg.tolist()))
    return arg


_new_goal = tuple.__new__


class Goal(tuple):
    """A tabled goal: a predicate applied to arguments (hashable, compared by value).

    Goals are made by calling a goal function of a program (a :class:`Predicate`), not
    directly.

    Parameters
    ----------
    iterable : iterable
        The predicate, then the arguments.

    Examples
    --------
    >>> from hiddenstate.programs import Program, msw
    >>> prog = Program("coins")
    >>> @prog.goal
    ... def toss(x):
    ...     return [[msw("coin", x)]]
    >>> g = toss("h")
    >>> g, g.args, g == toss("h")
    (toss('h'), ('h',), True)
    """

    __slots__ = ()

    @property
    def predicate(self) -> Predicate:
        """The goal function it applies."""
        return self[0]

    @property
    def args(self) -> tuple:
        """Its arguments."""
        return tuple.__getitem__(self, slice(1, None))

    def __repr__(self) -> str:
        return f"{self[0].name}({', '.join(map(repr, self.args))})"


def as_goals(goals, name: str = "goals") -> list:
    """``goals`` (one :class:`Goal` or an iterable of them) as a non-empty list; each item
    is checked where it is used. Errors name ``name``."""
    if type(goals) is Goal:
        return [goals]
    try:
        goals = list(goals)
    except TypeError as exc:
        raise InvalidInputError(
            f"{name}: expected a list of goals, got {type(goals).__name__}") from exc
    if not goals:
        raise InvalidInputError(f"{name}: empty; pass at least one goal")
    return goals


class Msw(tuple):
    """A switch outcome ``msw(switch, outcome)`` in an alternative (made by :func:`msw`).

    Parameters
    ----------
    iterable : iterable
        The pair ``(switch, outcome)``.

    Examples
    --------
    >>> from hiddenstate.programs import msw
    >>> m = msw(("tr", 0), 1)
    >>> m, m.switch, m.outcome
    (msw(('tr', 0), 1), ('tr', 0), 1)
    """

    __slots__ = ()

    @property
    def switch(self):
        """The switch's name."""
        return self[0]

    @property
    def outcome(self):
        """The outcome it takes."""
        return self[1]

    def __repr__(self) -> str:
        return f"msw({self[0]!r}, {self[1]!r})"


def msw(switch: Hashable, outcome: Hashable) -> Msw:
    """Return the event "switch ``switch`` takes outcome ``outcome``" (PRISM's ``msw/2``).

    Parameters
    ----------
    switch : hashable
        A switch name (or an instance of a switch family, e.g. ``("tr", 0)``).
    outcome : hashable
        One of its outcomes.

    Returns
    -------
    Msw
        The event, an item of an alternative of a goal.

    Examples
    --------
    >>> from hiddenstate.programs import msw
    >>> msw("coin", "h")
    msw('coin', 'h')
    """
    return Msw((switch, outcome))


class Predicate:
    """A tabled goal function; calling it makes a :class:`Goal` (it does not run it).

    Made by the :meth:`Program.goal` decorator.

    Parameters
    ----------
    program : Program
        The program it belongs to.
    fn : callable
        The function returning the goal's alternatives.

    Examples
    --------
    >>> from hiddenstate.programs import Program, msw
    >>> prog = Program("coins")
    >>> @prog.goal
    ... def toss(x):
    ...     return [[msw("coin", x)]]
    >>> toss, toss("h")
    (<goal toss of coins>, toss('h'))
    """

    def __init__(self, program: Program, fn: Callable):
        self.program = program
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args) -> Goal:
        for a in args:  # the fast path first: nothing to freeze (called for every sub-goal)
            t = type(a)
            if t is list or t is tuple or t is np.ndarray:
                return _new_goal(Goal, (self, *map(_freeze, args)))
        return _new_goal(Goal, (self, *args))

    def __repr__(self) -> str:
        return f"<goal {self.name} of {self.program.name}>"


class Program:
    """A probabilistic program: switch declarations, tabled goals and (optionally) a sampler.

    See the module docstring and ``docs/programs.md``. Every loop of the tabled search is
    bounded by one of the ``max_*`` limits, and the
    :class:`~hiddenstate.errors.ProgramError` it raises names it.

    Parameters
    ----------
    name : str, default="program"
        A label used in messages.
    max_goals : int, default=2_000_000
        The tabled search stops with a :class:`~hiddenstate.errors.ProgramError`
        when explaining the observed goals needs more distinct goals than this (a program
        that does not terminate keeps creating new goals).
    max_depth : int, default=200_000
        The same for a chain of nested sub-goals deeper than this.
    max_alternatives : int, default=50_000_000
        The same for the total number of alternatives (a goal function that yields
        alternatives forever).
    max_items : int, default=200_000_000
        The same for the total number of switch outcomes and sub-goals in all
        alternatives (an alternative given as a generator that never ends).

    Examples
    --------
    >>> from hiddenstate.programs import Program, msw
    >>> prog = Program("coins")
    >>> prog.switch("coin", ["a", "b"])
    'coin'
    >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
    >>> @prog.goal
    ... def two(x, y):
    ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
    >>> prog, prog.outcomes(toss("a"))
    (Program('coins': 3 switches, 1 goals), ('h', 't'))
    """

    def __init__(self, name: str = "program", max_goals: int = 2_000_000,
                 max_depth: int = 200_000, max_alternatives: int = 50_000_000,
                 max_items: int = 200_000_000):
        from .._validation import check_positive_int

        self.name = name
        self.max_goals = check_positive_int(max_goals, "max_goals")
        self.max_depth = check_positive_int(max_depth, "max_depth")
        self.max_alternatives = check_positive_int(max_alternatives, "max_alternatives")
        self.max_items = check_positive_int(max_items, "max_items")
        self.switches = SwitchTable()
        self.predicates: dict[str, Predicate] = {}
        self.sampler_fn: Callable | None = None

    # -- declarations ---------------------------------------------------------------------------
    def switch(self, name: Hashable, outcomes, probs=None, *, fixed: bool = False,
               prior=1.0) -> Hashable:
        """Declare one switch.

        Parameters
        ----------
        name : hashable
            The switch's name.
        outcomes : iterable of hashable
            Its outcomes, in order.
        probs : array-like of shape (n_outcomes,) or None, default=None
            Its probabilities (None: uniform; the initial values with
            ``init="declared"``).
        fixed : bool, default=False
            Never learned.
        prior : float or array-like of shape (n_outcomes,), default=1.0
            Dirichlet concentration, one number or one per outcome (used by learn= map,
            vb, vt, kvt; PRISM's pseudo-count is ``prior - 1``).

        Returns
        -------
        hashable
            The name.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the switch exists, or its outcomes, probabilities or prior are invalid.
        """
        self.switches.add_switch(name, outcomes, probs, fixed, prior)
        return name

    def switch_family(self, name: str, outcomes, keys=None, probs=None, *,
                      fixed: bool = False, prior=1.0) -> SwitchFamily:
        """Declare a family of switches ``(name, *key)``, all with the same outcomes.

        Parameters
        ----------
        name : str
            The family's name.
        outcomes : iterable of hashable
            The outcomes of every switch, in order.
        keys : iterable of hashable or None, default=None
            The keys that exist (None: any key, each switch created on first use).
        probs : array-like or dict or None, default=None
            One probability vector for every key, or a dict key -> vector (whose keys
            are then the family's keys unless ``keys`` is given); None: uniform.
        fixed : bool, default=False
            Never learned.
        prior : float or array-like of shape (n_outcomes,), default=1.0
            Dirichlet concentration of every switch (see :meth:`switch`).

        Returns
        -------
        SwitchFamily
            The family; calling it gives a switch name (``tr(s)`` is ``("tr", s)``).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family exists, or its outcomes, probabilities or prior are invalid.
        """
        return self.switches.add_family(name, outcomes, keys, probs, fixed, prior)

    def set_probs(self, switch: Hashable, probs) -> None:
        """Set the probabilities of a declared switch (by hand; validated).

        Parameters
        ----------
        switch : hashable
            A declared switch (or an instance of a switch family).
        probs : array-like of shape (n_outcomes,)
            A probability vector over its outcomes.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``switch`` is not declared or ``probs`` is not a probability vector.
        """
        sid = self.switches.instance_id(switch)
        self.switches.declared[self.switches.names[sid]] = \
            self.switches.specs[sid].check_probs(probs, f"probs of switch {switch!r}")

    def outcomes(self, switch: Hashable) -> tuple:
        """Return the outcomes of a switch, in declared order.

        Parameters
        ----------
        switch : hashable
            A declared switch (or an instance of a switch family).

        Returns
        -------
        tuple
            Its outcomes.
        """
        return self.switches.outcomes(switch)

    def goal(self, fn: Callable) -> Predicate:
        """Make ``fn`` a tabled goal of this program (a decorator).

        Parameters
        ----------
        fn : callable
            The goal function: it returns the goal's alternatives, each a list of
            :func:`msw` events and sub-goals.

        Returns
        -------
        Predicate
            Calling it makes a :class:`Goal`.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``fn`` is not callable, or the program has a goal of that name.
        """
        if not callable(fn):
            raise InvalidInputError(f"goal: expected a function, got {fn!r}")
        pred = Predicate(self, fn)
        if pred.name in self.predicates:
            raise InvalidInputError(
                f"goal {pred.name!r} is defined twice in program {self.name!r}; rename one")
        self.predicates[pred.name] = pred
        return pred

    def sampler(self, fn: Callable) -> Callable:
        """Register ``fn(draw, *args)`` as the program's sampling execution (a decorator).

        Parameters
        ----------
        fn : callable
            ``fn(draw, *args)``: ``draw(switch)`` returns an outcome of ``switch`` drawn
            with the current probabilities; ``fn`` returns what it generated (usually an
            observed goal).

        Returns
        -------
        callable
            ``fn`` itself.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``fn`` is not callable.
        """
        if not callable(fn):
            raise InvalidInputError(f"sampler: expected a function, got {fn!r}")
        self.sampler_fn = fn
        return fn

    def __deepcopy__(self, memo) -> Program:
        """A program is code: copies share it (so ``sklearn.base.clone`` of a model keeps
        goals made by the program's functions valid)."""
        return self

    def __copy__(self) -> Program:
        return self

    def __repr__(self) -> str:
        return (f"Program({self.name!r}: {len(self.switches.names)} switches, "
                f"{len(self.predicates)} goals)")
