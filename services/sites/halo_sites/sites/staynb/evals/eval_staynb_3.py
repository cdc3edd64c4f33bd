"""local.staynb-3: the answer is the nightly price of Kyoto's highest-rated stay, kyo4 ($106)"""

import sys

from _stay import digits, load, report

data = load(sys.argv[1])
report(digits(data.get("answer")) == "106")
