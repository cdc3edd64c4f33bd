"""local.networkin-2: the answer names Microsoft (any case, extra words allowed) and no other company"""

import sys

from _net import COMPANIES, load, report

answer = str(load(sys.argv[1]).get("answer") or "").lower()
report("microsoft" in answer and not any(c in answer for c in COMPANIES if c != "microsoft"))
