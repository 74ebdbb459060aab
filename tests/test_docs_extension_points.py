"""The examples of the HMM's extension points (docs/hmm.md) and of the family contract
(docs/families.md) run and show what the pages say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _run_section(page: str, heading: str) -> tuple[dict, str]:
    """Run the python blocks of the section ``heading`` of ``page``: (namespace, output)."""
    text = (DOCS / page).read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in re.findall(r"```python\n(.*?)```", section, re.S):
            exec(compile(block, str(DOCS / page), "exec"), namespace)
    return namespace, out.getvalue()


def test_a_subclass_hook_keeps_the_chain_fixed():
    ns, printed = _run_section("hmm.md", "## Extending the HMM: the extension points")
    m = ns["m"]
    assert m.monitor_.iter > 1
    np.testing.assert_array_equal(m.transmat_, [[0.9, 0.1], [0.1, 0.9]])
    np.testing.assert_array_equal(m.startprob_, [0.5, 0.5])
    assert "[[0.9 0.1]" in printed


def test_merged_mixture_statistics_give_the_whole_data_m_step():
    ns, printed = _run_section("families.md", "## The family contract")
    assert float(printed.split()[-1]) < 1e-12
    # without the family's own merge (a plain sum of the parts' sums, each about its own
    # reference points) the M-step is far off: the example would show it
    a, b, fam, params = ns["a"], ns["b"], ns["fam"], ns["params"]
    summed = {key: a[key] + b[key] for key in a}
    off = fam.mstep(params, summed, "mcw")[0]
    want = ns["new_whole"]
    assert max(np.max(np.abs(off[k] - want[k])) / np.max(np.abs(want[k])) for k in want) > 1e-3
