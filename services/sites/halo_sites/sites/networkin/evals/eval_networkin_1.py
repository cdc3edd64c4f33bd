"""local.networkin-1: exactly NVIDIA and OpenAI were newly followed"""

import sys

from _net import load, new_follows, report

report(new_follows(load(sys.argv[1])) == {"nvidia", "openai"})
