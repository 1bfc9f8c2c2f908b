"""Config, run folder, checkpoints, logging, normalizers."""
