"""Intrinsic rewards: pixel, rnd, icm, episodic (see base.py for the interface)."""
