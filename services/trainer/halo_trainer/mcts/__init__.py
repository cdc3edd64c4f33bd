"""Agent-Q-style Monte Carlo tree search whose preferences train the policy by step-level DPO."""
