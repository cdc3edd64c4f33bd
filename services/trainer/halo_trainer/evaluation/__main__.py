"""`python -m halo_trainer.evaluation`: the evaluation matrix (``matrix``)."""

import sys

from halo_trainer.evaluation.matrix import main

if __name__ == "__main__":
    sys.exit(main())
