"""The portability tests and the pytest plugin that runs them."""
