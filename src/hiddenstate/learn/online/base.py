"""The protocol every streaming learner follows.

A learner object holds hyper-parameters only (step sizes, learning rates, priors...). Its
*state* is a flat ``dict`` mapping names to NumPy arrays or Python scalars (int, float,
bool, str): everything needed to continue the stream, and nothing else, so that
``state -> save -> load -> continue`` gives bit-identical results to an uninterrupted run.

Parameters travel as the batch learners' ``theta``:
``{"startprob": (K,), "transmat": (K, K), "emission": {family keys...}}``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class OnlineLearner(Protocol):
    #: the ``learn=`` name of the learner ("online-em", "bwo", ...)
    name: str

    def start(self, theta: dict, family, rng: np.random.Generator) -> dict:
        """Initial state from initial parameters ``theta`` and the emission family."""

    def update(self, state: dict, X: np.ndarray, lengths: np.ndarray, family,
               continues: bool = False) -> dict:
        """Consume the sequences ``X`` (concatenated, validated) in order; return the new
        state. ``continues=True``: the first sequence continues the one the previous call
        ended in (online EM only; per-sequence learners refuse it)."""

    def params(self, state: dict, family) -> dict:
        """Current parameters ``theta`` (materialised from the state)."""
