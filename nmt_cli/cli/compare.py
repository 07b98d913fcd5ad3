"""Commands added here register themselves on the one `app` (see __init__.py)."""
