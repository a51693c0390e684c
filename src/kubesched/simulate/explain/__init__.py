"""`kubesched explain`: why one pod is pending, or where it would go, from one scheduling cycle."""
