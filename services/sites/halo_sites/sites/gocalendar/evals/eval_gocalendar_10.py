"""local.gocalendar-10: ev07 runs 2024-07-19 14:00-15:00 and keeps its guests plus Priya"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
e = updated(data).get("ev07") or {}
report(at(e, "2024-07-19T14:00", "2024-07-19T15:00")
       and {"priya.raman@acme.com", "jordan.kim@acme.com", "nadia.haddad@acme.com"} <= guests(e))
