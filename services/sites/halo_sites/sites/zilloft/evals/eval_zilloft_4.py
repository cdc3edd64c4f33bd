"""local.zilloft-4: the search is Portland, OR with a maximum price of $600,000 and 3+ bedrooms"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
s = final_search(data)
report(s["location"] == "Portland, OR" and s["maxPrice"] == 600000 and not s["minPrice"] and s["beds"] == 3)
