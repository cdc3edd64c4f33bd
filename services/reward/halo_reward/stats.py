"""Per-domain reward metrics, kept in Redis (shared by every worker) and mirrored to Prometheus.

Per domain: transitions scored, invalid actions, infra errors, duplicates, successes, how often each
milestone fired (total and per episode), the reward distribution (mean, std, histogram), and
``frac_reward_zero_std``: among the groups seen with at least two scored members, the fraction
whose rewards are all equal (a GRPO group with zero advantage teaches nothing).
"""

from __future__ import annotations

import math
from typing import Any

import redis.asyncio as aioredis
from prometheus_client import Counter, Gauge, Histogram

from halo.schemas import RewardBreakdown, RewardRequest

BUCKETS = (-2.0, -1.0, -0.5, 0.0, 0.1, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0)

TRANSITIONS = Counter("halo_reward_transitions_total", "reward/transitions scored", ["domain"])
MILESTONES = Counter("halo_reward_milestones_total", "reward/milestones fired", ["domain", "milestone"])
INFRA = Counter("halo_reward_infra_errors_total", "reward/transitions flagged as infra errors", ["domain"])
DUPLICATES = Counter("halo_reward_duplicates_total", "reward/duplicate transition ids answered", ["domain"])
TOTAL = Histogram("halo_reward_total", "reward/total per transition", ["domain"], buckets=BUCKETS)
ZERO_STD = Gauge("halo_reward_frac_reward_zero_std", "reward/frac_reward_zero_std over groups seen", ["domain"])

# Add one member to a group and keep the domain's seen / zero-std group counts in step with it.
# KEYS: group hash, domain stats hash. ARGV: transition id, total, ttl.
_GROUP = """
redis.call('HSET', KEYS[1], 'm:' .. ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
local fields = redis.call('HGETALL', KEYS[1])
local n, lo, hi, old = 0, nil, nil, nil
for i = 1, #fields, 2 do
  if fields[i] == 'status' then old = fields[i + 1]
  else
    local v = tonumber(fields[i + 1]); n = n + 1
    if lo == nil or v < lo then lo = v end
    if hi == nil or v > hi then hi = v end
  end
end
if n < 2 then return 0 end
local new = 'varied'
if hi - lo < 1e-9 then new = 'zero' end
if old == false or old == nil then redis.call('HINCRBY', KEYS[2], 'groups_seen', 1) end
if old ~= new then
  if new == 'zero' then redis.call('HINCRBY', KEYS[2], 'groups_zero_std', 1)
  elseif old == 'zero' then redis.call('HINCRBY', KEYS[2], 'groups_zero_std', -1) end
  redis.call('HSET', KEYS[1], 'status', new)
end
return 1
"""


def _bucket(total: float) -> str:
    for edge in BUCKETS:
        if total <= edge:
            return f"le:{edge:g}"
    return "le:+inf"


class RewardStats:
    def __init__(self, client: aioredis.Redis, prefix: str, ttl_s: int) -> None:
        self.client, self.prefix, self.ttl_s = client, prefix, ttl_s
        self._group = client.register_script(_GROUP)

    def _key(self, domain: str) -> str:
        return f"{self.prefix}stats:{domain}"

    async def record(self, req: RewardRequest, out: RewardBreakdown) -> None:
        domain, key = req.domain, self._key(req.domain)
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(f"{self.prefix}domains", domain)
        pipe.pfadd(f"{self.prefix}episodes:{domain}", f"{req.run_id}:{req.episode_id}")
        if out.infra_error:
            pipe.hincrby(key, "infra_errors", 1)
            INFRA.labels(domain).inc()
            await pipe.execute()
            return
        pipe.hincrby(key, "transitions", 1)
        pipe.hincrbyfloat(key, "sum", out.total)
        pipe.hincrbyfloat(key, "sum_sq", out.total * out.total)
        pipe.hincrby(key, _bucket(out.total), 1)
        if out.validity < 0:
            pipe.hincrby(key, "invalid", 1)
        if out.loop_penalty < 0:
            pipe.hincrby(key, "loops", 1)
        if out.success_bonus > 0:
            pipe.hincrby(key, "successes", 1)
        for m in out.milestones:
            pipe.hincrby(key, f"milestone:{m}", 1)
            MILESTONES.labels(domain, m).inc()
        await pipe.execute()
        TRANSITIONS.labels(domain).inc()
        TOTAL.labels(domain).observe(out.total)
        if req.group_id is not None:
            await self._group(
                keys=[f"{self.prefix}group:{req.group_id}", key], args=[req.transition_id, out.total, self.ttl_s]
            )
            seen, zero = await self.client.hmget(key, ["groups_seen", "groups_zero_std"])
            if seen and int(seen) > 0:
                ZERO_STD.labels(domain).set(int(zero or 0) / int(seen))

    async def duplicate(self, req: RewardRequest) -> None:
        await self.client.hincrby(self._key(req.domain), "duplicates", 1)
        DUPLICATES.labels(req.domain).inc()

    async def snapshot(self) -> dict[str, Any]:
        domains = sorted(
            d.decode() if isinstance(d, bytes) else d for d in await self.client.smembers(f"{self.prefix}domains")
        )
        out: dict[str, Any] = {}
        for domain in domains:
            raw = await self.client.hgetall(self._key(domain))
            h = {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in raw.items()}
            episodes = await self.client.pfcount(f"{self.prefix}episodes:{domain}")
            n = int(h.get("transitions", 0))
            mean = h.get("sum", 0.0) / n if n else 0.0
            var = max(0.0, h.get("sum_sq", 0.0) / n - mean * mean) if n else 0.0
            fired = {k.split(":", 1)[1]: int(v) for k, v in h.items() if k.startswith("milestone:")}
            seen = int(h.get("groups_seen", 0))
            out[domain] = {
                "transitions": n,
                "episodes": episodes,
                "infra_errors": int(h.get("infra_errors", 0)),
                "duplicates": int(h.get("duplicates", 0)),
                "invalid": int(h.get("invalid", 0)),
                "loops": int(h.get("loops", 0)),
                "successes": int(h.get("successes", 0)),
                "reward_mean": round(mean, 6),
                "reward_std": round(math.sqrt(var), 6),
                "reward_histogram": {k: int(v) for k, v in sorted(h.items()) if k.startswith("le:")},
                "milestones_fired": dict(sorted(fired.items())),
                "milestones_per_episode": {k: round(v / episodes, 6) for k, v in sorted(fired.items())}
                if episodes
                else {},
                "groups_seen": seen,
                "frac_reward_zero_std": round(int(h.get("groups_zero_std", 0)) / seen, 6) if seen else None,
            }
        return out
