"""`kubesched record`: a live cluster's node and pod changes written as a scenario timeline."""
