"""Query functions of the example deployments in configs/ (``python: darwin_examples.orders:...``)."""
