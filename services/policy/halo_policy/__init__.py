"""HALO policy service: how vLLM is launched (GPU and CPU), and the tiny Qwen3-VL builder."""
