"""`kubesched capacity`: how many more of a pod or workload fit, where they go, and why the next does
not.
"""
