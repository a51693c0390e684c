"""`kubesched simulate`: one snapshot of a cluster scheduled in virtual time, with its report (model,
run, table, html).
"""
