"""local.zilloft-1: the search shows Denver, CO"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
report(final_search(data)["location"] == "Denver, CO" and progress(data, "search"))
