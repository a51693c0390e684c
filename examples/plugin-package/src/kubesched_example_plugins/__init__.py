"""Example out-of-tree kubesched plugins (see README.md)."""
