"""Rollout workers: jobs from the Redis stream played against the env, reward and policy services."""
