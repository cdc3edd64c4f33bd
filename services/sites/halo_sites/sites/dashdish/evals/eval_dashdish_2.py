"""local.dashdish-2: the answer is $34.34 (order DD-10003, the latest from Golden Wok)"""

import sys

from _dash import amount, answer, load, report

data = load(sys.argv[1])
report(amount(answer(data)) == 34.34)
