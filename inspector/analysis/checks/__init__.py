"""The audit: checks over a checkpoint read with the collecting sink, and the modeling code a repo ships."""
