"""Worked examples built as estimators: Funk's 2-bit multiplexer (eq. 9-15, see
``docs/treenet.md``) as a :class:`~hiddenstate.TreeNet`.

(Until 0.1 this was ``hiddenstate.treenet.examples``; it moved here because an example
that builds an estimator belongs to the estimators' layer, above ``treenet/``: see
``docs/architecture.md``.)
"""

from __future__ import annotations

import numpy as np

from .treenet import TreeNet


def multiplexer() -> TreeNet:
    """A (4 states) split into two bits B, C and multiplexed back into D (eq. 9-12), so that
    D = A; D's evidence is passed as ``likelihoods={"D": ...}`` (eq. 13, 15) with one dummy
    observed leaf ``x`` (one symbol) below D."""
    net = TreeNet(n_states={"A": 4, "B": 2, "C": 2, "D": 4},
                  edges=[("A", "B"), ("A", "C"), ("B", "D"), ("C", "D"), ("D", "x")],
                  observed={"x": 1})
    bd = np.array([[1, 1, 0, 0], [0, 0, 1, 1]], dtype=float)   # P(D | B), eq. 10
    cd = np.array([[1, 0, 1, 0], [0, 1, 0, 1]], dtype=float)   # P(D | C)
    net.priors_ = {"A": np.full(4, 0.25)}
    net.weights_ = {"A->B": bd.T.copy(), "A->C": cd.T.copy(),  # A mirrors D (eq. 12)
                    "B->D": bd, "C->D": cd, "D->x": np.ones((4, 1))}
    return net
