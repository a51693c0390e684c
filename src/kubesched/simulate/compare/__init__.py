"""`kubesched compare`: the same input under several configurations, side by side."""
