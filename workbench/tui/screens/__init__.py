"""Screens over the main view: `settings.py` (model, base URL, key) and `sessions.py` (open a
saved session)."""
