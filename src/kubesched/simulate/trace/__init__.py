"""`kubesched trace import`: published cluster traces turned into scenarios `simulate --scenario` replays."""
