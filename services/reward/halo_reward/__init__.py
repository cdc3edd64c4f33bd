"""HALO reward service."""
