"""``python -m halo_trainer.doctor`` (what ``halo doctor`` runs): see ``halo_trainer.doctor.runner``."""

import sys

from halo_trainer.doctor.runner import main

sys.exit(main())
