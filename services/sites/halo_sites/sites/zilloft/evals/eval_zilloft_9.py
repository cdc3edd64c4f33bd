"""local.zilloft-9: the answer is Maria Lopez (agent of den4, $1,300,000)"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
report(text(answer(data)) == "maria lopez")
