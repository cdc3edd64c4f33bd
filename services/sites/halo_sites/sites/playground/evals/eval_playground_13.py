"""local.playground-13: the Press button was pressed three times in a row"""

import sys

from _pg import report, submission

s = submission(sys.argv[1])
report(s is not None and s.get("button") == "Press" and s.get("presses") == 3)
