"""local.networkin-3: post-3 is liked, and Sarah Chen's conversation gained a shared post-3 from
Div Garg"""

import sys

from _net import load, records, report, shared_posts

data = load(sys.argv[1])
liked = any(p.get("id") == "post-3" and p.get("liked") is True for p in records(data, "posts", "updated"))
chats = records(data, "chats", "updated") + records(data, "chats", "added")
sent = any(c.get("id") == "sarahchen" and "post-3" in shared_posts(c) for c in chats)
report(liked and sent)
