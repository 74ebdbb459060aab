r"""Tabled search: the explanation graph of a batch of observed goals.

Every goal is explained once (its function is called once; PRISM's tabling): the search is
depth first with an explicit stack, so a chain of 10^5 nested goals needs no Python
recursion. A goal met again while it is still being explained depends on itself: the search
stops with a :class:`~hiddenstate.errors.ProgramError` that prints the cycle (PRISM assumes
the "calls" relation between goals is acyclic, section 2.2). A search that needs more than
``Program.max_goals`` goals or nests deeper than ``Program.max_depth`` stops the same way.

The result is compiled to flat arrays in topological order (children first, see
:mod:`hiddenstate.kernels.explanation_graph`). Goals that have no explanation, and the
alternatives that use them, are pruned; an observed goal without explanation stays as a
root without alternatives, whose probability is zero (it scores ``-inf``; the methods that
need an explanation raise :class:`~hiddenstate.errors.ZeroProbabilityError` naming it, as
for any goal of probability zero).
"""

from __future__ import annotations

from array import array
from itertools import islice

import numpy as np

from ..errors import HiddenStateError, InvalidInputError, ProgramError
from ..kernels import explanation_graph as kg
from .graph import ExplanationGraph
from .program import Goal, Msw, Program, as_goals


def _bad_item(goal, item) -> ProgramError:
    return ProgramError(
        f"goal {goal!r}: an alternative contains {item!r} ({type(item).__name__}); "
        "alternatives hold msw(switch, outcome) atoms and goals of the same program only")


def explain(program: Program, goals: list[Goal]) -> ExplanationGraph:
    """Find all explanations of ``goals`` by tabled search, compiled into one graph.

    See the module docstring. Every sub-goal appears once in the graph, however many
    explanations use it.

    Parameters
    ----------
    program : Program
        The program the goals belong to.
    goals : list of Goal
        The observed goals (a goal repeated is a root repeated).

    Returns
    -------
    ExplanationGraph
        The AND/OR graph in topological order; ``roots`` are the nodes of ``goals``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``program`` is not a Program or ``goals`` is empty.
    hiddenstate.errors.ProgramError
        If a goal is not of the program, an alternative holds something else than goals
        and ``msw`` events, or the search passes one of the program's ``max_*`` limits.

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
    >>> from hiddenstate.programs import explain
    >>> graph = explain(prog, [two("h", "h"), two("h", "t")])
    >>> graph.goals, graph.n_alts
    ([two('h', 'h'), two('h', 't')], 4)
    """
    if not isinstance(program, Program):
        raise InvalidInputError(
            f"program: expected a hiddenstate.programs.Program, got {type(program).__name__}")
    goals = as_goals(goals)
    table = program.switches
    params = table._params
    gid: dict = {}
    goal_list: list = []
    state = bytearray()                      # 0 found, 1 being explained, 2 done
    rank = array("q")                        # post-order number of each goal
    first_alt = array("q")                   # per goal: its first alternative, count
    n_alts_of = array("q")
    item_ptr = array("q", [0])
    items = array("q")                       # ~param (< 0) or goal id (>= 0, until compiled)
    max_goals, max_depth = program.max_goals, program.max_depth
    max_alts, max_items = program.max_alternatives, program.max_items

    def new_goal(g) -> int:
        if type(g) is not Goal or g[0].program is not program:
            raise ProgramError(
                f"{g!r:.80} is not a goal of program {program.name!r}; build goals by calling "
                "the functions decorated with @program.goal")
        i = len(goal_list)
        if i >= max_goals:
            raise ProgramError(
                f"the tabled search needs more than max_goals={max_goals} goals (at "
                f"{g!r}); a program that never reaches a base case keeps creating goals. "
                "Fix the program, or raise Program(max_goals=...) for a large model")
        gid[g] = i
        goal_list.append(g)
        state.append(0)
        rank.append(-1)
        first_alt.append(0)
        n_alts_of.append(0)
        return i

    def msw_index(goal, item) -> int:
        try:
            return ~table.param_index(item[0], item[1])
        except HiddenStateError as exc:
            raise type(exc)(f"in goal {goal!r}: {exc}") from None

    def expand(g: int, stack_goals: list[int]) -> list[int]:
        """Call goal ``g``'s function, record its alternatives, return the children to
        explain (in order, without repeats)."""
        goal = goal_list[g]
        try:
            alts = goal[0].fn(*goal[1:])
        except HiddenStateError:
            raise
        except Exception as exc:  # the user's function failed: say which goal
            raise ProgramError(f"goal {goal!r}: its function raised {exc!r}") from exc
        if alts is None or isinstance(alts, (Msw, Goal)) or not hasattr(alts, "__iter__"):
            raise ProgramError(
                f"goal {goal!r}: its function returned {alts!r}; return a list of "
                "alternatives (each a list of msw(...) atoms and goals), [] for a goal that "
                "fails, [[]] for one that holds with probability one")
        first_alt[g] = len(item_ptr) - 1
        todo: list[int] = []
        push, close = items.append, item_ptr.append
        for alt in alts:
            if type(alt) is not list and (type(alt) in (Msw, Goal)
                                          or not hasattr(alt, "__iter__")):
                raise ProgramError(
                    f"goal {goal!r}: an alternative is {alt!r}; a goal's function returns a "
                    "list of alternatives, each a list of msw(...) atoms and goals (wrap a "
                    "single alternative in a list: [[...]])")
            if type(alt) is not list and type(alt) is not tuple:  # may never end: bounded
                alt = list(islice(alt, max_items - len(items) + 1))
            if len(items) + len(alt) > max_items:
                raise ProgramError(
                    f"the tabled search needs more than max_items={max_items} switch outcomes "
                    f"and sub-goals in its alternatives (at {goal!r}); an alternative that "
                    "never ends (a generator) never finishes. Fix the program, or raise "
                    "Program(max_items=...) for a large model")
            try:
                for item in alt:
                    t = type(item)
                    if t is Msw:
                        p = params.get(item)
                        push(~p if p is not None else msw_index(goal, item))
                    elif t is Goal:
                        c = gid.get(item)
                        if c is None:
                            c = new_goal(item)
                            todo.append(c)
                        elif state[c] == 1:
                            raise _cycle(goal_list, stack_goals, c)
                        elif state[c] == 0:
                            todo.append(c)
                        push(c)
                    else:
                        raise _bad_item(goal, item)
            except TypeError as exc:  # only hashing raises it here
                raise _unhashable(goal, alt, exc) from None
            close(len(items))
            if len(item_ptr) > max_alts:
                raise ProgramError(
                    f"the tabled search needs more than max_alternatives={max_alts} "
                    f"alternatives (at {goal!r}); a goal function that yields alternatives "
                    "forever never ends. Fix the program, or raise "
                    "Program(max_alternatives=...) for a large model")
        n_alts_of[g] = len(item_ptr) - 1 - first_alt[g]
        return list(dict.fromkeys(todo)) if len(todo) > 1 else todo

    roots = []
    counter = 0
    for goal in goals:
        try:
            g = gid.get(goal)
        except TypeError as exc:
            raise _unhashable("the observed goals", [goal], exc) from None
        if g is None:
            g = new_goal(goal)
        roots.append(g)
        if state[g] == 2:
            continue
        stack_goals = [g]
        state[g] = 1
        stack_todo = [expand(g, stack_goals)]
        stack_pos = [0]
        while stack_goals:
            todo = stack_todo[-1]
            i = stack_pos[-1]
            while i < len(todo) and state[todo[i]] != 0:
                i += 1
            if i == len(todo):
                done = stack_goals.pop()
                stack_todo.pop()
                stack_pos.pop()
                state[done] = 2
                rank[done] = counter
                counter += 1
                continue
            stack_pos[-1] = i + 1
            c = todo[i]
            if len(stack_goals) >= max_depth:
                raise ProgramError(
                    f"goals nest deeper than max_depth={max_depth} (at {goal_list[c]!r}, "
                    f"under {goal_list[stack_goals[-1]]!r}); a program that never reaches a "
                    "base case nests forever. Fix the program, or raise "
                    "Program(max_depth=...) for a long chain")
            stack_goals.append(c)
            state[c] = 1
            stack_todo.append(expand(c, stack_goals))
            stack_pos.append(0)
    return _compile(goal_list, goals, np.frombuffer(rank, dtype=np.int64),
                    np.frombuffer(first_alt, dtype=np.int64),
                    np.frombuffer(n_alts_of, dtype=np.int64),
                    np.frombuffer(item_ptr, dtype=np.int64), np.frombuffer(items, dtype=np.int64),
                    np.asarray(roots, dtype=np.int64), table)


def _unhashable(where, alt, exc: TypeError) -> ProgramError:
    bad = None
    for item in alt:
        try:
            hash(item)
        except TypeError:
            bad = item
            break
    return ProgramError(
        f"{where if isinstance(where, str) else f'goal {where!r}'}: {bad!r:.80} has an "
        f"argument that is not hashable ({exc}); goals and msw atoms are compared by value: "
        "pass numbers, strings, tuples or frozensets (lists and 1-D arrays are frozen)")


def _cycle(goal_list, stack_goals, c) -> ProgramError:
    path = [goal_list[g] for g in stack_goals[stack_goals.index(c):]] + [goal_list[c]]
    shown = " -> ".join(map(repr, path)) if len(path) <= 8 else \
        " -> ".join(map(repr, path[:4] + ["..."] + path[-3:])) + f" ({len(path) - 1} goals)"
    return ProgramError(
        f"goal {goal_list[c]!r} depends on itself ({shown}); tabled goals must not be "
        "cyclic. Carry what distinguishes the calls in the goal's arguments (e.g. the set "
        "of visited nodes of a path search)")


def _segments(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[i], starts[i] + counts[i])`` over ``i``."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return offs + np.arange(total, dtype=np.int64)


def _compile(goal_list, goals, rank, first_alt, n_alts_of, item_ptr, items, roots,
             table) -> ExplanationGraph:
    n_goals = len(goal_list)
    order = np.empty(n_goals, dtype=np.int64)
    order[rank] = np.arange(n_goals)           # goal ids in topological order
    # alternatives grouped by goal, goals in topological order
    counts = n_alts_of[order]
    alts = _segments(first_alt[order], counts)
    alt_orig = (alts - np.repeat(first_alt[order], counts)).astype(np.int32)
    node_ptr = np.concatenate(([0], np.cumsum(counts)))
    sizes = np.diff(item_ptr)[alts]
    items = items[_segments(item_ptr[alts], sizes)]
    item_ptr = np.concatenate(([0], np.cumsum(sizes)))
    child = items >= 0
    items[child] = rank[items[child]]
    # prune goals without explanation and what only they use
    ok = np.zeros(n_goals, dtype=np.bool_)
    keep_alt = kg.derivable(node_ptr, item_ptr, items, ok)
    root_nodes = rank[roots]
    reach = np.zeros(n_goals, dtype=np.bool_)
    reach[root_nodes] = True
    kg.reachable(node_ptr, item_ptr, items, keep_alt, reach)
    head = np.repeat(np.arange(n_goals), counts)
    keep_alt &= reach[head]
    new_id = np.cumsum(reach) - 1
    keep_item = np.repeat(keep_alt, sizes)
    items = items[keep_item]
    child = child[keep_item]
    items[child] = new_id[items[child]]
    kept_counts = np.bincount(head[keep_alt], minlength=n_goals)[reach]
    small = items.size == 0 or (items.max() < 2**31 and items.min() >= -2**31)
    return ExplanationGraph(
        node_ptr=np.concatenate(([0], np.cumsum(kept_counts))),
        item_ptr=np.concatenate(([0], np.cumsum(sizes[keep_alt]))),
        items=items.astype(np.int32) if small else items,
        alt_orig=alt_orig[keep_alt],
        goals=[goal_list[g] for g in order[reach]],
        roots=new_id[root_nodes],
        n_params=table.n_params,
    )
