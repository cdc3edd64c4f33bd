"""local.topwork-1: exactly Emily Chen (emilychen) is saved"""

import sys

from _topwork import load, report, saved_ids

report(saved_ids(load(sys.argv[1])) == {"emilychen"})
