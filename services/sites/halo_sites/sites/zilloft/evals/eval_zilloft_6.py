"""local.zilloft-6: exactly the two Chicago townhouses chi7 and chi8 are saved"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
report(saved(data) == {"chi7", "chi8"})
