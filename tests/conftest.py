"""Test-suite configuration: Hypothesis runs derandomized (the examples of a property test
are a function of the test alone), so a run of the suite cannot fail by chance; a
failure found once is found on every run until the test changes. Registered here, before
the test modules are imported, so that every ``@settings(...)`` inherits it (a settings
object falls back on the profile loaded when it is created). ``pytest
--hypothesis-profile=explore`` draws fresh random examples (and keeps the example
database) to look for new failures."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("derandomized", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("derandomized")
