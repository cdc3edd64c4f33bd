"""HALO trainer service."""
