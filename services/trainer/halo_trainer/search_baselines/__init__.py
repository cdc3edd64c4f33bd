"""Baselines a tree search is measured against at the same env-step budget."""
