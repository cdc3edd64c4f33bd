"""HALO policy service: how vLLM is launched (GPU and CPU); the model side is ``halo_model``."""
