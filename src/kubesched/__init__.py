"""kubesched: a Kubernetes scheduler framework in Python."""

__version__ = "0.1.0"
