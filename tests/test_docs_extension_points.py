"""The examples of the HMM's extension points (docs/hmm.md) and of the family contract
(docs/families.md) run and show what the pages say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

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


def test_the_user_api_page_lists_no_hook_and_the_hooks_page_lists_them_all():
    """hs.HMM's API page shows what a user calls; the hooks and entry points of the table
    in docs/hmm.md are on the extenders' page (docs/api/hooks.rst), none on both."""
    pytest.importorskip("sphinx", reason="sphinx comes with the docs extra (make docs)")
    import importlib.util
    import sys

    import hiddenstate as hs
    spec = importlib.util.spec_from_file_location("_api", DOCS / "_api.py")
    api = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_api", api)
    spec.loader.exec_module(api)
    user, hooks = api.user_members(hs.HMM), api.framework_members(hs.HMM)
    assert {"fit", "partial_fit", "score", "decode", "predict_proba", "sample", "save",
            "get_params"} <= set(user)
    table = DOCS.joinpath("hmm.md").read_text().split("## Extending the HMM", 1)[1]
    named = set(re.findall(r"^\| `(\w+)\(", table, re.M)) - {"assign_params"}
    named |= {"check_fit_memory", "extra_learner_state", "emission_params"}
    assert named <= set(hooks) and not set(user) & set(hooks)
    assert len(user) + len(hooks) == len(api.class_members(hs.HMM))
    stub = api._stub("hiddenstate.HMM", hs.HMM)
    assert "check_fit_memory" not in stub and "make_learner" not in stub
    assert ":doc:`../hooks`" in stub
    page = api.hooks_page()
    assert all(f".. automethod:: HMM.{h}\n" in page for h in hooks)
    assert ".. automethod:: PROPS.validation_key" in page
