"""What a run records and shows: metrics, episode records, trackers, plots and the run viewer."""
