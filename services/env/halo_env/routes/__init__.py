"""The env service's REST routes, one router per resource; ``halo_env.app`` includes them."""
