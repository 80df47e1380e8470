"""Where bytes come from: the resolver and the byte sources."""
