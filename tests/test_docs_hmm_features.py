"""The examples of docs/hmm-features.md run, in order, and print what the page says."""

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "hmm-features.md"


def test_hmm_features_examples_print_what_the_page_says():
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    namespace: dict = {}
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(DOC), "exec"), namespace)
        printed = out.getvalue()
        # every "print(...)  # value" line: the value appears in what the block printed
        for expected in re.findall(r"print\(.*\)\s+# (.+)", block):
            assert " ".join(expected.split()) in " ".join(printed.split()), (
                expected, printed)
