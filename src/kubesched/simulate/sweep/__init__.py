"""`kubesched sweep`: a grid of simulations (configurations x scenarios x seeds, or a profile's
weights over ranges) run in parallel here or on a Ray cluster, gathered into one comparison."""
