"""HALO sites service."""
