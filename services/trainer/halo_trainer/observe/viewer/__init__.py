"""The run viewer served at ``/ui``: runs, live curves, episodes as filmstrips, step groups."""
