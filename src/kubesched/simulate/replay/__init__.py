"""`kubesched replay`: a scenario's timeline replayed in virtual time through the real scheduler."""
