"""local.marrisuite-2: the answer is $149 (Fairfield Stays Goleta), any format of the amount"""

import sys

from _stays import amount, load, report

data = load(sys.argv[1])
report(amount(data.get("answer")) == 149)
