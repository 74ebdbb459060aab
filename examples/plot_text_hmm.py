"""
An HMM on real text
===================

placeholder
"""

import hiddenstate as hs

print(hs.__version__)
