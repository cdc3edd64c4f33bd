"""HALO env service."""
