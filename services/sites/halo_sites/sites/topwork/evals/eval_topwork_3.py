"""local.topwork-3: the answer is Backend Developer for Social Media Platform"""

import sys

from _topwork import load, norm, report

answer = norm(load(sys.argv[1]).get("answer"))
report(answer.endswith("backend developer for social media platform") and "meal" not in answer)
