"""The core layer: plain data and rules, standard library only."""
