"""What every algorithm's run loop is built from, composed rather than inherited.

``pipeline`` (jobs out, results in, exactly once, outages), ``publisher`` (versions of the policy
into vLLM: LoRA adapters, or full weights with them), ``durability`` (checkpoint, acknowledge,
restore), ``evaluation`` (greedy rounds on held-out seeds) and ``parts`` (the bundle a loop holds,
with the steps every loop takes around its update); ``loop`` is what the run manager needs of a loop
(``Loop``). ``halo_trainer.loops.LOOPS`` lists the loops, one per algorithm.
"""
