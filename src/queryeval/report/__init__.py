"""Reports people read: Excel, console (and later HTML, comparisons)."""
