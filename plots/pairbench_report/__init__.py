"""pairbench's plot report: reads a run file (and optionally the history database) and writes
PNG/SVG figures plus one offline index.html. Never runs a binary."""
