"""local.udriver-3: the July 9 ride to Oracle Park cost $16.60 (UdriverX, Ferry Building 7.40 + Oracle Park 9.20)"""

import sys

from _ride import dollars, load, report

data = load(sys.argv[1])
value = dollars(data.get("answer"))
report(value is not None and abs(value - 16.6) < 0.005)
