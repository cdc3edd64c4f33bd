"""local.opendining-3: the confirmation number of the Olive & Vine reservation (OD-52963), as said."""

import re
import sys

from _dining import answer, load, report

said = answer(load(sys.argv[1])).upper()
report(bool(re.search(r"(?<![\dA-Z])(OD-?)?52963(?!\d)", said)) and "40718" not in said)
